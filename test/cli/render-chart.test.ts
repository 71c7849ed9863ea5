import { readFile } from "node:fs/promises";
import { describe, expect, it } from "vitest";
import { runRenderChart } from "../../src/cli/render-chart.js";
import { helmModuleCall } from "../../src/render/index.js";

/**
 * `gitops-broker render-chart` against the real WebAssembly module. The expected texts are what
 * `helm template` (Helm 3.21) prints for the same arguments, reasoned from Helm's code: CRDs
 * first with their file's text as is (its trailing newline leaves a blank line), then the
 * manifests by kind in Helm's install order (ConfigMap, Service, Deployment, then unknown kinds
 * by name), each with the template it came from; the exporter subchart is on by its condition
 * and sees the parent's exporter.port; NOTES.txt is not printed.
 */
const CHART = "test/broker/testdata/charts/kvstore";

async function run(args: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = "";
  let err = "";
  const code = await runRenderChart(args, {
    call: helmModuleCall,
    stdout: (t) => (out += t),
    stderr: (t) => (err += t),
  });
  return { code, out, err };
}

const LABELS = `    app.kubernetes.io/name: kvstore
    app.kubernetes.io/instance: my-kv
    app.kubernetes.io/version: "2.4"`;

describe("render-chart", () => {
  it("prints what helm template prints", async () => {
    const crd = await readFile(`${CHART}/crds/kvstores.yaml`, "utf8");
    const r = await run(["my-kv", CHART, "--set", "auth.username=admin,exporter.enabled=true", "--namespace", "data", "--include-crds"]);
    expect(r.err).toBe("");
    expect(r.code).toBe(0);
    expect(r.out).toBe(`---
# Source: kvstore/crds/kvstores.yaml
${crd}
---
# Source: kvstore/templates/configmap.yaml
apiVersion: v1
kind: ConfigMap
metadata:
  name: my-kv-kvstore-config
  labels:
${LABELS}
data:
  motd: "my-kv serves 1 replica(s)"
  namespace: data
---
# Source: kvstore/templates/service.yaml
apiVersion: v1
kind: Service
metadata:
  name: my-kv-kvstore
  labels:
${LABELS}
spec:
  ports:
    - name: kv
      port: 6379
  selector:
    app.kubernetes.io/instance: my-kv
---
# Source: kvstore/charts/exporter/templates/deployment.yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: my-kv-exporter
spec:
  replicas: 1
  selector:
    matchLabels:
      app: my-kv-exporter
  template:
    metadata:
      labels:
        app: my-kv-exporter
    spec:
      containers:
        - name: exporter
          image: example/kv-exporter:1.2.0
          ports:
            - containerPort: 9121
---
# Source: kvstore/templates/kvstore.yaml
apiVersion: example.com/v1
kind: KVStore
metadata:
  name: my-kv-kvstore
  labels:
${LABELS}
spec:
  replicas: 1
  storage: "1Gi"
  adminUser: admin
  configMap: my-kv-kvstore-config
`);
  });

  it("prints Helm's error for a missing required value, and --show-only picks templates", async () => {
    const failed = await run([CHART]);
    expect(failed).toEqual({
      code: 1,
      out: "",
      err: "Error: execution error at (kvstore/templates/kvstore.yaml:10:16): auth.username is required\n\nUse --debug flag to render out invalid YAML\n",
    });
    const shown = await run([CHART, "-s", "templates/service.yaml", "--set", "auth.username=a"]);
    expect(shown.out).toBe(`---
# Source: kvstore/templates/service.yaml
apiVersion: v1
kind: Service
metadata:
  name: release-name-kvstore
  labels:
    app.kubernetes.io/name: kvstore
    app.kubernetes.io/instance: release-name
    app.kubernetes.io/version: "2.4"
spec:
  ports:
    - name: kv
      port: 6379
  selector:
    app.kubernetes.io/instance: release-name
`);
  });
});
