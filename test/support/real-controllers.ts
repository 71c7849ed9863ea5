/**
 * Stand-ins for the controllers of a sister cluster, acting on a REAL kube-apiserver
 * (real-kube.ts) through its API, as the controllers do: Flux's kustomize-controller and Argo CD's
 * application controller (apply `clusters/<id>/` of a commit with server-side apply, prune what Git
 * no longer has, write the Kustomization's status through its status subresource, the
 * Application's by patching it whole) and Zalando's postgres-operator (status
 * through the subresource, the master Service, one credentials Secret per user, deleted with the
 * user). The API server,
 * its validation of what they write (Flux's CRD requires a condition's reason, message and
 * lastTransitionTime ...), its resourceVersions and watch events are Kubernetes' own.
 *
 * The agents' stand-ins deliver one step at a time, when a test says so (test/real-kube/: a
 * compaction and API server restart between two steps, the chart's RBAC); the real agents, which
 * deliver when they see fit, are test/support/real-flux.ts and real-argocd.ts (ADR 0035), and
 * test/real-agents/ runs the same lifecycle through them. The postgres-operator stays a stand-in
 * everywhere: Zalando's module is not served by the Go module proxy (ADR 0022).
 */
import { randomBytes } from "node:crypto";
import { parse } from "yaml";
import { git } from "./git-fixtures.js";
import { filesAt } from "./git-objects.js";
import type { KubeObject, RealKube } from "./real-kube.js";

const MANAGED_BY = "app.kubernetes.io/managed-by";
const rfc3339 = () => new Date().toISOString().replace(/\.\d+Z$/, "Z");

type Loose = Record<string, unknown>;

/** The items of a list answer, with apiVersion and kind set (the API server leaves them out of items). */
async function list(kube: RealKube, apiPath: string, apiVersion: string, kind: string): Promise<KubeObject[]> {
  const res = await kube.request("GET", apiPath);
  if (res.status !== 200) throw new Error(`list ${apiPath}: ${res.status} ${JSON.stringify(res.body)}`);
  return ((res.body.items ?? []) as KubeObject[]).map((o) => ({ ...o, apiVersion, kind }));
}

/** What an agent applied of `clusters/<clusterId>/`, and its pruning of what Git no longer has. */
function directoryApplier(kube: RealKube, options: { remoteDir: string; clusterId: string; branch: string; fieldManager: string }) {
  const applied = new Map<string, KubeObject>();
  const key = (o: KubeObject) => `${o.apiVersion} ${o.kind} ${o.metadata.namespace ?? ""} ${o.metadata.name}`;
  return {
    /** The branch's tip, or `commit`. */
    async target(commit?: string): Promise<string> {
      return commit ?? (await git(["rev-parse", `refs/heads/${options.branch}`], options.remoteDir)).trim();
    },
    /** Server-side apply of the directory at `commit`, then prune; resolves with the objects applied. */
    async apply(commit: string): Promise<KubeObject[]> {
      const desired = [...(await filesAt(options.remoteDir, commit, `clusters/${options.clusterId}`)).values()].map((text) => parse(text) as KubeObject);
      const wanted = new Set(desired.map(key));
      for (const object of desired) {
        await kube.apply(object, options.fieldManager);
        applied.set(key(object), object);
      }
      for (const [k, object] of applied) {
        if (wanted.has(k) || (object.metadata.labels as Record<string, string> | undefined)?.[MANAGED_BY] !== "gitops-broker") continue;
        await kube.delete(object);
        applied.delete(k);
      }
      return desired;
    },
  };
}

export interface AgentStandIn {
  /** Applies `clusters/<clusterId>/` at the branch's tip (or `commit`), prunes, writes the sync object's status; resolves with the commit. */
  sync(commit?: string): Promise<string>;
}

/**
 * kustomize-controller for one Kustomization (`name` in `namespace`) whose path is
 * `./clusters/<clusterId>` of the bare repository `remoteDir` (prune: true).
 */
