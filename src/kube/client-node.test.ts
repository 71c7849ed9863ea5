import { describe, expect, it } from "vitest";
import type { ClusterEntry } from "../catalog/index.js";
import { clientNodeLoader, createKubeConfigResolver, createSecretKeyReader, loadClientNode } from "./index.js";

/**
 * A broken install (the module cannot be imported): the failure surfaces as a KubeApiError where
 * the module is first needed, as every other failure to talk to a cluster does. The import is
 * injected, as Node reports a package that is not there.
 */
const cluster = { id: "east" } as ClusterEntry;

describe("loadClientNode", () => {
  it("loads the module once", async () => {
    const k8s = await loadClientNode();
    expect(typeof k8s.KubeConfig).toBe("function");
    expect(await loadClientNode()).toBe(k8s);
  });

  it("rejects with KubeApiError when the module cannot be imported, at its first use and after", async () => {
    let imports = 0;
    const clientNode = clientNodeLoader(() => {
      imports += 1;
      return Promise.reject(new Error("Cannot find package '@kubernetes/client-node'"));
    });
    const failure = { name: "KubeApiError", message: "cannot load @kubernetes/client-node: Cannot find package '@kubernetes/client-node'" };
    await expect(clientNode()).rejects.toMatchObject(failure);
    await expect(clientNode()).rejects.toMatchObject(failure);
    expect(imports).toBe(1);
    // The resolver of a live cluster (the watcher retries it and shows it as the cluster's problem).
    await expect(createKubeConfigResolver({ clientNode })({ path: "/nonexistent/kubeconfig" }, cluster)).rejects.toMatchObject(failure);
    await expect(createKubeConfigResolver({ clientNode })(undefined, cluster)).rejects.toMatchObject(failure);
    // A Secret reference: the reader's own message, the load failure as its cause.
    await expect(createSecretKeyReader({ namespace: "broker", clientNode })({ name: "kc", key: "config" }, "cluster east", "kubeconfig")).rejects.toMatchObject({
      name: "KubeApiError",
      message: "cluster east: cannot read kubeconfig Secret broker/kc",
      cause: failure,
    });
  });
});
