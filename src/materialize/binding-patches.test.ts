import { describe, expect, it } from "vitest";
import type { Manifest } from "../render/index.js";
import { LABEL_BINDING, LABEL_INSTANCE, LABEL_MANAGED_BY, MANAGED_BY, mergePatch, type BindingRecord } from "../repo/index.js";
import { bindingPatches, mergePatchBetween, splitBindOutput, type CommittedObject } from "./binding-patches.js";

const manifest = (object: Record<string, unknown>): Manifest => {
  const metadata = object.metadata as { name: string; namespace?: string };
  return { apiVersion: object.apiVersion as string, kind: object.kind as string, name: metadata.name, namespace: metadata.namespace, fileName: "x.yaml", yaml: "", object };
};
const committed = (object: Record<string, unknown>): CommittedObject => {
  const m = manifest(object);
  return { apiVersion: m.apiVersion, kind: m.kind, name: m.name, namespace: m.namespace, object };
};

const BROKER = { [LABEL_MANAGED_BY]: MANAGED_BY, [LABEL_INSTANCE]: "db-1" };
const postgresql = (users: Record<string, string[]>, extra: Record<string, unknown> = {}) => ({
  apiVersion: "acid.zalan.do/v1",
  kind: "postgresql",
  metadata: { name: "pg-db-1", namespace: "ns", labels: { ...BROKER } },
  spec: { teamId: "t", users, volume: { size: "1Gi" } },
  ...extra,
});

describe("mergePatchBetween", () => {
  it("gives the RFC 7386 patch that turns one object into the other", () => {
    const before = { a: { b: 1, c: [1, 2], d: "x" }, e: true };
    const after = { a: { b: 2, c: [1, 2, 3] }, e: true, f: { g: null } };
    const patch = mergePatchBetween(before, after);
    // b changed, the list is replaced whole, d is gone (null), f is new; e is unchanged.
    expect(patch).toEqual({ a: { b: 2, c: [1, 2, 3], d: null }, f: { g: null } });
    expect(mergePatch(before, patch)).toEqual({ a: { b: 2, c: [1, 2, 3] }, e: true, f: {} });
  });

  it("is undefined for equal values and keeps a __proto__ key as data", () => {
    expect(mergePatchBetween({ a: [1, { b: 2 }] }, { a: [1, { b: 2 }] })).toBeUndefined();
    const after = JSON.parse('{"__proto__": {"polluted": true}}') as Record<string, unknown>;
    const patch = mergePatchBetween({}, after) as Record<string, unknown>;
    expect(Object.hasOwn(patch, "__proto__")).toBe(true);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});

describe("splitBindOutput", () => {
  it("turns an object of the instance into its change, ignoring status, server metadata and the broker's labels", () => {
    const base = committed(postgresql({ main: ["superuser"] }));
    const rendered = manifest(
      postgresql(
        { main: ["superuser"], "b-1": ["superuser"] },
        {
          metadata: { name: "pg-db-1", namespace: "ns", resourceVersion: "7", uid: "u", generation: 2, labels: { ...BROKER, [LABEL_BINDING]: "b-1" } },
          status: { PostgresClusterStatus: "Running" },
        },
      ),
    );
    const own = manifest({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "b-1-connection", namespace: "ns" } });
    expect(splitBindOutput([rendered, own], [base], "ns", "bind")).toEqual({
      own: [own],
      patches: [{ target: { apiVersion: "acid.zalan.do/v1", kind: "postgresql", name: "pg-db-1" }, patch: { spec: { users: { "b-1": ["superuser"] } } } }],
    });
  });

  it("records no patch for an object rendered unchanged, and the namespace of an object outside the default one", () => {
    const same = postgresql({ main: [] });
    const elsewhere = { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "c", namespace: "other" }, data: { a: "1" } };
    const result = splitBindOutput([manifest(same), manifest({ ...elsewhere, data: { a: "2" } })], [committed(same), committed(elsewhere)], "ns", "bind");
    expect(result).toEqual({ own: [], patches: [{ target: { apiVersion: "v1", kind: "ConfigMap", name: "c", namespace: "other" }, patch: { data: { a: "2" } } }] });
  });

  it("refuses a change to the data of the instance's Secret", () => {
    const secret = { apiVersion: "v1", kind: "Secret", metadata: { name: "s", namespace: "ns" }, type: "Opaque" };
    expect(() => splitBindOutput([manifest({ ...secret, data: { password: "eA==" } })], [committed(secret)], "ns", "template bind")).toThrow(
      "template bind: changes the data of the instance's Secret s; a credential is never written to Git",
    );
  });
});

describe("bindingPatches", () => {
  const record = (id: string, patches: BindingRecord["spec"]["instancePatches"]): BindingRecord => ({
    apiVersion: "gitops-broker.io/v1alpha1",
    kind: "ServiceBinding",
    metadata: { name: id, namespace: "ns" },
    spec: { bindingId: id, instanceId: "db-1", serviceId: "s", planId: "p", ...(patches ? { instancePatches: patches } : {}) },
    status: { operations: [{ id: "op", action: "bind", at: "2026-01-01T00:00:00.000Z" }] },
  });
  const target = { apiVersion: "v1", kind: "ConfigMap", name: "c" };

  it("orders the patches by binding key and matches the default namespace unless the target names one", () => {
    const patches = bindingPatches([record("b-2", [{ target, patch: { a: 2 } }]), record("b-1", [{ target: { ...target, namespace: "other" }, patch: { a: 1 } }]), record("b-3", undefined)], "ns");
    expect(patches.map((p) => [p.at, p.patch])).toEqual([
      ["spec.instancePatches[0].", { a: 1 }],
      ["spec.instancePatches[0].", { a: 2 }],
    ]);
    expect(patches[0]!.file).toMatch(/\/bindings\/b-1\.yaml$/);
    expect(patches[1]!.file).toMatch(/\/bindings\/b-2\.yaml$/);
    const cm = (namespace: string | undefined) => manifest({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "c", ...(namespace ? { namespace } : {}) } });
    expect([cm("ns"), cm("other"), cm(undefined)].map((m) => patches[0]!.matches(m))).toEqual([false, true, false]);
    expect([cm("ns"), cm("other"), cm(undefined)].map((m) => patches[1]!.matches(m))).toEqual([true, false, true]);
  });
});
