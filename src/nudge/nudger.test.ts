import { mkdir, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { createBareRemote, createTempDir, git, pushExternalCommit } from "../../test/support/git-fixtures.js";
import { startSisterCluster, type SisterCluster } from "../../test/support/sister-cluster.js";
import type { ClusterEntry, NudgeDecl } from "../catalog/index.js";
import type { PushEvent } from "../gitwriter/index.js";
import { silentLogger } from "../log/index.js";
import { createInstruments, type Labels } from "../metrics/index.js";
import { createKubeConfigResolver, createSecretKeyReader } from "../kube/index.js";
import { commitsByCluster, createNudger, repositoryNames, type Nudger, type NudgeTimers } from "./index.js";

const eventually = <T>(assertion: () => T | Promise<T>): Promise<T> => vi.waitFor(assertion, { timeout: 20_000, interval: 20 });

/** A clock the test moves: timers fire only in `advance`. */
function manualTimers(): NudgeTimers & { advance(ms: number): void; pending(): number } {
  let now = 0;
  let timers: { at: number; fn: () => void }[] = [];
  return {
    now: () => now,
    after(ms, fn) {
      const timer = { at: now + ms, fn };
      timers.push(timer);
      return () => (timers = timers.filter((t) => t !== timer));
    },
    advance(ms) {
      now += ms;
      const due = timers.filter((t) => t.at <= now);
      timers = timers.filter((t) => t.at > now);
      for (const t of due) t.fn();
    },
    pending: () => timers.length,
  };
}

/** The agent's poll never comes in these tests: only a nudge makes it look at Git. */
const neverPolls = (_ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => signal.addEventListener("abort", () => resolve(), { once: true }));

let root: string;
let remoteDir: string;
const clusters: SisterCluster[] = [];
const nudgers: Nudger[] = [];

beforeAll(async () => {
  root = await createTempDir("nudger-test-");
  await mkdir(path.join(root, "remotes"));
  remoteDir = await createBareRemote(path.join(root, "remotes"), "remote.git", { "README.md": "seed\n" });
});
afterEach(async () => {
  await Promise.all(nudgers.splice(0).map((n) => n.close()));
  await Promise.all(clusters.splice(0).map((c) => c.close()));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

async function tip(): Promise<string> {
  return (await git(["rev-parse", "refs/heads/main"], remoteDir)).trim();
}

function entry(id: string, kind: "argocd" | "flux", nudge: NudgeDecl, kubeconfigPath?: string): ClusterEntry {
  return {
    id,
    namespace: "gitops-broker-instances",
    schedulable: true,
    labels: {},
    file: `registry/clusters/${id}.yaml`,
    raw: {},
    ...(kubeconfigPath ? { kubeconfig: { path: kubeconfigPath } } : {}),
    sync: { kind, name: id, namespace: kind === "argocd" ? "argocd" : "flux-system", nudge },
  };
}

/** The nudge counter of a recording Metrics factory: the labels of each increment. */
function recordingNudges() {
  const counted: Labels[] = [];
  const record = { inc: (labels?: Labels) => void counted.push(labels ?? {}), set: () => undefined, observe: () => undefined, reset: () => undefined };
  const { nudge } = createInstruments({ counter: () => record, gauge: () => record, histogram: () => record, onCollect: () => undefined });
  return { nudge, counted };
}

function nudger(entries: ClusterEntry[], timers?: NudgeTimers, metrics?: ReturnType<typeof recordingNudges>["nudge"], remoteUrl = `https://token:s3cret@git.example.com/org/gitops.git`) {
  const n = createNudger({
    clusters: () => entries,
    kubeConfigFor: createKubeConfigResolver({ home: () => { throw new Error("no home cluster in this test"); } }),
    readSecret: createSecretKeyReader({ home: () => { throw new Error("no home cluster in this test"); } }),
    remoteUrl,
    userAgent: "gitops-broker/test",
    logger: silentLogger(),
    ...(timers ? { timers } : {}),
    ...(metrics ? { metrics } : {}),
  });
  nudgers.push(n);
  return n;
}

const push = (previous: string | null, tipSha: string, commits: [string, string[]][]): PushEvent => ({
  branch: "main",
  previous,
  tip: tipSha,
  commits: commits.map(([commit, paths]) => ({ commit, paths })),
});

describe("commitsByCluster", () => {
  it("groups each commit's paths under clusters/<id>/ by cluster, and ignores the rest", () => {
    const grouped = commitsByCluster([
      { commit: "c1", paths: ["clusters/a/instances/x/pg.yaml", "records/instances/x.yaml", "clusters/b/namespace.yaml"] },
      { commit: "c2", paths: ["catalog/services/pg.yaml"] },
      { commit: "c3", paths: ["clusters/a", "clusters-old/a/x.yaml"] },
    ]);
    expect([...grouped]).toEqual([
      ["a", [{ commit: "c1", paths: ["clusters/a/instances/x/pg.yaml"] }, { commit: "c3", paths: ["clusters/a"] }]],
      ["b", [{ commit: "c1", paths: ["clusters/b/namespace.yaml"] }]],
    ]);
  });
});

describe("repositoryNames", () => {
  it("names a remote as a Git host's push event does, without the credentials of the URL", () => {
    expect(repositoryNames("https://x-access-token:ghp_secret@github.com/org/gitops.git")).toEqual({
      htmlUrl: "https://github.com/org/gitops",
      cloneUrl: "https://github.com/org/gitops.git",
      fullName: "org/gitops",
      name: "gitops",
    });
    expect(repositoryNames("git@github.com:org/gitops.git").htmlUrl).toBe("https://github.com/org/gitops");
    expect(repositoryNames("ssh://git@gitlab.example.com:2222/group/sub/gitops.git").htmlUrl).toBe("https://gitlab.example.com/group/sub/gitops");
    expect(repositoryNames("http://127.0.0.1:8123/remote.git").htmlUrl).toBe("http://127.0.0.1:8123/remote");
    expect(repositoryNames("/srv/git/gitops.git")).toMatchObject({ htmlUrl: "/srv/git/gitops.git", name: "gitops" });
  });
});

describe("nudger", () => {
  it("Argo CD webhook: one signed GitHub push event per push, however many commits; the Application is refreshed, not polled", async () => {
    const repoURL = "https://git.example.com/org/gitops.git";
    const argo = await startSisterCluster({ id: "east", sync: "argocd", remoteDir, dir: root, agent: { delay: neverPolls, repoURL, webhookSecret: "hook-secret" } });
    clusters.push(argo);
    const secretFile = path.join(root, "argo-secret");
    await writeFile(secretFile, "hook-secret\n", { mode: 0o600 });
    argo.agent.start(180_000);
    const url = await argo.agent.listen();
    await eventually(() => expect(argo.agent.triggers).toEqual(["poll"]));

    const n = nudger([entry("east", "argocd", { via: "webhook", url, payload: "github", secret: { path: secretFile }, minIntervalMs: 0 })]);
    const head = await tip();
    n.pushed(push("0".repeat(40), head, Array.from({ length: 90 }, (_, i) => [`c${i}`, [`clusters/east/instances/${i}/pg.yaml`]])));
    await n.idle();
    expect(argo.agent.webhookRequests).toEqual([{ path: "/api/webhook", status: 200 }]);
    expect(n.stats()).toEqual({ east: { sent: 1, failed: 0, folded: 0 } });
    await eventually(() => expect(argo.agent.triggers).toEqual(["poll", "refresh"]));
    // The controller removed the refresh annotation once it refreshed.
    await eventually(() => expect(argo.server.store.get({ apiVersion: "argoproj.io/v1alpha1", kind: "Application", namespace: "argocd", name: "east" })?.metadata.annotations?.["argocd.argoproj.io/refresh"]).toBeUndefined());
  });

  it("Argo CD webhook with a wrong secret, or an unreachable URL: logged and counted, nothing thrown", async () => {
    const argo = await startSisterCluster({ id: "east", sync: "argocd", remoteDir, dir: root, agent: { delay: neverPolls, webhookSecret: "the-real-one" } });
    clusters.push(argo);
    argo.agent.start(180_000);
    const url = await argo.agent.listen();
    const secretFile = path.join(root, "wrong-secret");
    await writeFile(secretFile, "not-the-secret");
    const n = nudger([
      entry("east", "argocd", { via: "webhook", url, payload: "github", secret: { path: secretFile }, minIntervalMs: 0 }),
      entry("gone", "argocd", { via: "webhook", url: "http://127.0.0.1:9/api/webhook", payload: "github", minIntervalMs: 0 }),
      entry("nosecret", "flux", { via: "webhook", url, payload: "generic-hmac", secret: { path: path.join(root, "absent") }, minIntervalMs: 0 }),
    ]);
    n.pushed(push(null, await tip(), [["c1", ["clusters/east/a.yaml", "clusters/gone/a.yaml", "clusters/nosecret/a.yaml"]]]));
    await n.idle();
    expect(n.stats()).toEqual({
      east: { sent: 0, failed: 1, folded: 0 },
      gone: { sent: 0, failed: 1, folded: 0 },
      nosecret: { sent: 0, failed: 1, folded: 0 },
    });
    expect(argo.agent.webhookRequests).toEqual([{ path: "/api/webhook", status: 400, reason: "HMAC verification failed" }]);
    expect(argo.agent.triggers).toEqual(["poll"]);
  });

  it("Flux annotation: requestedAt on the GitRepository only; the source fetches and its new artifact is applied, the Kustomization not asked to reconcile the old one first", async () => {
    const flux = await startSisterCluster({ id: "west", sync: "flux", remoteDir, dir: root, agent: { delay: neverPolls } });
    clusters.push(flux);
    flux.agent.start(180_000);
    const before = await eventually(() => flux.agent.applied ?? Promise.reject(new Error("not applied yet")));
    const head = await pushToRemote("clusters/west/cm.yaml", configMap("nudged"));
    expect(head).not.toBe(before);

    const n = nudger([entry("west", "flux", { via: "annotation", minIntervalMs: 0 }, flux.kubeconfigPath)]);
    n.pushed(push(before, head, [[head, ["clusters/west/cm.yaml"]]]));
    await n.idle();
    expect(n.stats().west).toEqual({ sent: 1, failed: 0, folded: 0 });
    await eventually(() => expect(flux.agent.applied).toBe(head));
    expect(flux.agent.triggers[1]).toBe("source-requested");
    const source = flux.server.store.get({ apiVersion: "source.toolkit.fluxcd.io/v1", kind: "GitRepository", namespace: "flux-system", name: "gitops" })!;
    const ks = flux.server.store.get({ apiVersion: "kustomize.toolkit.fluxcd.io/v1", kind: "Kustomization", namespace: "flux-system", name: "west" })!;
    const requestedAt = source.metadata.annotations?.["reconcile.fluxcd.io/requestedAt"];
    expect(Date.parse(requestedAt!)).not.toBeNaN();
    expect(ks.metadata.annotations?.["reconcile.fluxcd.io/requestedAt"]).toBeUndefined();
    expect(flux.agent.triggers).not.toContain("kustomization-requested");
    expect(ks.metadata.generation).toBe(1);
  });

  it("Flux annotation through an ArtifactGenerator (Flux 2.7): the Git source the Kustomization's ExternalArtifact is cut from is annotated", async () => {
    const flux = await startSisterCluster({ id: "west", sync: "flux", remoteDir, dir: root, agent: { delay: neverPolls } });
    clusters.push(flux);
    const { server } = flux;
    server.registerResource({ group: "source.toolkit.fluxcd.io", version: "v1", kind: "ExternalArtifact", plural: "externalartifacts", namespaced: true });
    server.registerResource({ group: "source.extensions.fluxcd.io", version: "v1beta1", kind: "ArtifactGenerator", plural: "artifactgenerators", namespaced: true });
    const meta = (name: string) => ({ name, namespace: "flux-system" });
    server.store.upsert({
      apiVersion: "source.extensions.fluxcd.io/v1beta1",
      kind: "ArtifactGenerator",
      metadata: meta("gitops"),
      spec: { sources: [{ alias: "control", kind: "GitRepository", name: "gitops" }], artifacts: [{ name: "gitops-west", originRevision: "@control", copy: [{ from: "@control/clusters/west/**", to: "@artifact/" }] }] },
    });
    server.store.upsert({
      apiVersion: "source.toolkit.fluxcd.io/v1",
      kind: "ExternalArtifact",
      metadata: meta("gitops-west"),
      spec: { sourceRef: { apiVersion: "source.extensions.fluxcd.io/v1beta1", kind: "ArtifactGenerator", name: "gitops" } },
    });
    const ksRef = { apiVersion: "kustomize.toolkit.fluxcd.io/v1", kind: "Kustomization", namespace: "flux-system", name: "west" };
    const ks = server.store.get(ksRef)!;
    server.store.upsert({ ...ks, spec: { ...(ks.spec as object), sourceRef: { kind: "ExternalArtifact", name: "gitops-west" } } });

    const n = nudger([entry("west", "flux", { via: "annotation", minIntervalMs: 0 }, flux.kubeconfigPath)]);
    n.pushed(push(null, await tip(), [["c1", ["clusters/west/a.yaml"]]]));
    await n.idle();
    expect(n.stats().west).toEqual({ sent: 1, failed: 0, folded: 0 });
    const annotation = (ref: { apiVersion: string; kind: string; name: string }) =>
      server.store.get({ ...ref, namespace: "flux-system" })?.metadata.annotations?.["reconcile.fluxcd.io/requestedAt"];
    const requestedAt = annotation({ apiVersion: "source.toolkit.fluxcd.io/v1", kind: "GitRepository", name: "gitops" });
    expect(Date.parse(requestedAt!)).not.toBeNaN();
    // The generator's new artifact triggers the Kustomization.
    expect(annotation(ksRef)).toBeUndefined();
    // The artifact itself fetches nothing: not annotated.
    expect(annotation({ apiVersion: "source.toolkit.fluxcd.io/v1", kind: "ExternalArtifact", name: "gitops-west" })).toBeUndefined();
  });

  it("Flux annotation of a Kustomization that names no source: the Kustomization itself", async () => {
    const flux = await startSisterCluster({ id: "west", sync: "flux", remoteDir, dir: root, agent: { delay: neverPolls } });
    clusters.push(flux);
    const ksRef = { apiVersion: "kustomize.toolkit.fluxcd.io/v1", kind: "Kustomization", namespace: "flux-system", name: "west" };
    const ks = flux.server.store.get(ksRef)!;
    const { sourceRef: _dropped, ...spec } = ks.spec as Record<string, unknown>;
    flux.server.store.upsert({ ...ks, spec });
    const n = nudger([entry("west", "flux", { via: "annotation", minIntervalMs: 0 }, flux.kubeconfigPath)]);
    n.pushed(push(null, await tip(), [["c1", ["clusters/west/a.yaml"]]]));
    await n.idle();
    expect(n.stats().west).toEqual({ sent: 1, failed: 0, folded: 0 });
    expect(Date.parse(flux.server.store.get(ksRef)!.metadata.annotations?.["reconcile.fluxcd.io/requestedAt"] ?? "")).not.toBeNaN();
  });

  it("the Flux double re-applies the old artifact when only the Kustomization is annotated (why the source is annotated first)", async () => {
    const flux = await startSisterCluster({ id: "west", sync: "flux", remoteDir, dir: root, agent: { delay: neverPolls } });
    clusters.push(flux);
    flux.agent.start(180_000);
    const before = await eventually(() => flux.agent.applied ?? Promise.reject(new Error("not applied yet")));
    await pushToRemote("clusters/west/other.yaml", configMap("other"));
    const ks = flux.server.store.get({ apiVersion: "kustomize.toolkit.fluxcd.io/v1", kind: "Kustomization", namespace: "flux-system", name: "west" })!;
    flux.server.store.upsert({ ...ks, metadata: { ...ks.metadata, annotations: { "reconcile.fluxcd.io/requestedAt": "2026-01-01T00:00:00Z" } } });
    await eventually(() => expect(flux.agent.triggers).toEqual(["poll", "kustomization-requested"]));
    expect(flux.agent.applied).toBe(before);
  });

  it("Flux Receiver generic-hmac: X-Signature over the body; a bad one is refused by the receiver", async () => {
    const token = "receiver-token";
    const flux = await startSisterCluster({ id: "west", sync: "flux", remoteDir, dir: root, agent: { delay: neverPolls, receiver: { type: "generic-hmac", token } } });
    clusters.push(flux);
    flux.agent.start(180_000);
    const url = await flux.agent.listen();
    expect(url).toMatch(/\/hook\/[0-9a-f]{64}$/);
    await eventually(() => expect(flux.agent.triggers).toEqual(["poll"]));
    const head = await pushToRemote("clusters/west/r.yaml", configMap("receiver"));
    const good = path.join(root, "token");
    const bad = path.join(root, "bad-token");
    await writeFile(good, token);
    await writeFile(bad, "guess");

    const n = nudger([entry("west", "flux", { via: "webhook", url, payload: "generic-hmac", secret: { path: good }, minIntervalMs: 0 })]);
    n.pushed(push(null, head, [[head, ["clusters/west/r.yaml"]]]));
    await n.idle();
    await eventually(() => expect(flux.agent.applied).toBe(head));
    expect(flux.agent.triggers).toEqual(["poll", "source-requested"]);

    const refused = nudger([entry("west", "flux", { via: "webhook", url, payload: "generic-hmac", secret: { path: bad }, minIntervalMs: 0 })]);
    refused.pushed(push(null, head, [[head, ["clusters/west/r.yaml"]]]));
    await refused.idle();
    expect(refused.stats().west).toEqual({ sent: 0, failed: 1, folded: 0 });
    expect(flux.agent.webhookRequests.map((r) => r.status)).toEqual([200, 400]);
  });

  it("rate limit: at most one nudge per minInterval per cluster; pushes in between are folded into one nudge after it", async () => {
    const flux = await startSisterCluster({ id: "west", sync: "flux", remoteDir, dir: root, agent: { delay: neverPolls, receiver: { type: "generic", token: "t" } } });
    clusters.push(flux);
    flux.agent.start(180_000);
    const url = await flux.agent.listen();
    const timers = manualTimers();
    const recorded = recordingNudges();
    const n = nudger([entry("west", "flux", { via: "webhook", url, payload: "generic", minIntervalMs: 1_000 })], timers, recorded.nudge);

    n.pushed(push("p0", "t1", [["c1", ["clusters/west/1.yaml"]]]));
    n.pushed(push("t1", "t2", [["c2", ["clusters/west/2.yaml"]]]));
    n.pushed(push("t2", "t3", [["c3", ["clusters/west/3.yaml"], ], ["c4", ["records/x.yaml"]]]));
    n.pushed(push("t3", "t4", [["c5", ["clusters/east/1.yaml"]]]));
    await eventually(() => expect(flux.agent.webhookRequests.length).toBe(1));
    // The next nudge waits for the clock; nothing else goes out meanwhile.
    await eventually(() => expect(timers.pending()).toBe(1));
    expect(n.stats().west).toEqual({ sent: 1, failed: 0, folded: 1 });
    timers.advance(999);
    expect(timers.pending()).toBe(1);
    timers.advance(1);
    await n.idle();
    expect(flux.agent.webhookRequests.length).toBe(2);
    expect(n.stats()).toEqual({ west: { sent: 2, failed: 0, folded: 1 } });
    const west = (result: string) => ({ cluster: "west", via: "webhook", result });
    expect(recorded.counted).toEqual([west("folded"), west("sent"), west("sent")]);
  });
});

function configMap(name: string): string {
  return `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\n  namespace: default\n  labels:\n    app.kubernetes.io/managed-by: gitops-broker\ndata:\n  a: b\n`;
}

/** A commit on the remote's main (what the broker's push would have made). */
async function pushToRemote(file: string, content: string): Promise<string> {
  return pushExternalCommit(remoteDir, { [file]: content }, `add ${file}`);
}
