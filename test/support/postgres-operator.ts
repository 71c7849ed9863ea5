/**
 * A Zalando postgres-operator double on a test Kubernetes API server: for every `postgresql` it
 * sets status.PostgresClusterStatus (Creating, then Running), keeps the master Service
 * `<cluster>` and one credentials Secret per user of spec.users,
 * `<user>.<cluster>.credentials.postgresql.acid.zalan.do` with base64 `username` / `password`
 * (as the real operator does, `_` in a user name becomes `-`), and deletes the Secrets and
 * Service of users and clusters that are gone. It works on the server's store directly.
 */
import { randomBytes } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import type { KubeApiServer, KubeObject } from "./kube-api-server.js";

export const POSTGRESQL = { group: "acid.zalan.do", version: "v1", kind: "postgresql", plural: "postgresqls", namespaced: true };

export interface PostgresOperator {
  /** One reconciliation of every postgresql. */
  reconcile(): void;
  /** Every password it generated (to prove none reached Git). */
  readonly passwords: readonly string[];
  start(intervalMs?: number): void;
  stop(): Promise<void>;
}

const b64 = (s: string) => Buffer.from(s, "utf8").toString("base64");
const secretName = (user: string, cluster: string) => `${user.replaceAll("_", "-")}.${cluster}.credentials.postgresql.acid.zalan.do`;

interface Postgresql extends KubeObject {
  spec?: { teamId?: string; users?: Record<string, unknown> };
  status?: { PostgresClusterStatus?: string };
}

/**
 * `readyAfterMs`: a cluster stays Creating until this long after the operator first saw it (a
 * real bootstrap takes a while); default 0: Running on the next reconciliation.
 */
export function createPostgresOperator(server: KubeApiServer, options: { readyAfterMs?: number } = {}): PostgresOperator {
  const { store } = server;
  const readyAfterMs = options.readyAfterMs ?? 0;
  const firstSeen = new Map<string, number>();
  const passwords: string[] = [];
  let addresses = 0;
  let running: Promise<void> | undefined;
  let stopped = false;

  function reconcileCluster(pg: Postgresql): void {
    const name = pg.metadata.name!;
    const namespace = pg.metadata.namespace!;
    const labels = { application: "spilo", "cluster-name": name, team: pg.spec?.teamId ?? "" };
    const phase = pg.status?.PostgresClusterStatus;
    const key = `${namespace}/${name}/${pg.metadata.uid ?? ""}`;
    if (!firstSeen.has(key)) firstSeen.set(key, performance.now());
    const bootstrapped = performance.now() - firstSeen.get(key)! >= readyAfterMs;
    if (phase !== "Running" && (phase !== "Creating" || bootstrapped)) {
      store.upsert({ ...pg, status: { PostgresClusterStatus: phase === "Creating" ? "Running" : "Creating" } });
    }

    if (!store.get({ apiVersion: "v1", kind: "Service", namespace, name })) {
      addresses++;
      store.upsert({
        apiVersion: "v1",
        kind: "Service",
        metadata: { name, namespace, labels: { ...labels, "spilo-role": "master" } },
        spec: { type: "ClusterIP", clusterIP: `10.96.${addresses >> 8}.${addresses & 255}`, ports: [{ name: "postgresql", port: 5432, targetPort: 5432 }] },
      });
    }
    const users = Object.keys(pg.spec?.users ?? {});
    for (const user of users) {
      if (store.get({ apiVersion: "v1", kind: "Secret", namespace, name: secretName(user, name) })) continue;
      const password = randomBytes(24).toString("base64url");
      passwords.push(password);
      store.upsert({
        apiVersion: "v1",
        kind: "Secret",
        metadata: { name: secretName(user, name), namespace, labels },
        type: "Opaque",
        data: { username: b64(user), password: b64(password) },
      });
    }
    const kept = new Set(users.map((u) => secretName(u, name)));
    for (const secret of store.list("v1", "Secret", namespace)) {
      if (secret.metadata.labels?.["cluster-name"] === name && !kept.has(secret.metadata.name!)) store.delete({ apiVersion: "v1", kind: "Secret", namespace, name: secret.metadata.name! });
    }
  }

  function reconcile(): void {
    const clusters = store.list("acid.zalan.do/v1", "postgresql") as Postgresql[];
    const live = new Set(clusters.map((pg) => `${pg.metadata.namespace}/${pg.metadata.name}`));
    for (const pg of clusters) reconcileCluster(pg);
    // What the operator made for clusters that are gone (ownerReferences would do this).
    for (const kind of ["Secret", "Service"]) {
      for (const o of store.list("v1", kind)) {
        const cluster = o.metadata.labels?.["cluster-name"];
        if (o.metadata.labels?.application !== "spilo" || cluster === undefined) continue;
        if (!live.has(`${o.metadata.namespace}/${cluster}`)) store.delete({ apiVersion: "v1", kind, namespace: o.metadata.namespace!, name: o.metadata.name! });
      }
    }
  }

  return {
    reconcile,
    passwords,
    start(intervalMs = 25) {
      stopped = false;
      running ??= (async () => {
        while (!stopped) {
          reconcile();
          await sleep(intervalMs);
        }
      })().finally(() => (running = undefined));
    },
    async stop() {
      stopped = true;
      await running;
    },
  };
}
