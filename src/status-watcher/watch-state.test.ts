import type { KubernetesObject } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { KubeApiError } from "../errors/index.js";
import { applyWatchEvent, putObject, removeObject, replaceObjects, watchEnd } from "./watch-state.js";

const pg = (name: string, resourceVersion: string, namespace = "ns"): KubernetesObject => ({ apiVersion: "acid.zalan.do/v1", kind: "postgresql", metadata: { namespace, name, resourceVersion } });
const summary = (events: { type: string; object: KubernetesObject }[]) => events.map((e) => `${e.type} ${e.object.metadata?.name}@${e.object.metadata?.resourceVersion}`);

describe("the objects of a watch cache", () => {
  it("put: ADDED, then MODIFIED for a new resourceVersion, nothing for the same one", () => {
    const objects = new Map<string, KubernetesObject>();
    expect(putObject(objects, pg("a", "1"))?.type).toBe("ADDED");
    expect(putObject(objects, pg("a", "1"))).toBeUndefined();
    expect(putObject(objects, pg("a", "2"))?.type).toBe("MODIFIED");
    expect(objects.get("ns/a")?.metadata?.resourceVersion).toBe("2");
    // Cluster-scoped objects are keyed with an empty namespace; same name elsewhere is another object.
    expect(putObject(objects, { ...pg("a", "1"), metadata: { name: "a", resourceVersion: "1" } })?.type).toBe("ADDED");
    expect([...objects.keys()].sort()).toEqual(["/a", "ns/a"]);
  });

  it("remove: DELETED once, nothing for what is not there", () => {
    const objects = new Map([["ns/a", pg("a", "1")]]);
    expect(removeObject(objects, pg("a", "3"))?.type).toBe("DELETED");
    expect(removeObject(objects, pg("a", "3"))).toBeUndefined();
  });

  it("a fresh list: DELETED for what vanished first, then ADDED and MODIFIED, nothing for the unchanged", () => {
    const objects = new Map([["ns/a", pg("a", "1")], ["ns/b", pg("b", "1")], ["ns/c", pg("c", "1")]]);
    const events = replaceObjects(objects, [pg("a", "1"), pg("b", "4"), pg("d", "4")]);
    expect(summary(events)).toEqual(["DELETED c@1", "MODIFIED b@4", "ADDED d@4"]);
    expect([...objects.keys()].sort()).toEqual(["ns/a", "ns/b", "ns/d"]);
  });
});

describe("a watch event", () => {
  it("advances the resourceVersion to resume from: with a change, and with a bookmark that changes nothing", () => {
    const objects = new Map<string, KubernetesObject>();
    expect(applyWatchEvent(objects, "ADDED", pg("a", "7"), "/p")).toMatchObject({ kind: "event", change: { type: "ADDED" }, resourceVersion: "7" });
    const bookmark = applyWatchEvent(objects, "BOOKMARK", { apiVersion: "acid.zalan.do/v1", kind: "postgresql", metadata: { resourceVersion: "9" } }, "/p");
    expect(bookmark).toEqual({ kind: "event", resourceVersion: "9" });
    expect(applyWatchEvent(objects, "DELETED", pg("zz", "10"), "/p")).toEqual({ kind: "event", resourceVersion: "10" });
    expect(applyWatchEvent(objects, "DELETED", pg("a", "11"), "/p")).toMatchObject({ change: { type: "DELETED" }, resourceVersion: "11" });
  });

  it("ERROR 410 expires the watch; another ERROR fails it with the Status's words", () => {
    const objects = new Map<string, KubernetesObject>();
    const status = (code: number, message: string) => ({ apiVersion: "v1", kind: "Status", code, message, reason: code === 410 ? "Expired" : "InternalError" });
    expect(applyWatchEvent(objects, "ERROR", status(410, "too old resource version: 5 (12)"), "/p")).toEqual({ kind: "expired" });
    const failed = applyWatchEvent(objects, "ERROR", status(500, "etcdserver: leader changed"), "/p");
    expect(failed.kind).toBe("failed");
    const error = (failed as { error: KubeApiError }).error;
    expect(error.message).toBe("watch /p: etcdserver: leader changed");
    expect(error.status).toBe(500);
    expect(objects.size).toBe(0);
  });
});

describe("the end of a watch", () => {
  const none = { interrupted: false, expired: false };
  it("interrupted on purpose wins over anything else seen", () => {
    expect(watchEnd({ interrupted: true, expired: true }, new Error("aborted"), "/p")).toBe("interrupted");
  });
  it("410 from an ERROR event or from the HTTP status is expired", () => {
    expect(watchEnd({ ...none, expired: true }, undefined, "/p")).toBe("expired");
    expect(watchEnd(none, Object.assign(new Error("Gone"), { statusCode: 410 }), "/p")).toBe("expired");
  });
  it("an error ends it with a KubeApiError naming the path and keeping the HTTP status", () => {
    const end = watchEnd(none, Object.assign(new Error("Too Many Requests"), { statusCode: 429 }), "/p");
    expect(end).toBeInstanceOf(KubeApiError);
    expect((end as KubeApiError).message).toBe("watch /p failed: Too Many Requests");
    expect((end as KubeApiError).status).toBe(429);
  });
  it("a failing ERROR event seen before a clean end is the failure; a clean end alone is resumed", () => {
    const failure = new KubeApiError("watch /p: boom", { status: 500 });
    expect(watchEnd({ ...none, failure }, undefined, "/p")).toBe(failure);
    expect(watchEnd(none, undefined, "/p")).toBe("ended");
  });
});
