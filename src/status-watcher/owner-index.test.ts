import type { KubernetesObject } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { LABEL_BINDING, LABEL_INSTANCE } from "../repo/index.js";
import { createOwnerIndex } from "./owner-index.js";

const object = (kind: string, name: string, labels: Record<string, string>): KubernetesObject => ({
  apiVersion: "v1",
  kind,
  metadata: { namespace: "ns", name, labels },
});
const names = (objects: KubernetesObject[]) => objects.map((o) => `${o.kind}/${o.metadata?.name}`).sort();

describe("the owner index of a cluster's owned objects", () => {
  it("finds an object by its instance key and by its binding key", () => {
    const index = createOwnerIndex();
    index.apply("owned v1 Secret ns", { type: "ADDED", object: object("Secret", "user-b1", { [LABEL_INSTANCE]: "i1", [LABEL_BINDING]: "b1" }) });
    index.apply("owned v1 ConfigMap ns", { type: "ADDED", object: object("ConfigMap", "config", { [LABEL_INSTANCE]: "i1" }) });
    expect(names(index.ownedBy("instance", "i1"))).toEqual(["ConfigMap/config", "Secret/user-b1"]);
    expect(names(index.ownedBy("binding", "b1"))).toEqual(["Secret/user-b1"]);
    expect(index.ownedBy("instance", "i2")).toEqual([]);
  });

  it("keeps the same name of two kinds apart (one key per kind watch)", () => {
    const index = createOwnerIndex();
    index.apply("owned v1 Secret ns", { type: "ADDED", object: object("Secret", "x", { [LABEL_INSTANCE]: "i1" }) });
    index.apply("owned v1 ConfigMap ns", { type: "ADDED", object: object("ConfigMap", "x", { [LABEL_INSTANCE]: "i1" }) });
    index.apply("owned v1 Secret ns", { type: "DELETED", object: object("Secret", "x", { [LABEL_INSTANCE]: "i1" }) });
    expect(names(index.ownedBy("instance", "i1"))).toEqual(["ConfigMap/x"]);
  });

  it("moves an object whose label changed, and forgets one that lost it or was deleted", () => {
    const index = createOwnerIndex();
    const watch = "owned v1 Secret ns";
    index.apply(watch, { type: "ADDED", object: object("Secret", "s", { [LABEL_INSTANCE]: "i1", [LABEL_BINDING]: "b1" }) });
    index.apply(watch, { type: "MODIFIED", object: object("Secret", "s", { [LABEL_INSTANCE]: "i2", [LABEL_BINDING]: "b1" }) });
    expect(index.ownedBy("instance", "i1")).toEqual([]);
    expect(names(index.ownedBy("instance", "i2"))).toEqual(["Secret/s"]);
    index.apply(watch, { type: "MODIFIED", object: object("Secret", "s", { [LABEL_INSTANCE]: "i2" }) });
    expect(index.ownedBy("binding", "b1")).toEqual([]);
    index.apply(watch, { type: "DELETED", object: object("Secret", "s", { [LABEL_INSTANCE]: "i2" }) });
    expect(index.ownedBy("instance", "i2")).toEqual([]);
  });

  it("answers the object as last seen", () => {
    const index = createOwnerIndex();
    const first = object("Secret", "s", { [LABEL_INSTANCE]: "i1" });
    const second = { ...object("Secret", "s", { [LABEL_INSTANCE]: "i1" }), data: { a: "b" } };
    index.apply("w", { type: "ADDED", object: first });
    index.apply("w", { type: "MODIFIED", object: second });
    expect(index.ownedBy("instance", "i1")).toEqual([second]);
  });
});
