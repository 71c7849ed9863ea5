/**
 * End to end, status.mode live, on Service Fabrik's sample SFService and SFPlan
 * (src/catalog/testdata/service-fabrik/, files unchanged): the real broker on a smart-HTTP remote,
 * one sister cluster (Kubernetes API server double, Argo CD double, postgres-operator double).
 * Provision -> manifests under clusters/<id>/ -> the plan's `sources` and `status` Go templates
 * judge the live postgresql -> succeeded; bind (twice) -> the bind template's user lands in the
 * instance's postgresql (ADR 0017), the status template's `response` is the credentials, built
 * from the operator's Secret and Service; an update keeps the users; unbind; deprovision.
 * Expected values follow Service Fabrik's semantics: live objects reach its templates as
 * Kubernetes unstructured JSON (integers are int64, so `printf "%d"` of a port prints digits).
 */
import { execFile } from "node:child_process";
import { mkdir, readFile, rm } from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";
import { parse } from "yaml";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { startBroker, type RunningBroker } from "../../src/cli/serve.js";
import { bindingManifestDir, bindingRecordPath, clusterNamespacePath, instanceManifestDir, namespaceManifest, type BindingRecord } from "../../src/repo/index.js";
import { createLogger } from "../../src/log/index.js";
import { provisionBody, remoteFiles } from "../broker/helpers.js";
import { CREDENTIALS, testConfig } from "../support/broker-harness.js";
import { createBareRemote, createTempDir } from "../support/git-fixtures.js";
import { startGitHttpServer, type GitHttpServer } from "../support/git-http-server.js";
import { osbClient, type OsbClient } from "../support/osb-client.js";
import { INSTANCE_NAMESPACE, startSisterCluster, type SisterCluster } from "../support/sister-cluster.js";
import { EVENT_CEILING_MS } from "../support/processes.js";

const run = promisify(execFile);
const eventually = <T>(assertion: () => Promise<T>): Promise<T> => vi.waitFor(assertion, { timeout: EVENT_CEILING_MS, interval: 50 });
const SF = new URL("../../src/catalog/testdata/service-fabrik/", import.meta.url);
const SERVICE_ID = "24731fb8-7b84-5f57-914f-c3d55d793dd4";
const PLAN_ID = "39d7d4c8-6fe2-4c2a-a5ca-b826937d5a88";
const ASYNC = { accepts_incomplete: "true" };

let root: string;
let remoteDir: string;
let git: GitHttpServer;
let east: SisterCluster;
let broker: RunningBroker;
let osb: OsbClient;
const logLines: string[] = [];

beforeAll(async () => {
  root = await createTempDir("sf-live-e2e-");
  const remotes = path.join(root, "remotes");
  await mkdir(remotes);
  remoteDir = path.join(remotes, "remote.git");
  east = await startSisterCluster({ id: "east", sync: "argocd", remoteDir, dir: root });
  const file = (name: string) => readFile(new URL(name, SF), "utf8");
  await createBareRemote(remotes, "remote.git", {
    "catalog/sfservice-postgresql.yaml": await file("sfservice-postgresql.yaml"),
    "catalog/sfplan-postgresql-v9.6-xxsmall.yaml": await file("sfplan-postgresql-v9.6-xxsmall.yaml"),
    "registry/clusters/east.yaml": east.registryEntry(),
    [clusterNamespacePath("east")]: namespaceManifest(INSTANCE_NAMESPACE),
  });
  git = await startGitHttpServer({ root: remotes });
  const config = testConfig(root, "broker", git.url("remote.git"));
  config.status = { ...config.status, mode: "live" };
  broker = await startBroker(config, {
    version: "test",
    logger: createLogger({ level: "debug", destination: { write: (line: string) => void logLines.push(line) } }),
    status: { bindTimeoutMs: 15_000 },
  });
  osb = osbClient(broker.url, CREDENTIALS);
  east.operator.start();
  east.agent.start();
}, 120_000);
afterAll(async () => {
  await broker?.close();
  await east?.close();
  await git?.close();
  if (root) await rm(root, { recursive: true, force: true });
});

const POSTGRESQL_REF = { apiVersion: "acid.zalan.do/v1", kind: "postgresql", namespace: INSTANCE_NAMESPACE, name: "sapcp-sf-1" };
/** The sources template's `secret`: `<binding name>.<namePrefix>-<instance id>.credentials.postgresql.acid.zalan.do`. */
const secretRef = (bindingId: string) => ({ apiVersion: "v1", kind: "Secret", namespace: INSTANCE_NAMESPACE, name: `${bindingId}.sapcp-sf-1.credentials.postgresql.acid.zalan.do` });
const show = async (file: string) => (await run("git", ["show", `main:${file}`], { cwd: remoteDir })).stdout;