export function fluxStandIn(kube: RealKube, options: { remoteDir: string; clusterId: string; name: string; namespace: string; branch?: string }): AgentStandIn {
  const branch = options.branch ?? "main";
  const applier = directoryApplier(kube, { ...options, branch, fieldManager: "kustomize-controller" });
  return {
    async sync(commit) {
      const target = await applier.target(commit);
      await applier.apply(target);
      const revision = `${branch}@sha1:${target}`;
      const kustomization = { apiVersion: "kustomize.toolkit.fluxcd.io/v1", kind: "Kustomization", metadata: { name: options.name, namespace: options.namespace } };
      const current = await kube.request("GET", `/apis/kustomize.toolkit.fluxcd.io/v1/namespaces/${options.namespace}/kustomizations/${options.name}`);
      await kube.patchStatus(
        kustomization,
        {
          observedGeneration: (current.body.metadata as { generation?: number }).generation,
          lastAttemptedRevision: revision,
          lastAppliedRevision: revision,
          conditions: [{ type: "Ready", status: "True", reason: "ReconciliationSucceeded", message: `Applied revision: ${revision}`, lastTransitionTime: rfc3339() }],
        },
      );
      return target;
    },
  };
}

/** Argo CD's health of a postgresql (its health.lua): Healthy when Running. */
function postgresqlHealth(o: KubeObject | undefined): string {
  const phase = (o?.status as { PostgresClusterStatus?: string } | undefined)?.PostgresClusterStatus;
  if (phase === "Running") return "Healthy";
  return phase === undefined || phase === "Creating" || phase === "Updating" ? "Progressing" : "Degraded";
}

/**
 * Argo CD's application controller for one Application (`name` in `namespace`, auto-sync with
 * prune) of `clusters/<clusterId>`: a sync applies and prunes, then writes the Application's
 * status as the controller does (the Application CRD has no status subresource: the whole object
 * is patched): sync Synced at the commit, operationState Succeeded, the health of the postgresqls
 * it applied, reconciledAt after the sync finished (resource health in the app tree, Argo CD 3's
 * default). `refresh()` re-assesses the health without a sync.
 */
export function argoCdStandIn(kube: RealKube, options: { remoteDir: string; clusterId: string; name: string; namespace: string; branch?: string }): AgentStandIn & { refresh(): Promise<void> } {
  const branch = options.branch ?? "main";
  const applier = directoryApplier(kube, { ...options, branch, fieldManager: "argocd-controller" });
  const appPath = `/apis/argoproj.io/v1alpha1/namespaces/${options.namespace}/applications/${options.name}`;
  let revision: string | undefined;
  let applied: KubeObject[] = [];

  async function health(): Promise<string> {
    let worst = "Healthy";
    for (const o of applied.filter((x) => x.kind === "postgresql")) {
      const live = await kube.request("GET", `/apis/acid.zalan.do/v1/namespaces/${o.metadata.namespace}/postgresqls/${o.metadata.name}`);
      const h = postgresqlHealth(live.status === 200 ? (live.body as KubeObject) : undefined);
      if (h !== "Healthy") worst = h;
    }
    return worst;
  }

  async function writeStatus(status: Loose): Promise<void> {
    const res = await kube.request("PATCH", appPath, { status }, { contentType: "application/merge-patch+json" });
    if (res.status !== 200) throw new Error(`status of Application ${options.name}: ${res.status} ${JSON.stringify(res.body)}`);
  }

  return {
    async sync(commit) {
      const target = await applier.target(commit);
      const startedAt = rfc3339();
      applied = await applier.apply(target);
      revision = target;
      const finishedAt = rfc3339();
      await writeStatus({
        sync: { status: "Synced", revision: target },
        health: { status: await health() },
        operationState: {
          phase: "Succeeded",
          message: "successfully synced (all tasks run)",
          operation: { sync: { revision: target, prune: true } },
          startedAt,
          finishedAt,
          syncResult: { revision: target },
        },
        resourceHealthSource: "appTree",
        reconciledAt: finishedAt,
      });
      return target;
    },
    async refresh() {
      if (revision === undefined) return;
      await writeStatus({ health: { status: await health() }, reconciledAt: rfc3339() });
    },
  };
}


export interface PostgresOperatorOptions {
  /** A cluster stays Creating until this long after the operator first saw it (a bootstrap); default 0. */
  readyAfterMs?: number;
  /** Told when the operator first sees a cluster and when it reports it Running (for the benchmark). */
  observe?: (name: string, event: "seen" | "running") => void;
}

export interface PostgresOperatorStandIn {
  /** One reconciliation of every postgresql in `namespace`. */
  reconcile(): Promise<void>;
  /** Every password it generated (to prove none reached Git). */
  readonly passwords: readonly string[];
}

const b64 = (s: string) => Buffer.from(s, "utf8").toString("base64");
export const credentialsSecretName = (user: string, cluster: string) => `${user.replaceAll("_", "-")}.${cluster}.credentials.postgresql.acid.zalan.do`;

