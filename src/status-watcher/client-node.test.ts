import { afterEach, describe, expect, it, vi } from "vitest";
import type { ClusterEntry } from "../catalog/index.js";

/**
 * A broken install (the module cannot be imported): the failure surfaces as a KubeApiError where
 * the module is first needed, as every other failure to talk to a cluster does. Only this needs a
 * mock: the real module is installed and loads.
 */
const cluster = { id: "east" } as ClusterEntry;

afterEach(() => {
  vi.doUnmock("@kubernetes/client-node");
  vi.resetModules();
});

async function withBrokenClientNode() {
  vi.resetModules();
  vi.doMock("@kubernetes/client-node", () => {
    throw new Error("Cannot find package '@kubernetes/client-node'");
  });
  return import("./index.js");
}

describe("loadClientNode", () => {
  it("loads the module once", async () => {
    const { loadClientNode } = await import("./index.js");
    const k8s = await loadClientNode();
    expect(typeof k8s.KubeConfig).toBe("function");
    expect(await loadClientNode()).toBe(k8s);
  });

  it("rejects with KubeApiError when the module cannot be imported, at its first use and after", async () => {
    const { loadClientNode, createKubeConfigResolver, createSecretKeyReader } = await withBrokenClientNode();
    const failure = { name: "KubeApiError", message: expect.stringMatching(/^cannot load @kubernetes\/client-node: /) };
    await expect(loadClientNode()).rejects.toMatchObject(failure);
    await expect(loadClientNode()).rejects.toMatchObject(failure);
    // The resolver of a live cluster (the watcher retries it and shows it as the cluster's problem).
    await expect(createKubeConfigResolver()({ path: "/nonexistent/kubeconfig" }, cluster)).rejects.toMatchObject(failure);
    await expect(createKubeConfigResolver()(undefined, cluster)).rejects.toMatchObject(failure);
    // A Secret reference: the reader's own message, the load failure as its cause.
    await expect(createSecretKeyReader({ namespace: "broker" })({ name: "kc", key: "config" }, "cluster east", "kubeconfig")).rejects.toMatchObject({
      name: "KubeApiError",
      message: "cluster east: cannot read kubeconfig Secret broker/kc",
      cause: failure,
    });
  });
});
