import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { parse, stringify } from "yaml";
import { instanceManifestDir } from "../../src/repo/index.js";
import { readRemoteFile } from "../support/git-fixtures.js";
import { repoFiles, type ClusterSpec } from "../support/repo-files.js";

const run = promisify(execFile);

export const SMALL = "catalog/postgresql/plans/small.yaml";
export const MEDIUM = "catalog/postgresql/plans/medium.yaml";

type Doc = Record<string, any>;

/** The sample repository (by default one cluster, `local`) with the plans edited by `edit` (parsed YAML). */
export async function filesWith(
  edit: (plans: { small: Doc; medium: Doc }) => void,
  clusters: ClusterSpec[] = [{ id: "local" }],
): Promise<Record<string, string>> {
  const files = await repoFiles(clusters);
  const small = parse(files[SMALL]!) as Doc;
  const medium = parse(files[MEDIUM]!) as Doc;
  edit({ small, medium });
  return { ...files, [SMALL]: stringify(small), [MEDIUM]: stringify(medium) };
}

/**
 * Plan `small` with sensitive parameters: `instanceProperties` added to its instance schema (create
 * and update alike), and a binding schema with a writeOnly `token` and a plain `note`.
 */
export function withSensitiveSchemas(small: Doc, instanceProperties: Record<string, unknown>): void {
  const create = small.spec.schemas.service_instance.create.parameters;
  Object.assign(create.properties, instanceProperties);
  small.spec.schemas.service_instance.update.parameters = create;
  small.spec.schemas.service_binding = {
    create: {
      parameters: {
        $schema: "http://json-schema.org/draft-07/schema#",
        type: "object",
        properties: { token: { type: "string", writeOnly: true }, note: { type: "string" } },
      },
    },
  };
}

/** A plan document of the remote's tip, edited, as YAML for pushExternalCommit. */
export async function editedPlan(remoteDir: string, file: string, edit: (plan: Doc) => void): Promise<string> {
  const plan = parse((await readRemoteFile(remoteDir, "main", file)) ?? "") as Doc;
  edit(plan);
  return stringify(plan);
}

/** The provision template's text of a plan document (inline content). */
export function provisionTemplate(plan: Doc): { content: string } {
  const t = (plan.spec.templates as { action: string; content: string }[]).find((x) => x.action === "provision");
  if (!t) throw new Error("plan has no inline provision template");
  return t;
}

export interface Commit {
  sha: string;
  subject: string;
  trailers: Record<string, string>;
}

/** Commits of `range` (e.g. `abc..main`), oldest first, with their trailers. */
export async function commitsIn(remoteDir: string, range: string): Promise<Commit[]> {
  const { stdout } = await run("git", ["log", "--reverse", "--format=%H%x1f%s%x1f%(trailers:only,unfold)%x1e", range], { cwd: remoteDir });
  return stdout
    .split("\x1e")
    .map((r) => r.trim())
    .filter(Boolean)
    .map((r) => {
      const [sha = "", subject = "", trailerText = ""] = r.split("\x1f");
      const trailers: Record<string, string> = {};
      for (const line of trailerText.split("\n")) {
        const m = /^([\w-]+): (.*)$/.exec(line.trim());
        if (m) trailers[m[1]!] = m[2]!;
      }
      return { sha, subject, trailers };
    });
}

export async function countCommits(remoteDir: string, grep: string): Promise<number> {
  const { stdout } = await run("git", ["rev-list", "--count", `--grep=${grep}`, "main"], { cwd: remoteDir });
  return Number(stdout.trim());
}

/** The rendered Zalando `postgresql` of an instance on cluster `local`. */
export async function postgresql(remoteDir: string, instanceId: string): Promise<Doc> {
  const text = await readRemoteFile(remoteDir, "main", `${instanceManifestDir("local", instanceId)}/postgresql-pg-${instanceId}.yaml`);
  if (text === null) throw new Error(`no postgresql manifest for ${instanceId}`);
  return parse(text) as Doc;
}
