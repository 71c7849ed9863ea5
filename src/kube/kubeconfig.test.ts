import * as fs from "node:fs/promises";
import * as path from "node:path";
import { CoreV1Api, KubeConfig } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTempDir } from "../../test/support/git-fixtures.js";
import { startKubeApiServer, type KubeApiServer } from "../../test/support/kube-api-server.js";
import type { ClusterEntry } from "../catalog/index.js";
import { KubeApiError } from "../errors/index.js";
import { createKubeConfigResolver } from "./kubeconfig.js";

let home: KubeApiServer;
let sister: KubeApiServer;
let dir: string;
beforeAll(async () => {
  home = await startKubeApiServer();
  sister = await startKubeApiServer({ token: "sister-token" });
  sister.store.upsert({ apiVersion: "v1", kind: "Namespace", metadata: { name: "only-on-sister" } });
  dir = await createTempDir("kubeconfig-");
});
afterAll(async () => {
  await home.close();
  await sister.close();
  await fs.rm(dir, { recursive: true, force: true });
});

const cluster = { id: "sister" } as ClusterEntry;
const namespaces = async (kc: KubeConfig) => (await kc.makeApiClient(CoreV1Api).listNamespace()).items.map((n) => n.metadata?.name);

describe("createKubeConfigResolver", () => {
  it("loads a kubeconfig file", async () => {
    const file = path.join(dir, "sister.kubeconfig");
    await fs.writeFile(file, sister.kubeconfig());
    const kc = await createKubeConfigResolver({ home: () => home.loadKubeConfig() })({ path: file }, cluster);
    expect(await namespaces(kc)).toEqual(["only-on-sister"]);
  });

  it("reads a secretRef from the broker's own cluster (its namespace by default)", async () => {
    home.store.upsert({
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: "sister-kubeconfig", namespace: "broker" },
      data: { kubeconfig: Buffer.from(sister.kubeconfig()).toString("base64") },
    });
    const resolve = createKubeConfigResolver({ home: () => home.loadKubeConfig(), namespace: "broker" });
    const kc = await resolve({ secretRef: { name: "sister-kubeconfig", key: "kubeconfig" } }, cluster);
    expect(await namespaces(kc)).toEqual(["only-on-sister"]);
    await expect(resolve({ secretRef: { name: "sister-kubeconfig", key: "nope" } }, cluster)).rejects.toThrow(
      "cluster sister: Secret broker/sister-kubeconfig has no key nope",
    );
    const missing = await resolve({ secretRef: { name: "absent", key: "kubeconfig", namespace: "elsewhere" } }, cluster).catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(KubeApiError);
    expect(missing).toMatchObject({ message: "cluster sister: cannot read kubeconfig Secret elsewhere/absent", status: 404 });
  });

  it("uses the broker's own cluster for an entry without a reference", async () => {
    const own = home.loadKubeConfig();
    expect(await createKubeConfigResolver({ home: () => own })(undefined, cluster)).toBe(own);
  });
});
