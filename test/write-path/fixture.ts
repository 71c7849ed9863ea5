/**
 * What the write-path tests share: a remote seeded with the sample catalog and served over smart
 * HTTP, OSB requests carrying a request identity, and the remote's history read back with the
 * trailers the broker writes (Operation, Instance-Id, Request-Identity ...).
 */
import { randomUUID } from "node:crypto";
import { mkdir, rm } from "node:fs/promises";
import path from "node:path";
import { parse } from "yaml";
import { prefillRemote } from "../../bench/prefill.js";
import { catFileBatch, createTempDir, git, gitLog } from "../support/git-fixtures.js";
import { startGitHttpServer, type GitHttpServer } from "../support/git-http-server.js";
import type { OsbClient, OsbReply } from "../support/osb-client.js";

export interface Remote {
  root: string;
  /** The bare repository. */
  dir: string;
  url: string;
  server: GitHttpServer;
  close(): Promise<void>;
}

/** A bare remote with the sample catalog and cluster `local`, served over smart HTTP. */
export async function startRemote(prefix: string): Promise<Remote> {
  const root = await createTempDir(prefix);
  const remotes = path.join(root, "remotes");
  await mkdir(remotes);
  const { remoteDir } = await prefillRemote(remotes, 0);
  const server = await startGitHttpServer({ root: remotes });
  return {
    root,
    dir: remoteDir,
    url: server.url(path.basename(remoteDir)),
    server,
    async close() {
      await server.close();
      await rm(root, { recursive: true, force: true });
    },
  };
}

export interface SamplePlans {
  serviceId: string;
  small: string;
  medium: string;
}

export async function samplePlans(osb: OsbClient): Promise<SamplePlans> {
  const { body } = await osb.catalog();
  const service = (body.services as { id: string; name: string; plans: { id: string; name: string }[] }[]).find((s) => s.name === "postgresql");
  const plan = (name: string) => service?.plans.find((p) => p.name === name)?.id;
  const [small, medium] = [plan("small"), plan("medium")];
  if (!service || !small || !medium) throw new Error("the sample catalog has no postgresql with plans small and medium");
  return { serviceId: service.id, small, medium };
}

/** An OSB request and its answer; `identity` is its X-Broker-API-Request-Identity. */
export interface Sent {
  kind: "provision" | "update" | "deprovision" | "bind";
  instanceId: string;
  bindingId?: string;
  identity: string;
  /** The answer, or undefined when there was none (connection lost, broker killed). */
  reply?: OsbReply;
}

/** Every request is sent with `accepts_incomplete=true` and a fresh request identity. */
export async function send(osb: OsbClient, sent: Omit<Sent, "identity" | "reply">, body: Record<string, unknown>, plans: SamplePlans): Promise<Sent> {
  const record: Sent = { ...sent, identity: randomUUID() };
  const options = { headers: { "x-broker-api-request-identity": record.identity }, query: { accepts_incomplete: "true" } };
  try {
    switch (sent.kind) {
      case "provision":
        record.reply = await osb.provision(sent.instanceId, body, options);
        break;
      case "update":
        record.reply = await osb.update(sent.instanceId, body, options);
        break;
      case "deprovision":
        record.reply = await osb.deprovision(sent.instanceId, { service_id: plans.serviceId, plan_id: String(body.plan_id) }, options);
        break;
      case "bind":
        record.reply = await osb.bind(sent.instanceId, sent.bindingId!, body, options);
        break;
    }
  } catch {
    // No answer: the broker went away with the request in flight. The caller decides what that means.
  }
  return record;
}

/**
 * Load on a broker until it is killed: `clients` closed-loop clients provisioning (the n-th
 * request of client c is `provision(c, n)`), until `until` resolves (it sees whether a request
 * was acknowledged yet, and how many were), then kill -9. The clients stop first, so no request is sent after the
 * kill (a refusal no crash window explains). Every request sent, answered or not.
 */
