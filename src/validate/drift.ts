import { Buffer } from "node:buffer";
import { createTwoFilesPatch } from "diff";
import { parseAllDocuments } from "yaml";
import { renderInstanceInto, sensitiveFiles } from "../materialize/index.js";
import { autoUpdatesInstances, type Catalog, type ClusterEntry } from "../catalog/index.js";
import type { TreeReader } from "../gitwriter/index.js";
import { CLUSTERS_DIR, instanceManifestDir, instanceRecordPath, keyOf, readLiveBindings, type InstanceRecord } from "../repo/index.js";
import { isEncryptedValue } from "../sops/index.js";
import { overlayDraft } from "./overlay-draft.js";
import { error, warning, type ValidationProblem } from "./problems.js";
import { listFiles } from "./records.js";

/**
 * Manual edits under `clusters/`: every live instance is rendered again from its records with the
 * broker's own code (templates, then overrides) into a draft in memory whose `clusters/` starts
 * empty; what differs from the checkout is drift. The overrides' own problems (target not
 * rendered, Secret data ...) come out of the same renders. The SOPS-encrypted Secrets of
 * sensitive parameters cannot be rendered again: those the records name are expected to exist,
 * their content is not compared (secretProblems checks that it is encrypted).
 */

const NAMESPACE_FILE = /^clusters\/[^/]+\/namespace\.yaml$/;

/** What is in the checkout (a/) against what the broker renders (b/), as a unified diff. */
function unifiedDiff(path: string, actual: string, expected: string): string {
  return createTwoFilesPatch(`a/${path}`, `b/${path}`, actual, expected, "in the checkout", "as the broker renders it", { context: 2 })
    .split("\n")
    .filter((line) => !line.startsWith("====="))
    .join("\n")
    .trimEnd();
}

/** `clusters/<id>/instances/<ab>/<cd>/<key>` of a path below it, else undefined. */
function instanceDirOf(path: string): string | undefined {
  const parts = path.split("/");
  return parts.length > 6 && parts[2] === "instances" ? parts.slice(0, 6).join("/") : undefined;
}

export async function driftProblems(
  tree: TreeReader,
  view: { catalog: Catalog; clusters: readonly ClusterEntry[] },
  live: InstanceRecord[],
  /** Keys of instances whose records are broken (reported elsewhere): their files are not judged. */
  brokenKeys: ReadonlySet<string>,
): Promise<ValidationProblem[]> {
  const problems: ValidationProblem[] = [];
  const draft = overlayDraft(tree);
  draft.remove(CLUSTERS_DIR);
  const owners = new Map<string, InstanceRecord>();
  /** Directories of instances that cannot be rendered: other checks say why; their files are not judged. */
  const unknown = new Set<string>();
  const clusterIds = new Set(view.clusters.map((c) => c.id));
  const sealed = new Set<string>();
  for (const record of live) {
    const { instanceId, clusterId, planId } = record.spec;
    const dir = instanceManifestDir(clusterId, instanceId);
    owners.set(dir, record);
    if (!clusterIds.has(clusterId) || !view.catalog.planById(planId)) {
      unknown.add(dir); // reported by the offboarding check
      continue;
    }
    for (const file of sensitiveFiles(record, await readLiveBindings(tree, instanceId))) sealed.add(file);
    try {
      const rendered = await renderInstanceInto(draft, view, instanceId);
      problems.push(...rendered.problems.map(error));
    } catch (e) {
      unknown.add(dir);
      const reason = e instanceof Error ? e.message : String(e);
      problems.push(error({ file: instanceRecordPath(instanceId), path: "", message: `instance ${instanceId} cannot be rendered: ${reason}` }));
    }
  }

  const judged = (path: string) => {
    const dir = instanceDirOf(path);
    return !NAMESPACE_FILE.test(path) && !(dir && (unknown.has(dir) || brokenKeys.has(dir.slice(dir.lastIndexOf("/") + 1))));
  };
  const expected = new Set([...(await listFiles(draft, CLUSTERS_DIR)), ...sealed].filter(judged));
  const actual = new Set((await listFiles(tree, CLUSTERS_DIR)).filter(judged));
  for (const path of [...new Set([...expected, ...actual])].sort()) {
    const record = owners.get(instanceDirOf(path) ?? "");
    const of = record ? `instance ${record.spec.instanceId}` : "any live instance";
    let message: string | undefined;
    if (!actual.has(path) && sealed.has(path)) message = `drift: missing, the record of ${of} names this encrypted Secret of its sensitive parameters`;
    else if (!actual.has(path)) message = `drift: missing, the broker renders it for ${of}`;
    else if (!expected.has(path)) message = `drift: not rendered by the broker for ${of}`;
    else if (sealed.has(path)) continue;
    else {
      const [rendered, found] = [Buffer.from((await draft.readFile(path))!), Buffer.from((await tree.readFile(path))!)];
      if (rendered.equals(found)) continue;
      const detail = unifiedDiff(path, found.toString("utf8"), rendered.toString("utf8"));
      const plan = record ? view.catalog.planById(record.spec.planId) : undefined;
      if (record && plan && autoUpdatesInstances(plan)) {
        // A plan change in this pull request: the broker re-renders the instance after the merge.
        problems.push(warning({
          file: path,
          path: "",
          message: `will be re-rendered: plan ${plan.name} has autoUpdateInstances, so after the merge the broker re-renders ${of} to this (a hand edit here would be overwritten too)`,
          detail,
        }));
        continue;
      }
      message = `drift: differs from what the broker renders for ${of}; change it through the platform or overrides/${keyOf(record!.spec.instanceId)}/` +
        (plan ? ` (after a change of plan ${plan.name}, which has no autoUpdateInstances: gitops-broker update --plan ${plan.id})` : "");
      problems.push(error({ file: path, path: "", message, detail }));
      continue;
    }
    if (message) problems.push(error({ file: path, path: "", message }));
  }
  return problems;
}