/**
 * postgres-operator in one namespace: Creating on the first reconciliation of a cluster, Running
 * on the next; the master Service; a credentials Secret per user, deleted with the user; what
 * belongs to a gone cluster deleted (ownerReferences would, with a garbage collector this control
 * plane does not run).
 */
export function postgresOperatorStandIn(kube: RealKube, namespace: string, options: PostgresOperatorOptions = {}): PostgresOperatorStandIn {
  const passwords: string[] = [];
  const firstSeen = new Map<string, number>();
  return {
    passwords,
    async reconcile() {
      const clusters = await list(kube, `/apis/acid.zalan.do/v1/namespaces/${namespace}/postgresqls`, "acid.zalan.do/v1", "postgresql");
      for (const pg of clusters) {
        const name = pg.metadata.name;
        const labels = { application: "spilo", "cluster-name": name, team: String((pg.spec as Loose | undefined)?.teamId ?? "") };
        const phase = (pg.status as { PostgresClusterStatus?: string } | undefined)?.PostgresClusterStatus;
        const key = `${name}/${String(pg.metadata.uid)}`;
        if (!firstSeen.has(key)) {
          firstSeen.set(key, performance.now());
          options.observe?.(name, "seen");
        }
        const bootstrapped = performance.now() - firstSeen.get(key)! >= (options.readyAfterMs ?? 0);
        if (phase !== "Running" && (phase !== "Creating" || bootstrapped)) {
          await kube.patchStatus(pg, { PostgresClusterStatus: phase === "Creating" ? "Running" : "Creating" });
          if (phase === "Creating") options.observe?.(name, "running");
        }
        await kube.apply(
          {
            apiVersion: "v1",
            kind: "Service",
            metadata: { name, namespace, labels: { ...labels, "spilo-role": "master" } },
            spec: { type: "ClusterIP", ports: [{ name: "postgresql", port: 5432, targetPort: 5432 }] },
          },
          "postgres-operator",
        );
        const users = Object.keys((pg.spec as { users?: Loose } | undefined)?.users ?? {});
        for (const user of users) {
          const secretName = credentialsSecretName(user, name);
          if ((await kube.request("GET", `/api/v1/namespaces/${namespace}/secrets/${secretName}`)).status === 200) continue;
          const password = randomBytes(24).toString("base64url");
          passwords.push(password);
          const res = await kube.request("POST", `/api/v1/namespaces/${namespace}/secrets`, {
            apiVersion: "v1",
            kind: "Secret",
            metadata: { name: secretName, namespace, labels },
            type: "Opaque",
            data: { username: b64(user), password: b64(password) },
          });
          if (res.status !== 201) throw new Error(`create Secret ${secretName}: ${res.status} ${JSON.stringify(res.body)}`);
        }
      }
      const live = new Set(clusters.map((pg) => pg.metadata.name));
      // The credentials Secrets of the users each cluster still has: a user taken out of spec.users
      // loses its Secret (as the double does; the sample's status template waits for that to call an
      // unbind done).
      const wanted = new Set(clusters.flatMap((pg) => Object.keys((pg.spec as { users?: Loose } | undefined)?.users ?? {}).map((user) => credentialsSecretName(user, pg.metadata.name))));
      for (const [kind, plural] of [["Secret", "secrets"], ["Service", "services"]] as const) {
        for (const o of await list(kube, `/api/v1/namespaces/${namespace}/${plural}?labelSelector=application%3Dspilo`, "v1", kind)) {
          const cluster = (o.metadata.labels as Record<string, string> | undefined)?.["cluster-name"];
          if (cluster === undefined) continue;
          if (!live.has(cluster) || (kind === "Secret" && !wanted.has(o.metadata.name))) await kube.delete(o);
        }
      }
    },
  };
}

export interface OperatorLoop {
  stop(): Promise<void>;
}

/**
 * Runs `operator.reconcile()` every `intervalMs` (one at a time) until stopped, as the operator's
 * watch would: with the real agents, nothing tells the test when an object was applied.
 */
export function startOperatorLoop(operator: PostgresOperatorStandIn, intervalMs = 200): OperatorLoop {
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      // An object deleted between the list and a write is the next round's to see.
      await operator.reconcile().catch(() => undefined);
      await new Promise((resolve) => setTimeout(resolve, intervalMs));
    }
  })();
  return {
    async stop() {
      stopped = true;
      await loop;
    },
  };
}