/** spec.users of the instance's postgresql as committed on the remote. */
async function committedUsers(): Promise<unknown> {
  const object = parse(await show(`${instanceManifestDir("east", "sf-1")}/postgresql-sapcp-sf-1.yaml`)) as { spec: { users: unknown } };
  return object.spec.users;
}

const liveUsers = () => (east.server.store.get(POSTGRESQL_REF)?.spec as { users?: unknown } | undefined)?.users;

/**
 * What the status template answers for a binding, reasoned from it: `$dbname` "main"; `$host` the
 * Service's clusterIP (`enableLoadBalancers` is false in the plan's context); `$port` the first
 * port of the Service, an int64 in unstructured JSON, so `printf "%d"` gives "5432"; user and
 * password `b64dec` of the Secret's data; `uri` `postgres://%s:%s@%s:%d/%s?sslmode=require`.
 * The values come from the API server's store: the operator double's Service and Secret.
 */
async function expectedCredentials(bindingId: string): Promise<Record<string, string>> {
  const secret = east.server.store.get(secretRef(bindingId));
  const svc = east.server.store.get({ apiVersion: "v1", kind: "Service", namespace: INSTANCE_NAMESPACE, name: "sapcp-sf-1" });
  expect(secret).toBeDefined();
  const data = secret!.data as { username: string; password: string };
  const decode = (b64: string) => Buffer.from(b64, "base64").toString("utf8");
  const username = decode(data.username);
  const password = decode(data.password);
  const host = (svc!.spec as { clusterIP: string }).clusterIP;
  expect(username).toBe(bindingId);
  expect(host).toMatch(/^10\.96\.\d+\.\d+$/);
  return { dbname: "main", hostname: host, port: "5432", username, password, uri: `postgres://${username}:${password}@${host}:5432/main?sslmode=require` };
}

/** No object is committed twice under clusters/east/ (apiVersion, kind, namespace, name). */
async function expectNoObjectTwice(): Promise<void> {
  const seen = new Map<string, string>();
  for (const file of await remoteFiles(remoteDir, "clusters/east")) {
    if (!file.endsWith(".yaml")) continue;
    const o = parse(await show(file)) as { apiVersion?: string; kind?: string; metadata?: { name?: string; namespace?: string } };
    const identity = `${o.apiVersion} ${o.kind} ${o.metadata?.namespace ?? ""}/${o.metadata?.name}`;
    expect(seen.get(identity), `${identity} in ${file}`).toBeUndefined();
    seen.set(identity, file);
  }
  expect([...seen.keys()]).toContain(`acid.zalan.do/v1 postgresql ${INSTANCE_NAMESPACE}/sapcp-sf-1`);
}

async function lastOperation(instanceId: string, operation: string) {
  const res = await osb.lastOperation(instanceId, { operation });
  expect(res.status).toBe(200);
  return res.body;
}

