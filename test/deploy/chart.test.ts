import { execFile } from "node:child_process";
import { mkdir, readFile, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse, parseAllDocuments } from "yaml";
import { runRenderChart } from "../../src/cli/render-chart.js";
import { addressMatcher, loadConfig } from "../../src/config/index.js";
import { createInstruments, noopMetrics, type Metrics } from "../../src/metrics/index.js";
import { helmModuleCall } from "../../src/render/index.js";
import { createTempDir } from "../support/git-fixtures.js";
import { typeErrors } from "../support/kube-models.js";
import { testTool } from "../support/test-tools.js";
import { validateManifest } from "../support/kube-validate.js";

/**
 * deploy/chart rendered by this project's own Helm engine (`gitops-broker render-chart`, the
 * WebAssembly module of src/charts), as `helm template prod deploy/chart -f values` renders it.
 * Every object is validated with kubernetes-models, and the ConfigMap's configuration with the
 * broker's own loadConfig. Each render is also compared with Helm itself (built from its module:
 * test/support/test-tools.ts): the two must give the same objects. (Until 2026-11-27 the
 * comparison was with a small Helm-like renderer on Go's text/template and Debian's sprig, which
 * the machines no longer have; test/helm-oracle compares byte for byte on other value sets.)
 */

const PROJECT = path.resolve(import.meta.dirname, "../..");
const CHART = path.join(PROJECT, "deploy/chart");
const run = promisify(execFile);

type Obj = { apiVersion: string; kind: string; metadata: { name: string }; [k: string]: unknown };

let tmp: string;

function documents(text: string): Obj[] {
  return parseAllDocuments(text)
    .map((d) => d.toJS() as Obj | null)
    .filter((o): o is Obj => o !== null);
}

const byKind = (a: Obj, b: Obj) => `${a.kind}/${a.metadata.name}`.localeCompare(`${b.kind}/${b.metadata.name}`);

/** The chart as `gitops-broker render-chart prod deploy/chart -f values.json` prints it, checked against `helm template`. */
async function render(values: Record<string, unknown>): Promise<Obj[]> {
  const file = path.join(tmp, `values-${Math.random().toString(36).slice(2)}.json`);
  await writeFile(file, JSON.stringify(values));
  let out = "";
  let err = "";
  const code = await runRenderChart(["prod", CHART, "-f", file], { call: helmModuleCall, stdout: (t) => (out += t), stderr: (t) => (err += t) });
  expect(err).toBe("");
  expect(code).toBe(0);
  const objects = documents(out);
  const { stdout } = await run(testTool("helm"), ["template", "prod", CHART, "-f", file]);
  expect([...objects].sort(byKind)).toEqual(documents(stdout).sort(byKind));
  return objects;
}

const REMOTE = { config: { git: { remote: "https://git.example.com/acme/gitops.git" } } };

beforeAll(async () => {
  tmp = await createTempDir("gitops-broker-chart-");
});
afterAll(async () => {
  if (tmp) await rm(tmp, { recursive: true, force: true });
});