export async function loadAndKill(
  broker: { osb: OsbClient; kill(): Promise<void> },
  plans: SamplePlans,
  options: {
    clients: number;
    provision: (client: number, n: number) => { instanceId: string; body: Record<string, unknown> };
    until: (progress: { acked: boolean; acks: number }) => Promise<void>;
  },
): Promise<Sent[]> {
  const sent: Sent[] = [];
  const progress = { acked: false, acks: 0 };
  let killed = false;
  const client = async (c: number): Promise<void> => {
    for (let n = 0; !killed; n++) {
      const { instanceId, body } = options.provision(c, n);
      const result = await send(broker.osb, { kind: "provision", instanceId }, body, plans);
      sent.push(result);
      if (result.reply && result.reply.status < 300) {
        progress.acked = true;
        progress.acks++;
      }
    }
  };
  const clients = Array.from({ length: options.clients }, (_, c) => client(c));
  try {
    await options.until(progress);
  } finally {
    // Also when the wait failed: the clients stop, the broker goes.
    killed = true;
    await broker.kill();
    await Promise.all(clients);
  }
  return sent;
}

/** Whether an acknowledged answer means the request changed the repository (one commit). */
export function committed(sent: Sent): boolean {
  const status = sent.reply?.status ?? 0;
  switch (sent.kind) {
    case "provision":
    case "bind":
      // 200: the same instance or binding existed already, nothing to change.
      return status === 201 || status === 202;
    case "update":
    case "deprovision":
      // Every update here changes the context, so a 200 is a change too.
      return status === 200 || status === 202;
  }
}

export interface Commit {
  oid: string;
  parents: string[];
  subject: string;
  trailers: Record<string, string>;
}

/** The remote's `main`, newest first, with the trailers of each commit. */
export async function history(remoteDir: string): Promise<Commit[]> {
  return (await gitLog(remoteDir)).map((c) => ({
    oid: c.oid,
    parents: c.parents,
    subject: c.subject,
    trailers: Object.fromEntries(
      c.message
        .split("\n")
        .map((line) => /^([A-Za-z][A-Za-z0-9-]*): (.*)$/.exec(line))
        .filter((m): m is RegExpExecArray => m !== null)
        .map((m) => [m[1]!, m[2]!]),
    ),
  }));
}

/** How many times each value occurs. */
export function counts(values: string[]): Map<string, number> {
  const result = new Map<string, number>();
  for (const v of values) result.set(v, (result.get(v) ?? 0) + 1);
  return result;
}

/** `git rev-list --merges --count main`. */
export async function mergeCount(remoteDir: string): Promise<number> {
  return Number((await git(["rev-list", "--merges", "--count", "main"], remoteDir)).trim());
}

export interface RecordSummary {
  spec: { instanceId: string };
  status: { deleted?: boolean; operations: { id: string; action: string; requestIdentity?: string }[] };
}

/** Every instance record on the remote's `main`, by instance id (one `git ls-tree`, one `git cat-file --batch`). */
export async function instanceRecords(remoteDir: string): Promise<Map<string, RecordSummary>> {
  const records = new Map<string, RecordSummary>();
  for (const [name, text] of await filesBelow(remoteDir, ["instances"])) {
    if (!name.endsWith("/instance.yaml")) continue;
    const record = parse(text) as RecordSummary;
    records.set(record.spec.instanceId, record);
  }
  return records;
}

/** The files below `dirs` on the remote's `main` and their text, by path (one `git ls-tree`, one `git cat-file --batch`). */
export async function filesBelow(remoteDir: string, dirs: string[]): Promise<Map<string, string>> {
  const listing = await git(["ls-tree", "-r", "main", "--", ...dirs], remoteDir);
  // "<mode> blob <oid>\t<path>"
  const entries = listing
    .split("\n")
    .filter((line) => line !== "")
    .map((line) => {
      const tab = line.indexOf("\t");
      return { oid: line.slice(0, tab).split(" ")[2]!, path: line.slice(tab + 1) };
    });
  const objects = await catFileBatch(remoteDir, entries.map((e) => e.oid));
  return new Map(entries.map((entry, i) => [entry.path, objects[i]!.data.toString("utf8")]));
}