describe("the sample Service Fabrik plan, live mode", () => {
  it("provision: manifests under clusters/east/, succeeded from the status template", async () => {
    const provision = await osb.provision("sf-1", provisionBody(SERVICE_ID, PLAN_ID, { parameters: { foo: "bar" } }), { query: ASYNC });
    expect({ status: provision.status, body: provision.body }).toEqual({ status: 202, body: { operation: expect.any(String) as unknown } });
    const op = provision.body.operation as string;
    const dir = instanceManifestDir("east", "sf-1");
    expect(await remoteFiles(remoteDir, dir)).toContain(`${dir}/postgresql-sapcp-sf-1.yaml`);

    // `description: {{ with .postgresql.status.reason }}...{{ else }} "" {{ end }}`: the operator
    // double sets no reason, so the template's description is empty and the broker's stands.
    await eventually(async () =>
      expect(await lastOperation("sf-1", op)).toEqual({ state: "succeeded", description: expect.stringMatching(/^provision applied by Argo CD application east at /) as unknown }),
    );
    const postgresql = east.server.store.get({ apiVersion: "acid.zalan.do/v1", kind: "postgresql", namespace: INSTANCE_NAMESPACE, name: "sapcp-sf-1" });
    expect(postgresql?.status).toMatchObject({ PostgresClusterStatus: "Running" });
    expect((await osb.getInstance("sf-1")).status).toBe(200);
  }, 180_000);

  // Bind and unbind: SF's bind template reads `.postgresql` (a `sources` key: the instance's object
  // as committed), `set`s `spec.users.<binding-id>: [superuser]` and outputs the whole object with
  // `toYaml`; the inter-operator merged that into the live object (DeepUpdate) and its unbind
  // template's output replaced it without the user. Here the change is a merge patch in the
  // binding record, composed into the instance's own file (ADR 0017); the user reaches the cluster
  // through Argo CD, and the operator double makes `<user>.<cluster>.credentials.postgresql.acid.zalan.do`
  // as Zalando's operator names it (the sources template's `secret` key names the same Secret).
  it("bind: the user lands in the instance's postgresql, the credentials come from the status template", async () => {
    const bind = await osb.bind("sf-1", "b-1", { service_id: SERVICE_ID, plan_id: PLAN_ID });
    expect(bind.status).toBe(201);
    expect(bind.body).toEqual({ credentials: await expectedCredentials("b-1") });

    expect(await committedUsers()).toEqual({ "b-1": ["superuser"], main: ["superuser", "createdb"] });
    expect(await remoteFiles(remoteDir, bindingManifestDir("east", "sf-1", "b-1"))).toEqual([]);
    await expectNoObjectTwice();
    const record = parse(await show(bindingRecordPath("sf-1", "b-1"))) as BindingRecord;
    expect(record.spec.instancePatches).toEqual([
      { target: { apiVersion: "acid.zalan.do/v1", kind: "postgresql", name: "sapcp-sf-1" }, patch: { spec: { users: { "b-1": ["superuser"] } } } },
    ]);
    expect(liveUsers()).toEqual({ "b-1": ["superuser"], main: ["superuser", "createdb"] });
  }, 180_000);

  it("a second binding keeps both users and gets its own credentials", async () => {
    const bind = await osb.bind("sf-1", "b-2", { service_id: SERVICE_ID, plan_id: PLAN_ID });
    expect(bind.status).toBe(201);
    expect(bind.body).toEqual({ credentials: await expectedCredentials("b-2") });
    expect(await committedUsers()).toEqual({ "b-1": ["superuser"], "b-2": ["superuser"], main: ["superuser", "createdb"] });
    await expectNoObjectTwice();
  }, 180_000);

  it("an instance update renders the postgresql again and keeps the bindings' users", async () => {
    const update = await osb.update("sf-1", { service_id: SERVICE_ID, plan_id: PLAN_ID, parameters: { foo: "baz" } }, { query: ASYNC });
    expect(update.status).toBe(202);
    expect(await committedUsers()).toEqual({ "b-1": ["superuser"], "b-2": ["superuser"], main: ["superuser", "createdb"] });
    await expectNoObjectTwice();
    await eventually(async () => expect(await lastOperation("sf-1", update.body.operation as string)).toMatchObject({ state: "succeeded" }));
  }, 180_000);

  it("unbind: the binding's user leaves the instance's postgresql, the other stays; the operator drops its Secret", async () => {
    const unbind = await osb.unbind("sf-1", "b-1", { service_id: SERVICE_ID, plan_id: PLAN_ID });
    expect({ status: unbind.status, body: unbind.body }).toEqual({ status: 200, body: {} });
    expect(await committedUsers()).toEqual({ "b-2": ["superuser"], main: ["superuser", "createdb"] });
    await expectNoObjectTwice();
    await eventually(async () => expect(liveUsers()).toEqual({ "b-2": ["superuser"], main: ["superuser", "createdb"] }));
    await eventually(async () => expect(east.server.store.get(secretRef("b-1"))).toBeUndefined());
    expect(east.server.store.get(secretRef("b-2"))).toBeDefined();

    const last = await osb.unbind("sf-1", "b-2", { service_id: SERVICE_ID, plan_id: PLAN_ID });
    expect(last.status).toBe(200);
    expect(await committedUsers()).toEqual({ main: ["superuser", "createdb"] });
    await eventually(async () => expect(liveUsers()).toEqual({ main: ["superuser", "createdb"] }));
  }, 180_000);

  it("deprovision: the manifests go and the operation succeeds", async () => {
    const dir = instanceManifestDir("east", "sf-1");

    const deprovision = await osb.deprovision("sf-1", { service_id: SERVICE_ID, plan_id: PLAN_ID, ...ASYNC });
    expect(deprovision.status).toBe(202);
    expect(await remoteFiles(remoteDir, dir)).toEqual([]);
    await eventually(async () => expect(await lastOperation("sf-1", deprovision.body.operation as string)).toMatchObject({ state: "succeeded" }));
  }, 180_000);
});