function hasContent(value: unknown): boolean {
  if (value === undefined || value === null) return false;
  return typeof value === "object" && !Array.isArray(value) ? Object.keys(value).length > 0 : true;
}

/** A Secret with SOPS metadata (a `sops` mapping with a `mac`): its data is meant to be encrypted. */
function sopsEncrypted(object: Record<string, unknown>): boolean {
  const sops = object.sops;
  return typeof sops === "object" && sops !== null && typeof (sops as Record<string, unknown>).mac === "string";
}

/**
 * No plaintext Secret data anywhere under `clusters/`, whoever wrote it. A SOPS-encrypted Secret
 * passes when every data / stringData value is encrypted (or empty, which sops leaves as is).
 */
export async function secretProblems(tree: TreeReader): Promise<ValidationProblem[]> {
  const problems: ValidationProblem[] = [];
  for (const file of await listFiles(tree, CLUSTERS_DIR)) {
    const docs = parseAllDocuments((await tree.readText(file)) ?? "", { logLevel: "error" });
    const several = docs.length > 1;
    for (const [i, doc] of docs.entries()) {
      const at = several ? `documents[${i}].` : "";
      if (doc.errors.length > 0) {
        problems.push(error({ file, path: at.slice(0, -1), message: `is not valid YAML: ${doc.errors[0]!.message.split("\n", 1)[0]}` }));
        continue;
      }
      let object: { apiVersion?: unknown; kind?: unknown; metadata?: { name?: unknown } } | null;
      try {
        object = doc.toJS() as typeof object;
      } catch (e) {
        problems.push(error({ file, path: at.slice(0, -1), message: `cannot be read: ${e instanceof Error ? e.message : String(e)}` }));
        continue;
      }
      if (object?.apiVersion !== "v1" || object.kind !== "Secret") continue;
      const name = String(object.metadata?.name);
      for (const field of ["data", "stringData"]) {
        const content = (object as Record<string, unknown>)[field];
        if (!hasContent(content)) continue;
        if (sopsEncrypted(object)) {
          const values: [string, unknown][] = typeof content === "object" ? Object.entries(content as object) : [["", content]];
          for (const [key, value] of values) {
            if (value === "" || isEncryptedValue(value)) continue;
            problems.push(error({
              file,
              path: `${at}${field}${key ? `.${key}` : ""}`,
              message: `Secret ${name} has SOPS metadata but a plaintext value: encrypt it with sops (credentials must never be in Git in plaintext)`,
            }));
          }
          continue;
        }
        problems.push(error({
          file,
          path: `${at}${field}`,
          message: `Secret ${name} holds plaintext ${field}: credentials must never be in Git (let the operator or a secret store create them)`,
        }));
      }
    }
  }
  return problems;
}
