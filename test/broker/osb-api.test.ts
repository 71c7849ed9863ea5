import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { bindingRecordPath, instanceManifestDir, instanceRecordPath, keyOf } from "../../src/repo/index.js";
import { startHarness, type Harness } from "../support/broker-harness.js";
import { OSB_BASES } from "../support/osb-client.js";
import { readRemoteFile } from "../support/git-fixtures.js";
import {
  commitCount,
  expectOsbError,
  headMessage,
  provisionBody,
  remoteFiles,
  samplePlans,
  unchangedRemote,
  type SamplePlans,
} from "./helpers.js";

// Every test runs at /v2 and at each of Service Fabrik's platform routes (ADR 0025).
describe.each(OSB_BASES)("the OSB API at %s", (base) => {
  let h: Harness;
  let plans: SamplePlans;

  beforeAll(async () => {
    h = await startHarness({ osbBase: base });
    plans = await samplePlans(h.osb);
  });
  afterAll(async () => {
    await h?.close();
  });

  /** Runs `fn` and asserts the remote did not move (a 4xx leaves the repository unchanged). */
  const unchanged = <T>(fn: () => Promise<T>): Promise<T> => unchangedRemote(h.remoteDir, fn);

  describe("headers and authentication", () => {
    it("answers 401 with a Basic challenge without or with wrong credentials", async () => {
      const none = await h.osb.catalog({ auth: false });
      expectOsbError(none, 401, /missing basic authentication/);
      expect(none.headers.get("www-authenticate")).toMatch(/^Basic realm="gitops-broker"/);
      const wrong = await h.osb.call("GET", `${h.osb.base}/catalog`, undefined, {
        auth: false,
        headers: { authorization: `Basic ${Buffer.from("broker:nope").toString("base64")}` },
      });
      expectOsbError(wrong, 401, /invalid credentials/);
    });

    it("answers 412 naming the supported range when X-Broker-API-Version is missing, malformed or older than 2.13", async () => {
      const range = String.raw`\(supported: 2\.13 to 2\.17, and newer 2\.x as 2\.17\)$`;
      expectOsbError(await h.osb.catalog({ version: null }), 412, new RegExp(`^X-Broker-API-Version header is required ${range}`));
      expectOsbError(await h.osb.catalog({ version: "2.12" }), 412, new RegExp(`^X-Broker-API-Version 2\\.12 is not supported ${range}`));
      expectOsbError(await h.osb.catalog({ version: "3.0" }), 412, new RegExp(`^X-Broker-API-Version 3\\.0 is not supported ${range}`));
      expectOsbError(await h.osb.catalog({ version: "latest" }), 412, new RegExp(`^X-Broker-API-Version "latest" is not MAJOR\\.MINOR ${range}`));
      expect((await h.osb.catalog({ version: "2.13" })).status).toBe(200);
    });

    it("echoes X-Broker-API-Request-Identity, on errors too", async () => {
      const ok = await h.osb.catalog({ headers: { "x-broker-api-request-identity": "req-1" } });
      expect(ok.headers.get("x-broker-api-request-identity")).toBe("req-1");
      const err = await h.osb.catalog({ auth: false, headers: { "x-broker-api-request-identity": "req-2" } });
      expect(err.status).toBe(401);
      expect(err.headers.get("x-broker-api-request-identity")).toBe("req-2");
    });

    it("rejects a malformed X-Broker-API-Originating-Identity with 400", async () => {
      const res = await unchanged(() =>
        h.osb.provision("oi-bad", provisionBody(plans.serviceId, plans.small.id), {
          headers: { "x-broker-api-originating-identity": "cloudfoundry not-base64-json" },
        }),
      );
      expectOsbError(res, 400, /Originating-Identity value is not base64-encoded JSON/);
    });

    it("serves /healthz and /readyz without authentication", async () => {
      const health = await fetch(new URL("/healthz", h.broker.url));
      expect(health.status).toBe(200);
      const ready = await fetch(new URL("/readyz", h.broker.url));
      expect(ready.status).toBe(200);
      expect(await ready.json()).toMatchObject({ status: "ready" });
    });
  });

  describe("catalog", () => {
    it("is OSB-exact: snake_case, no Service Fabrik-only fields", async () => {
      const res = await h.osb.catalog();
      expect(res.status).toBe(200);
      const text = JSON.stringify(res.body);
      for (const forbidden of ["planUpdatable", "templates", "manager", "instancesRetrievable", "\"context\""]) {
        expect(text).not.toContain(forbidden);
      }
      const [service] = res.body.services as Record<string, unknown>[];
      expect(service).toMatchObject({ name: "postgresql", bindable: true, plan_updateable: expect.any(Boolean) });
    });

    it("omits fields newer than the request's API version", async () => {
      const newer = JSON.stringify((await h.osb.catalog({ version: "2.17" })).body);
      const older = JSON.stringify((await h.osb.catalog({ version: "2.13" })).body);
      expect(newer).toContain("maintenance_info");
      expect(older).not.toContain("maintenance_info");
      expect(older).not.toContain("instances_retrievable");
    });
  });

  describe("provision", () => {
    it("commits a synchronous provision and answers 201 only once it is on the remote", async () => {
      const id = "sync-1";
      const before = await commitCount(h.remoteDir);
      const identity = Buffer.from(JSON.stringify({ user_id: "alice" })).toString("base64");
      const res = await h.osb.provision(id, provisionBody(plans.serviceId, plans.small.id, { parameters: { storageGB: 5 } }), {
        headers: { "x-broker-api-originating-identity": `cloudfoundry ${identity}`, "x-broker-api-request-identity": "r-42" },
      });
      expect(res.status).toBe(201);
      expect(await commitCount(h.remoteDir)).toBe(before + 1);

      const message = await headMessage(h.remoteDir);
      expect(message).toMatch(new RegExp(`^provision postgresql/small instance ${id}\n`));
      expect(message).toContain(`Instance-Id: ${id}`);
      expect(message).toMatch(/^Operation: \S+$/m);
      expect(message).toContain('Originating-Identity: cloudfoundry {"user_id":"alice"}');
      expect(message).toContain("Request-Identity: r-42");
      expect(message).toContain("Broker-Version: gitops-broker/test");

      const record = parse((await readRemoteFile(h.remoteDir, "main", instanceRecordPath(id))) ?? "");
      expect(record).toMatchObject({
        kind: "ServiceInstance",
        spec: {
          instanceId: id,
          serviceId: plans.serviceId,
          planId: plans.small.id,
          clusterId: "local",
          organizationGuid: "org-guid",
          spaceGuid: "space-guid",
          parameters: { storageGB: 5 },
          originatingIdentity: { platform: "cloudfoundry", value: { user_id: "alice" } },
        },
        status: { operations: [{ action: "provision", requestIdentity: "r-42" }] },
      });
      const manifests = await remoteFiles(h.remoteDir, instanceManifestDir("local", id));
      expect(manifests.length).toBeGreaterThan(0);
    });

    it("requires accepts_incomplete for an asynchronous plan (422 AsyncRequired, no commit)", async () => {
      const res = await unchanged(() => h.osb.provision("async-no", provisionBody(plans.serviceId, plans.medium.id)));
      expectOsbError(res, 422, /asynchronous/, "AsyncRequired");
    });

    it("answers 202 with an operation for an asynchronous plan, and last_operation reports it", async () => {
      const id = "async-1";
      const res = await h.osb.provision(id, provisionBody(plans.serviceId, plans.medium.id), { query: { accepts_incomplete: "true" } });
      expect(res.status).toBe(202);
      const operation = res.body.operation as string;
      expect(operation).toMatch(/\S/);

      const polled = await h.osb.lastOperation(id, { operation, service_id: plans.serviceId, plan_id: plans.medium.id });
      expect(polled.status).toBe(200);
      expect(polled.body).toMatchObject({ state: "succeeded", description: expect.stringContaining("provision") });
      // Unknown and missing operation values mean "the latest operation".
      expect((await h.osb.lastOperation(id, { operation: "no-such-op" })).body).toMatchObject({ state: "succeeded" });
      expect((await h.osb.lastOperation(id)).body).toMatchObject({ state: "succeeded" });
    });

    it("is idempotent: the same request answers 200, different attributes 409, neither commits", async () => {
      const id = "idem-1";
      const body = provisionBody(plans.serviceId, plans.small.id, { parameters: { storageGB: 3 } });
      const first = await h.osb.provision(id, body);
      expect(first.status).toBe(201);
      const again = await unchanged(() => h.osb.provision(id, body));
      expect(again.status).toBe(200);
      // The same answer: the instance's OSB metadata (the sample plans' metadata template).
      expect(again.body).toEqual(first.body);
      expect(Object.keys(again.body)).toEqual(["metadata"]);
      const different = await unchanged(() =>
        h.osb.provision(id, provisionBody(plans.serviceId, plans.small.id, { parameters: { storageGB: 4 } })),
      );
      expectOsbError(different, 409, /already exists with different attributes/);
    });

    it.each([
      ["a body that is not JSON", { raw: "{not json" }, /not valid JSON/],
      ["a JSON array", { raw: "[1,2]" }, /must be a JSON object, got array/],
      ["no body", { raw: "" }, /must be a JSON object, got no body/],
    ])("answers 400 for %s", async (_what, options, description) => {
      const res = await unchanged(() => h.osb.provision("bad-body", undefined, options));
      expectOsbError(res, 400, description);
    });

    it("answers 400 naming the field for missing or mistyped fields", async () => {
      const base = provisionBody(plans.serviceId, plans.small.id);
      const cases: [Record<string, unknown>, RegExp][] = [
        [{ ...base, service_id: undefined }, /service_id is required/],
        [{ ...base, plan_id: 7 }, /plan_id must be a non-empty string, got number/],
        [{ ...base, organization_guid: undefined }, /organization_guid is required/],
        [{ ...base, space_guid: "" }, /space_guid must be a non-empty string/],
        [{ ...base, context: "x" }, /context must be an object, got string/],
        [{ ...base, parameters: [1] }, /parameters must be an object, got array/],
        [{ ...base, maintenance_info: { version: 1 } }, /maintenance_info\.version must be a non-empty string/],
        [{ ...base, service_id: "no-such-service" }, /service_id "no-such-service" is not in the catalog/],
        [{ ...base, plan_id: "no-such-plan" }, /plan_id "no-such-plan" is not a plan of service postgresql/],
      ];
      for (const [body, description] of cases) {
        const res = await unchanged(() => h.osb.provision("bad-field", JSON.parse(JSON.stringify(body))));
        expectOsbError(res, 400, description);
      }
    });

    it("answers 400 naming the failing path when parameters fail the plan's schema", async () => {
      const res = await unchanged(() =>
        h.osb.provision("bad-params", provisionBody(plans.serviceId, plans.small.id, { parameters: { storageGB: "lots" } })),
      );
      expectOsbError(res, 400, /parameters.*storageGB/);
    });

    it("answers 422 MaintenanceInfoConflict for a stale maintenance_info.version", async () => {
      const res = await unchanged(() =>
        h.osb.provision(
          "mi-1",
          provisionBody(plans.serviceId, plans.medium.id, { maintenance_info: { version: "0.0.1-stale" } }),
          { query: { accepts_incomplete: "true" } },
        ),
      );
      expectOsbError(res, 422, /maintenance_info\.version 0\.0\.1-stale/, "MaintenanceInfoConflict");
    });

    it("maps ids that are not Kubernetes names to a stable hash directory", async () => {
      const id = "Weird/../ID_without:spaces"; // visible ASCII (the id grammar), not a DNS label
      const res = await h.osb.provision(id, provisionBody(plans.serviceId, plans.small.id));
      expect(res.status).toBe(201);
      const key = keyOf(id);
      expect(key).toMatch(/^[0-9a-f]{56}$/);
      const files = await remoteFiles(h.remoteDir, instanceManifestDir("local", id));
      expect(files.length).toBeGreaterThan(0);
      for (const f of files) expect(f).toContain(`/${key}/`);
    });
  });

  describe("update", () => {
    it("re-renders on a parameter change (200 + one commit) and merges parameters", async () => {
      const id = "upd-1";
      expect((await h.osb.provision(id, provisionBody(plans.serviceId, plans.small.id, { parameters: { storageGB: 5 } }))).status).toBe(201);
      const before = await commitCount(h.remoteDir);
      const res = await h.osb.update(id, { service_id: plans.serviceId, parameters: { storageGB: 8 } });
      expect(res.status).toBe(200);
      expect(await commitCount(h.remoteDir)).toBe(before + 1);
      expect(await headMessage(h.remoteDir)).toMatch(new RegExp(`^update postgresql/small instance ${id}`));
      const fetched = await h.osb.getInstance(id);
      expect(fetched.status).toBe(200);
      expect(fetched.body).toMatchObject({ service_id: plans.serviceId, plan_id: plans.small.id, parameters: { storageGB: 8 } });
    });

    it("answers 200 without a commit when nothing changes", async () => {
      const id = "upd-2";
      expect((await h.osb.provision(id, provisionBody(plans.serviceId, plans.small.id))).status).toBe(201);
      const res = await unchanged(() => h.osb.update(id, { service_id: plans.serviceId }));
      expect(res.status).toBe(200);
    });

    it("answers 404 for an unknown instance and 400 for parameters failing the update schema", async () => {
      expectOsbError(await unchanged(() => h.osb.update("nobody", { service_id: plans.serviceId })), 404, /instance nobody does not exist/);
      const id = "upd-3";
      expect((await h.osb.provision(id, provisionBody(plans.serviceId, plans.small.id))).status).toBe(201);
      const res = await unchanged(() => h.osb.update(id, { service_id: plans.serviceId, parameters: { storageGB: -1 } }));
      expectOsbError(res, 400, /storageGB/);
    });

    it("moves to another plan asynchronously when accepts_incomplete is given", async () => {
      const id = "upd-4";
      expect((await h.osb.provision(id, provisionBody(plans.serviceId, plans.small.id))).status).toBe(201);
      const sync = await unchanged(() => h.osb.update(id, { service_id: plans.serviceId, plan_id: plans.medium.id }));
      expectOsbError(sync, 422, /asynchronous/, "AsyncRequired");
      const res = await h.osb.update(
        id,
        { service_id: plans.serviceId, plan_id: plans.medium.id, previous_values: { plan_id: plans.small.id } },
        { query: { accepts_incomplete: "true" } },
      );
      expect(res.status).toBe(202);
      const polled = await h.osb.lastOperation(id, { operation: res.body.operation as string });
      expect(polled.body).toMatchObject({ state: "succeeded" });
      expect((await h.osb.getInstance(id)).body).toMatchObject({ plan_id: plans.medium.id });
    });
  });

  describe("bind and unbind", () => {
    it("binds (201, binding record, instance re-rendered), fetches, and is idempotent", async () => {
      const id = "bind-1";
      expect((await h.osb.provision(id, provisionBody(plans.serviceId, plans.small.id))).status).toBe(201);
      const body = { service_id: plans.serviceId, plan_id: plans.small.id, bind_resource: { app_guid: "app-1" } };
      const res = await h.osb.bind(id, "b-1", body);
      expect(res.status).toBe(201);
      expect(await headMessage(h.remoteDir)).toMatch(new RegExp(`^bind postgresql/small instance ${id} binding b-1`));
      const record = parse((await readRemoteFile(h.remoteDir, "main", bindingRecordPath(id, "b-1"))) ?? "");
      expect(record).toMatchObject({ kind: "ServiceBinding", spec: { bindingId: "b-1", instanceId: id, bindResource: { app_guid: "app-1" } } });
      // The instance's objects are rendered with the binding (one database user per binding).
      const manifests = await remoteFiles(h.remoteDir, instanceManifestDir("local", id));
      const texts = await Promise.all(manifests.map((f) => readRemoteFile(h.remoteDir, "main", f)));
      expect(texts.join("\n")).toContain("b-1");

      expect((await unchanged(() => h.osb.bind(id, "b-1", body))).status).toBe(200);
      expectOsbError(
        await unchanged(() => h.osb.bind(id, "b-1", { ...body, bind_resource: { app_guid: "app-2" } })),
        409,
        /binding b-1 already exists with different attributes/,
      );
      const fetched = await h.osb.getBinding(id, "b-1");
      expect(fetched.status).toBe(200);
      expect((await h.osb.bindingLastOperation(id, "b-1")).body).toMatchObject({ state: "succeeded" });
    });

    it("rejects a bind for an unknown instance, or with a mismatching plan", async () => {
      const body = { service_id: plans.serviceId, plan_id: plans.small.id };
      expectOsbError(await unchanged(() => h.osb.bind("ghost", "b-1", body)), 404, /instance ghost does not exist/);
      const id = "bind-2";
      expect((await h.osb.provision(id, provisionBody(plans.serviceId, plans.small.id))).status).toBe(201);
      expectOsbError(
        await unchanged(() => h.osb.bind(id, "b-2", { service_id: plans.serviceId, plan_id: plans.medium.id })),
        400,
        /do not match instance bind-2/,
      );
    });

    it("unbinds (200, binding objects gone), then answers 410", async () => {
      const id = "unbind-1";
      expect((await h.osb.provision(id, provisionBody(plans.serviceId, plans.small.id))).status).toBe(201);
      const ids = { service_id: plans.serviceId, plan_id: plans.small.id };
      expect((await h.osb.bind(id, "b-9", ids)).status).toBe(201);

      expectOsbError(await unchanged(() => h.osb.unbind(id, "b-9", { service_id: plans.serviceId })), 400, /plan_id is required/);
      const res = await h.osb.unbind(id, "b-9", ids);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({});
      expect(await headMessage(h.remoteDir)).toMatch(/^unbind postgresql\/small instance unbind-1 binding b-9/);
      const manifests = await remoteFiles(h.remoteDir, instanceManifestDir("local", id));
      expect(manifests.some((f) => f.includes("/bindings/"))).toBe(false);
      const texts = await Promise.all(manifests.map((f) => readRemoteFile(h.remoteDir, "main", f)));
      expect(texts.join("\n")).not.toContain("b-9");

      expectOsbError(await unchanged(() => h.osb.unbind(id, "b-9", ids)), 410, /binding b-9 of instance unbind-1 does not exist/);
      expect((await h.osb.getBinding(id, "b-9")).status).toBe(404);
    });
  });

  describe("deprovision", () => {
    it("requires service_id and plan_id, removes the manifests, keeps last_operation, then answers 410", async () => {
      const id = "deprov-1";
      expect((await h.osb.provision(id, provisionBody(plans.serviceId, plans.small.id))).status).toBe(201);
      expectOsbError(await unchanged(() => h.osb.deprovision(id, { plan_id: plans.small.id })), 400, /service_id is required/);

      const res = await h.osb.deprovision(id, { service_id: plans.serviceId, plan_id: plans.small.id });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({});
      expect(await headMessage(h.remoteDir)).toMatch(/^deprovision postgresql\/small instance deprov-1/);
      expect(await remoteFiles(h.remoteDir, instanceManifestDir("local", id))).toEqual([]);
      const record = parse((await readRemoteFile(h.remoteDir, "main", instanceRecordPath(id))) ?? "");
      expect(record.status).toMatchObject({ deleted: true });

      expect((await h.osb.lastOperation(id)).body).toMatchObject({ state: "succeeded", description: expect.stringContaining("deprovision") });
      expect((await h.osb.getInstance(id)).status).toBe(404);
      expectOsbError(
        await unchanged(() => h.osb.deprovision(id, { service_id: plans.serviceId, plan_id: plans.small.id })),
        410,
        /instance deprov-1 does not exist/,
      );
    });

    it("answers 202 for an asynchronous plan and 410 for an unknown instance", async () => {
      const id = "deprov-2";
      const q = { accepts_incomplete: "true" };
      expect((await h.osb.provision(id, provisionBody(plans.serviceId, plans.medium.id), { query: q })).status).toBe(202);
      const ids = { service_id: plans.serviceId, plan_id: plans.medium.id };
      expectOsbError(await unchanged(() => h.osb.deprovision(id, ids)), 422, /asynchronous/, "AsyncRequired");
      const res = await h.osb.deprovision(id, { ...ids, ...q });
      expect(res.status).toBe(202);
      expect((await h.osb.lastOperation(id, { operation: res.body.operation as string })).body).toMatchObject({ state: "succeeded" });
      expectOsbError(await unchanged(() => h.osb.deprovision("never-was", ids)), 410, /does not exist/);
      // Polling what never existed: 404 from OSB 2.16 on (see test/broker/exactness.test.ts).
      expect((await h.osb.lastOperation("never-was")).status).toBe(404);
    });
  });
});