describe("deploy/chart", () => {
  it("renders valid objects by default: Deployment, Service, ConfigMap, ServiceAccount, PodDisruptionBudget, the Roles reading secretRefs and holding the Lease", async () => {
    const objects = await render({ ...REMOTE, auth: { existingSecret: "broker-auth" } });
    expect(objects.map((o) => o.kind).sort()).toEqual(["ConfigMap", "Deployment", "PodDisruptionBudget", "Role", "Role", "RoleBinding", "RoleBinding", "Service", "ServiceAccount"]);
    for (const o of objects) expect(validateManifest(o), `${o.kind} has a model`).toBe(true);

    const deployment = objects.find((o) => o.kind === "Deployment") as Obj & { spec: any };
    expect(deployment.metadata.name).toBe("prod-gitops-broker");
    expect(deployment.spec.replicas).toBe(2);
    const pod = deployment.spec.template.spec;
    expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 10001 });
    const [broker] = pod.containers;
    expect(broker.args).toEqual(["serve", "--config", "/etc/gitops-broker/config.yaml"]);
    expect(broker.livenessProbe.httpGet).toEqual({ path: "/healthz", port: "http" });
    expect(broker.readinessProbe.httpGet).toEqual({ path: "/readyz", port: "http" });
    expect(broker.resources).toEqual({ requests: { cpu: "250m", memory: "512Mi" }, limits: { memory: "1Gi" } });
    expect(broker.securityContext).toMatchObject({ allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ["ALL"] } });
    // The password comes from the Secret, never from values.
    expect(broker.env).toContainEqual({ name: "GITOPS_BROKER_PASSWORD", valueFrom: { secretKeyRef: { name: "broker-auth", key: "password" } } });
    expect(pod.initContainers).toBeUndefined();

    const service = objects.find((o) => o.kind === "Service") as Obj & { spec: any };
    expect(service.spec.ports).toEqual([{ name: "http", port: 8080, targetPort: "http", protocol: "TCP" }]);
    expect(service.spec.selector).toEqual(deployment.spec.selector.matchLabels);
  });

  it("its ConfigMap and the Deployment's environment are a configuration the broker loads", async () => {
    const objects = await render({ ...REMOTE, auth: { existingSecret: "broker-auth" }, webhook: { existingSecret: "hook" }, git: { tokenSecret: "git-token" } });
    const configMap = objects.find((o) => o.kind === "ConfigMap") as Obj & { data: Record<string, string> };
    const file = path.join(tmp, "config.yaml");
    await writeFile(file, configMap.data["config.yaml"]!);
    const deployment = objects.find((o) => o.kind === "Deployment") as Obj & { spec: any };
    const env: Record<string, string> = {};
    for (const e of deployment.spec.template.spec.containers[0].env as { name: string; value?: string }[]) {
      env[e.name] = e.value ?? `from-secret-${e.name}`; // secretKeyRef: the kubelet puts the Secret's value there
    }
    const config = await loadConfig({ argv: ["--config", file], env, cwd: tmp });
    expect(config.git.remote).toBe(REMOTE.config.git.remote);
    expect(config.listen).toEqual({ host: "0.0.0.0", port: 8080 });
    expect(config.dataDir).toBe("/var/lib/gitops-broker");
    expect(config.auth.password).toBe("from-secret-GITOPS_BROKER_PASSWORD");
    expect(config.webhook.secret).toBe("from-secret-GITOPS_BROKER_WEBHOOK_SECRET");
    expect(config.git.tokenFile).toBe("/etc/gitops-broker/git/token");
  });

  it("with everything on: Ingress, ServiceMonitor on the metrics port, an ssh key copied to a private volume", async () => {
    const objects = await render({
      ...REMOTE,
      replicaCount: 3,
      git: { sshSecret: "deploy-key" },
      metrics: { enabled: true, serviceMonitor: { enabled: true } },
      ingress: { enabled: true, className: "nginx", host: "broker.acme.example", tls: [{ secretName: "broker-tls", hosts: ["broker.acme.example"] }] },
      podDisruptionBudget: { enabled: true, minAvailable: 2 },
    });
    expect(objects.map((o) => o.kind).sort()).toEqual(["ConfigMap", "Deployment", "Ingress", "PodDisruptionBudget", "Role", "Role", "RoleBinding", "RoleBinding", "Service", "ServiceAccount", "ServiceMonitor"]);
    for (const o of objects.filter((o) => o.kind !== "ServiceMonitor")) expect(validateManifest(o), `${o.kind} has a model`).toBe(true);

    const monitor = objects.find((o) => o.kind === "ServiceMonitor") as Obj & { spec: any };
    expect(monitor.apiVersion).toBe("monitoring.coreos.com/v1");
    expect(monitor.spec.endpoints).toEqual([{ port: "metrics", path: "/metrics", interval: "30s" }]);
    const service = objects.find((o) => o.kind === "Service") as Obj & { spec: any };
    expect(service.spec.ports.map((p: { name: string; port: number }) => [p.name, p.port])).toEqual([["http", 8080], ["metrics", 9090]]);
    expect(monitor.spec.selector.matchLabels).toEqual(service.spec.selector);

    const deployment = objects.find((o) => o.kind === "Deployment") as Obj & { spec: any };
    const pod = deployment.spec.template.spec;
    expect(deployment.spec.replicas).toBe(3);
    expect(pod.initContainers[0].command.join(" ")).toContain("install -m 0400 /secrets/ssh/identity /ssh/identity");
    expect(pod.volumes).toContainEqual({ name: "ssh-secret", secret: { secretName: "deploy-key", defaultMode: 0o440 } });
    expect(pod.containers[0].env).toContainEqual({
      name: "GITOPS_BROKER_GIT_SSH_COMMAND",
      value: "ssh -i /ssh/identity -o IdentitiesOnly=yes -o UserKnownHostsFile=/ssh/known_hosts -o StrictHostKeyChecking=yes",
    });
    const ingress = objects.find((o) => o.kind === "Ingress") as Obj & { spec: any };
    expect(ingress.spec.rules[0].http.paths[0].backend.service).toEqual({ name: "prod-gitops-broker", port: { name: "http" } });
    const pdb = objects.find((o) => o.kind === "PodDisruptionBudget") as Obj & { spec: any };
    expect(pdb.spec.minAvailable).toBe(2);
  });

  it("with the Ingress: the broker's configuration names the ingress controller's addresses as trusted proxies, so the per-client bound does not meet the platforms behind it", async () => {
    /** The configuration the pod's broker loads from a render's ConfigMap, and the pods' checksum of it. */
    const loaded = async (values: Record<string, unknown>) => {
      const objects = await render(values);
      const configMap = objects.find((o) => o.kind === "ConfigMap") as Obj & { data: Record<string, string> };
      const file = path.join(tmp, `ingress-${Math.random().toString(36).slice(2)}.yaml`);
      await writeFile(file, configMap.data["config.yaml"]!);
      const deployment = objects.find((o) => o.kind === "Deployment") as Obj & { spec: any };
      return { http: (await loadConfig({ argv: ["--config", file], env: {}, cwd: tmp })).http, checksum: deployment.spec.template.metadata.annotations["checksum/config"] as string };
    };
    const ingress = { enabled: true, className: "nginx", host: "broker.acme.example" };

    // Where the controller's pods are is not known to the chart: the private ranges, where pod
    // networks are (kind and flannel 10.244.0.0/16, Calico 192.168.0.0/16, GKE 10.x, some
    // 100.64.0.0/10), and fc00::/7 for IPv6 ones.
    const byDefault = await loaded({ ...REMOTE, ingress });
    expect(byDefault.http).toMatchObject({ maxConnectionsPerClient: 256, maxConnectionsPerProxy: 4096 });
    const trusted = addressMatcher(byDefault.http.trustedProxies);
    expect(["10.244.1.17", "172.17.0.5", "192.168.3.9", "100.64.12.3", "fd00:10:244::5"].filter((a) => !trusted(a))).toEqual([]);
    // A client on a public address reaching the pod directly is still bounded per address.
    expect(["203.0.113.7", "8.8.8.8", "2001:db8::1"].filter(trusted)).toEqual([]);

    const named = await loaded({ ...REMOTE, ingress: { ...ingress, proxyAddresses: ["10.244.0.0/16"] } });
    expect(named.http.trustedProxies).toEqual(["10.244.0.0/16"]);
    // One's own config.http.trustedProxies wins, an empty list included; the rest of config.http stays.
    const own = await loaded({ ...REMOTE, config: { ...REMOTE.config, http: { maxConnectionsPerClient: 64, trustedProxies: [] } }, ingress: { ...ingress, proxyAddresses: ["10.244.0.0/16"] } });
    expect(own.http).toMatchObject({ maxConnectionsPerClient: 64, trustedProxies: [] });
    const kept = await loaded({ ...REMOTE, config: { ...REMOTE.config, http: { maxConnectionsPerClient: 64 } }, ingress });
    expect(kept.http).toMatchObject({ maxConnectionsPerClient: 64, trustedProxies: byDefault.http.trustedProxies });
    // Without the Ingress, none; and turning it on changes the pods' checksum, so they roll.
    const without = await loaded(REMOTE);
    expect(without.http.trustedProxies).toEqual([]);
    expect(new Set([without.checksum, byDefault.checksum, named.checksum]).size).toBe(3);
  });

  it("with a PrometheusRule: alerts on metrics the broker exports, for this release's series only", async () => {
    const objects = await render({ ...REMOTE, metrics: { enabled: true, serviceMonitor: { enabled: true }, prometheusRule: { enabled: true } } });
    const rule = objects.find((o) => o.kind === "PrometheusRule") as Obj & { spec: { groups: { rules: Record<string, any>[] }[] } };
    expect(rule.apiVersion).toBe("monitoring.coreos.com/v1");
    const rules = rule.spec.groups.flatMap((g) => g.rules);
    expect(rules.map((r) => [r.alert, r.labels.severity, r.for])).toEqual([
      ["GitopsBrokerRepositoryProblems", "warning", "5m"],
      ["GitopsBrokerRemoteNotFetched", "critical", "5m"],
      ["GitopsBrokerHistoryRewritten", "critical", undefined],
    ]);
    // Every series an alert reads is one the broker registers, selected by the job the
    // ServiceMonitor gives its scrapes (the Service's name) in the release's namespace.
    const registered = new Set<string>();
    const recording: Metrics = {
      ...noopMetrics,
      counter: (name) => (registered.add(name), noopMetrics.counter(name, "")),
      gauge: (name) => (registered.add(name), noopMetrics.gauge(name, "")),
      histogram: (name) => (registered.add(name), noopMetrics.histogram(name, "")),
    };
    createInstruments(recording);
    const service = objects.find((o) => o.kind === "Service")!;
    for (const r of rules) {
      // A writer's series carry a store label (ADR 0027): its alerts fire per repository.
      const [, by, metric, selector] = /^max(?: by \((\w+)\))? ?\((\w+)\{([^}]*)\}\) > \d+$/.exec(r.expr as string) ?? [];
      expect(by, r.alert as string).toBe((metric ?? "").startsWith("gitops_broker_git_") ? "store" : undefined);
      expect(registered, `${r.alert as string}: ${r.expr as string}`).toContain(metric);
      expect(selector).toBe(`namespace="default",job="${service.metadata.name}"`);
    }
    // Ten poll intervals, at least ten minutes, unless set.
    expect(rules[1]!.expr).toMatch(/ > 600$/);
    const hourly = await render({ config: { git: { ...REMOTE.config.git, pollIntervalSeconds: 3600 } }, metrics: { enabled: true, prometheusRule: { enabled: true, fetchAgeSeconds: "" } } });
    const hourlyRules = (hourly.find((o) => o.kind === "PrometheusRule") as typeof rule).spec.groups[0]!.rules;
    expect(hourlyRules[1]!.expr).toMatch(/ > 36000$/);
    const set = await render({ ...REMOTE, metrics: { enabled: true, prometheusRule: { enabled: true, fetchAgeSeconds: 900, for: "2m" } } });
    const setRules = (set.find((o) => o.kind === "PrometheusRule") as typeof rule).spec.groups[0]!.rules;
    expect(setRules.map((r) => r.for)).toEqual(["2m", "2m", undefined]);
    expect(setRules[1]!.expr).toMatch(/ > 900$/);
  });

  it("with the Grafana dashboard: a ConfigMap for the sidecar holding dashboards/gitops-broker.json as it is; off by default and without metrics", async () => {
    const dashboardFile = JSON.parse(await readFile(path.join(CHART, "dashboards/gitops-broker.json"), "utf8")) as unknown;
    type ConfigMap = Obj & { metadata: { namespace?: string; labels: Record<string, string>; annotations?: Record<string, string> }; data: Record<string, string> };
    const dashboards = (objects: Obj[]) => objects.filter((o): o is ConfigMap => o.kind === "ConfigMap" && o.metadata.name.endsWith("-dashboard"));

    const [configMap, ...more] = dashboards(await render({ ...REMOTE, metrics: { enabled: true, serviceMonitor: { enabled: true }, dashboard: { enabled: true } } }));
    expect(more).toEqual([]);
    expect(validateManifest(configMap!)).toBe(true);
    expect(configMap!.metadata).toMatchObject({ name: "prod-gitops-broker-dashboard", namespace: "default", labels: { grafana_dashboard: "1", "app.kubernetes.io/instance": "prod" } });
    expect(configMap!.metadata.annotations).toBeUndefined();
    expect(Object.keys(configMap!.data)).toEqual(["gitops-broker.json"]);
    expect(JSON.parse(configMap!.data["gitops-broker.json"]!)).toEqual(dashboardFile);

    // The sidecar's own label, namespace and folder annotation.
    const [custom] = dashboards(
      await render({ ...REMOTE, metrics: { enabled: true, dashboard: { enabled: true, namespace: "monitoring", label: "dashboards", labelValue: "gitops", annotations: { grafana_folder: "GitOps" } } } }),
    );
    expect(custom!.metadata).toMatchObject({ namespace: "monitoring", labels: { dashboards: "gitops" }, annotations: { grafana_folder: "GitOps" } });
    expect(custom!.metadata.labels.grafana_dashboard).toBeUndefined();

    expect(dashboards(await render({ ...REMOTE, metrics: { enabled: true } }))).toEqual([]);
    expect(dashboards(await render({ ...REMOTE, metrics: { enabled: false, dashboard: { enabled: true } } }))).toEqual([]);
  });

  it("with TLS and client certificates: HTTPS probes, the Secrets mounted, a configuration the broker loads with auth.mode both", async () => {
    const subject = "/C=DE/O=SAP SE/OU=SAP Cloud Platform Clients/OU=Staging/L=service-manager/CN=service-manager";
    const objects = await render({
      ...REMOTE,
      auth: { existingSecret: "broker-auth", mode: "both" },
      tls: { enabled: true, secretName: "broker-tls", clientCaSecret: "sm-ca", clientSubjects: [subject] },
      service: { type: "LoadBalancer", port: 8443 },
    });
    for (const o of objects) expect(validateManifest(o), `${o.kind} has a model`).toBe(true);
    const deployment = objects.find((o) => o.kind === "Deployment") as Obj & { spec: any };
    const pod = deployment.spec.template.spec;
    const [broker] = pod.containers;
    for (const probe of [broker.livenessProbe, broker.readinessProbe, broker.startupProbe]) expect(probe.httpGet).toMatchObject({ port: "http", scheme: "HTTPS" });
    expect(pod.volumes).toContainEqual({ name: "tls", secret: { secretName: "broker-tls", defaultMode: 0o440 } });
    expect(pod.volumes).toContainEqual({ name: "client-ca", secret: { secretName: "sm-ca" } });
    expect(broker.volumeMounts).toContainEqual({ name: "tls", mountPath: "/etc/gitops-broker/tls", readOnly: true });
    expect(broker.volumeMounts).toContainEqual({ name: "client-ca", mountPath: "/etc/gitops-broker/client-ca", readOnly: true });
    const service = objects.find((o) => o.kind === "Service") as Obj & { spec: any };
    expect(service.spec.type).toBe("LoadBalancer");

    // The files the kubelet mounts, here under tmp: the configuration the pod's broker loads.
    const configMap = objects.find((o) => o.kind === "ConfigMap") as Obj & { data: Record<string, string> };
    const file = path.join(tmp, "tls-config.yaml");
    await writeFile(file, configMap.data["config.yaml"]!);
    const env: Record<string, string> = {};
    for (const e of broker.env as { name: string; value?: string }[]) {
      env[e.name] = e.value === undefined ? `from-secret-${e.name}` : e.value.replace(/^\/etc\/gitops-broker\//, `${tmp}/mounted/`);
    }
    for (const f of ["tls/tls.crt", "tls/tls.key", "client-ca/ca.crt"]) {
      await mkdir(path.dirname(path.join(tmp, "mounted", f)), { recursive: true });
      await writeFile(path.join(tmp, "mounted", f), "PEM");
    }
    const config = await loadConfig({ argv: ["--config", file], env, cwd: tmp });
    expect(config.auth.mode).toBe("both");
    expect(config.listen).toEqual({ host: "0.0.0.0", port: 8443 });
    expect(config.tls).toEqual({
      cert: path.join(tmp, "mounted/tls/tls.crt"),
      key: path.join(tmp, "mounted/tls/tls.key"),
      clientCa: path.join(tmp, "mounted/client-ca/ca.crt"),
      clientSubjects: [subject],
    });
  });

  it("RBAC: a Role per instance namespace and agent on a sister cluster, bound to the release's ServiceAccount or to the given subjects", async () => {
    const names = (objects: Obj[]) => objects.filter((o) => o.kind === "Role" || o.kind === "RoleBinding").map((o) => `${o.kind} ${(o.metadata as { namespace?: string }).namespace ?? "-"}/${o.metadata.name}`).sort();
    const sister = await render({ ...REMOTE, auth: { existingSecret: "a" }, rbac: { sister: { create: true, instanceNamespaces: ["pg-a", "pg-b"] } } });
    for (const o of sister) expect(validateManifest(o), `${o.kind} has a model`).toBe(true);
    expect(names(sister)).toEqual(
      ["pg-a", "pg-b"].flatMap((ns) => [`Role ${ns}/prod-gitops-broker-live-status`, `RoleBinding ${ns}/prod-gitops-broker-live-status`])
        .concat(["Role -/prod-gitops-broker-secret-refs", "RoleBinding -/prod-gitops-broker-secret-refs"])
        .concat(["Role -/prod-gitops-broker-leader-election", "RoleBinding -/prod-gitops-broker-leader-election"])
        .concat(["argocd", "flux"].flatMap((agent) => {
          const ns = agent === "argocd" ? "argocd" : "flux-system";
          return [`Role ${ns}/prod-gitops-broker-${agent}`, `RoleBinding ${ns}/prod-gitops-broker-${agent}`];
        }))
        .sort(),
    );
    const liveStatus = sister.find((o) => o.kind === "Role" && o.metadata.name === "prod-gitops-broker-live-status") as Obj & { rules: unknown[] };
    expect(liveStatus.rules).toEqual([
      { apiGroups: [""], resources: ["secrets"], verbs: ["list", "watch"] },
      { apiGroups: ["acid.zalan.do"], resources: ["postgresqls"], verbs: ["list", "watch"] },
      { apiGroups: [""], resources: ["services"], verbs: ["list", "watch"] },
    ]);
    const binding = sister.find((o) => o.kind === "RoleBinding" && o.metadata.name === "prod-gitops-broker-flux") as Obj & { subjects: unknown[] };
    expect(binding.subjects).toEqual([{ kind: "ServiceAccount", name: "prod-gitops-broker", namespace: "default" }]);

    // Another cluster: the identity its kubeconfig names, one agent, and no Role at home.
    const other = await render({
      ...REMOTE,
      auth: { existingSecret: "a" },
      leaderElection: { enabled: false },
      rbac: { home: { create: false }, sister: { create: true, subjects: [{ kind: "User", name: "broker-east", apiGroup: "rbac.authorization.k8s.io" }], flux: null } },
    });
    expect(names(other)).toEqual([
      "Role argocd/prod-gitops-broker-argocd",
      "Role gitops-broker-instances/prod-gitops-broker-live-status",
      "RoleBinding argocd/prod-gitops-broker-argocd",
      "RoleBinding gitops-broker-instances/prod-gitops-broker-live-status",
    ]);
    for (const o of other.filter((x) => x.kind === "RoleBinding") as (Obj & { subjects: unknown[] })[]) {
      expect(o.subjects).toEqual([{ kind: "User", name: "broker-east", apiGroup: "rbac.authorization.k8s.io" }]);
    }
  });

  it("several replicas: spread over zones, then hosts; the Lease's Role; the pod's token and identity for the election", async () => {
    const objects = await render({ ...REMOTE, auth: { existingSecret: "a" } });
    const deployment = objects.find((o) => o.kind === "Deployment") as Obj & { spec: any };
    const pod = deployment.spec.template.spec;
    const selector = deployment.spec.selector.matchLabels;
    expect(pod.topologySpreadConstraints).toEqual(
      ["topology.kubernetes.io/zone", "kubernetes.io/hostname"].map((topologyKey) => ({
        maxSkew: 1,
        topologyKey,
        whenUnsatisfiable: "ScheduleAnyway",
        labelSelector: { matchLabels: selector },
        matchLabelKeys: ["pod-template-hash"],
      })),
    );
    expect(typeErrors([{ apiVersion: "apps/v1", kind: "Deployment", object: deployment }])).toEqual([[]]);
    // The Lease: read and renew one name, create (which RBAC cannot limit by name), nothing else.
    const role = objects.find((o) => o.kind === "Role" && o.metadata.name === "prod-gitops-broker-leader-election") as Obj & { rules: unknown[] };
    expect(role.rules).toEqual([
      { apiGroups: ["coordination.k8s.io"], resources: ["leases"], verbs: ["create"] },
      { apiGroups: ["coordination.k8s.io"], resources: ["leases"], resourceNames: ["prod-gitops-broker"], verbs: ["get", "update"] },
    ]);
    const binding = objects.find((o) => o.kind === "RoleBinding" && o.metadata.name === "prod-gitops-broker-leader-election") as Obj & { subjects: unknown[]; roleRef: unknown };
    expect(binding.subjects).toEqual([{ kind: "ServiceAccount", name: "prod-gitops-broker", namespace: "default" }]);
    expect(pod.automountServiceAccountToken).toBe(true);
    const env = pod.containers[0].env as { name: string }[];
    expect(env.filter((e) => e.name.startsWith("GITOPS_BROKER_LEADER_ELECTION"))).toEqual([
      { name: "GITOPS_BROKER_LEADER_ELECTION", value: "true" },
      { name: "GITOPS_BROKER_LEADER_ELECTION_LEASE_NAME", value: "prod-gitops-broker" },
      { name: "GITOPS_BROKER_LEADER_ELECTION_NAMESPACE", valueFrom: { fieldRef: { fieldPath: "metadata.namespace" } } },
      { name: "GITOPS_BROKER_LEADER_ELECTION_IDENTITY", valueFrom: { fieldRef: { fieldPath: "metadata.name" } } },
    ]);

    // One replica: no spread. Constraints of one's own replace the chart's. No election, no API: no token.
    const single = await render({ ...REMOTE, replicaCount: 1, leaderElection: { enabled: false }, rbac: { home: { create: false } } });
    const singlePod = (single.find((o) => o.kind === "Deployment") as Obj & { spec: any }).spec.template.spec;
    expect(singlePod.topologySpreadConstraints).toBeUndefined();
    expect(singlePod.automountServiceAccountToken).toBe(false);
    expect(single.filter((o) => o.kind === "Role")).toEqual([]);
    const own = { maxSkew: 2, topologyKey: "topology.kubernetes.io/region", whenUnsatisfiable: "DoNotSchedule", labelSelector: { matchLabels: { app: "x" } } };
    const custom = await render({ ...REMOTE, topologySpreadConstraints: [own] });
    expect((custom.find((o) => o.kind === "Deployment") as Obj & { spec: any }).spec.template.spec.topologySpreadConstraints).toEqual([own]);
  });

  it("with the autoscaler: an autoscaling/v2 HorizontalPodAutoscaler on CPU owns the replicas; the spread follows its minimum", async () => {
    const objects = await render({ ...REMOTE, replicaCount: 1, hpa: { enabled: true, minReplicas: 3, maxReplicas: 7, cpuUtilization: 60 } });
    const hpa = objects.find((o) => o.kind === "HorizontalPodAutoscaler") as Obj & { spec: any };
    expect(hpa.apiVersion).toBe("autoscaling/v2");
    expect(validateManifest(hpa)).toBe(true);
    expect(typeErrors([{ apiVersion: "autoscaling/v2", kind: "HorizontalPodAutoscaler", object: hpa }])).toEqual([[]]);
    const deployment = objects.find((o) => o.kind === "Deployment") as Obj & { spec: any };
    expect(hpa.spec).toEqual({
      scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name: deployment.metadata.name },
      minReplicas: 3,
      maxReplicas: 7,
      metrics: [{ type: "Resource", resource: { name: "cpu", target: { type: "Utilization", averageUtilization: 60 } } }],
    });
    // Utilization is of the request: the container has one.
    expect(deployment.spec.template.spec.containers[0].resources.requests.cpu).toBe("250m");
    expect(deployment.spec.replicas).toBeUndefined();
    expect(deployment.spec.template.spec.topologySpreadConstraints).toHaveLength(2);
    // Off by default.
    expect((await render(REMOTE)).map((o) => o.kind)).not.toContain("HorizontalPodAutoscaler");
  });

  it("the chart README's large-landscape values render valid objects", async () => {
    const readme = await readFile(path.join(CHART, "README.md"), "utf8");
    const [, block] = /```yaml\n([\s\S]*?)```/.exec(readme) ?? [];
    expect(block).toBeDefined();
    const values = parse(block!) as Record<string, any>;
    const objects = await render({ ...values, config: { ...values.config, git: { ...REMOTE.config.git, ...values.config.git } } });
    for (const o of objects) expect(validateManifest(o), `${o.kind} has a model`).toBe(true);
    const deployment = objects.find((o) => o.kind === "Deployment") as Obj & { spec: any };
    const pod = deployment.spec.template.spec;
    expect(pod.containers[0].resources).toEqual({ requests: { cpu: "1", memory: "1Gi" }, limits: { memory: "2Gi" } });
    expect(pod.topologySpreadConstraints.map((c: { whenUnsatisfiable: string }) => c.whenUnsatisfiable)).toEqual(["DoNotSchedule", "ScheduleAnyway"]);
    expect(objects.find((o) => o.kind === "HorizontalPodAutoscaler")).toMatchObject({ spec: { minReplicas: 3, maxReplicas: 6 } });
  });

  it("refuses tls.enabled without tls.secretName, as helm template does (required)", async () => {
    const file = path.join(tmp, "no-secret.json");
    await writeFile(file, JSON.stringify({ ...REMOTE, tls: { enabled: true } }));
    let err = "";
    const code = await runRenderChart(["prod", CHART, "-f", file], { call: helmModuleCall, stdout: () => undefined, stderr: (t) => (err += t) });
    expect(code).toBe(1);
    expect(err).toMatch(/^Error: execution error at \(gitops-broker\/templates\/deployment\.yaml:\d+:\d+\): tls\.secretName is required with tls\.enabled\n/);
  });
});
