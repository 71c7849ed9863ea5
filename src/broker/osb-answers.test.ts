import { describe, expect, it } from "vitest";
import * as errors from "../errors/index.js";
import { ANSWERED_CODES, isNegativeAnswer, knownAnswer, osbAnswer } from "./osb-answers.js";

/**
 * The one table from the rooms' error codes to OSB answers (ADR 0037). The bodies below are what
 * the same errors answered when they carried their HTTP status themselves: JSON.stringify shows
 * the bytes, key order included.
 */

const wire = (error: unknown, read = false) => {
  const answer = osbAnswer(error, read);
  return { status: answer.status, body: JSON.stringify(answer.body), retryAfter: answer.retryAfter, code: answer.code };
};

describe("osbAnswer", () => {
  it("answers each code of the rooms below the broker as before, byte for byte", () => {
    expect(wire(new errors.RenderError("plan p: template provision failed"))).toEqual({
      status: 400,
      body: '{"description":"plan p: template provision failed","error":"RenderFailed"}',
      retryAfter: undefined,
      code: "RenderError",
    });
    expect(wire(new errors.SchedulingError("all schedulable clusters are full: a (1 of 1 instances)"))).toEqual({
      status: 422,
      body: '{"description":"all schedulable clusters are full: a (1 of 1 instances)"}',
      retryAfter: undefined,
      code: "SchedulingError",
    });
    expect(wire(new errors.ClusterMovingError("cluster eu-1 is moving to store us; try again in a few seconds", { clusterId: "eu-1", to: "us" }))).toMatchObject({
      status: 503,
      body: '{"description":"cluster eu-1 is moving to store us; try again in a few seconds"}',
      retryAfter: 5,
    });
    expect(wire(new errors.ClusterMovedError("moved", { clusterId: "eu-1", from: "eu", to: "us" }))).toMatchObject({ status: 503, retryAfter: 1 });
    expect(wire(new errors.StoreUnavailableError("store eu has not answered", { store: "eu" }))).toMatchObject({ status: 503, retryAfter: 10 });
    expect(wire(new errors.InstanceMoveAcrossStoresError("across", { instanceId: "i", clusterId: "c", from: "eu", to: "us" }))).toMatchObject({ status: 422, body: '{"description":"across"}' });
    expect(wire(new errors.ClusterMoveRefusedError("store nowhere is not configured"))).toMatchObject({ status: 422 });
    expect(wire(new errors.ClusterMoveConflictError("cluster eu-1 is in store us already"))).toMatchObject({ status: 409 });
  });

  it("says what a Git remote's failure means for the request: a read, a write that changed nothing, a push in doubt, a hook", () => {
    const unreachable = new errors.GitRemoteError("unreachable", "connection refused", { repository: "store eu" });
    expect(wire(unreachable)).toMatchObject({
      status: 503,
      retryAfter: 5,
      code: "GitRemoteError",
      body: '{"description":"the Git remote of store eu could not be reached; nothing was changed, retry later: connection refused"}',
    });
    expect(JSON.parse(wire(unreachable, true).body)).toEqual({
      description: "the Git remote of store eu could not be reached to answer this read; nothing is known to be missing, retry later: connection refused",
    });
    expect(JSON.parse(wire(new errors.GitRemoteError("unreachable", "timed out", { inDoubt: true })).body).description).toBe(
      "the Git remote did not say whether it took the change; retry the same request, it is answered from the repository: timed out",
    );
    expect(JSON.parse(wire(new errors.GitRemoteError("hook", "declined")).body).description).toBe("the Git remote refused the change: declined");
    expect(wire(new errors.GitWriterClosedError("closed"))).toMatchObject({ status: 503, body: '{"description":"the broker is shutting down; nothing was changed, retry"}' });
  });

  it("answers the broker's own errors by their status and body, and anything else 500 without its message", () => {
    expect(wire(new errors.ConcurrencyError("in progress"))).toEqual({ status: 422, body: '{"description":"in progress","error":"ConcurrencyError"}', retryAfter: undefined, code: "ConcurrencyError" });
    expect(wire(new errors.ServiceUnavailableError("remote"))).toMatchObject({ status: 503, retryAfter: 5 });
    for (const defect of [new errors.InvalidArgumentError("path must not be empty"), new errors.StoreMismatchError("m", { path: "p", store: "eu", owner: "us" }), new TypeError("x")]) {
      expect(wire(defect)).toEqual({ status: 500, body: '{"description":"internal broker error"}', retryAfter: undefined, code: "InternalError" });
      expect(knownAnswer(defect)).toBeUndefined();
    }
    // A domain error with a `status` field of its own is no transport error of the request.
    expect(wire(new errors.KubeApiError("list /p: HTTP 403", { status: 403 })).status).toBe(500);
    expect(wire(Object.assign(new Error("unexpected end of JSON"), { type: "entity.parse.failed" })).status).toBe(400);
  });

  it("a negative answer is a 4xx, whoever threw it (the git writer confirms it with a fetch)", () => {
    expect([new errors.SchedulingError("full"), new errors.RenderError("bad"), new errors.GoneError("gone"), new errors.ClusterMoveConflictError("there")].map(isNegativeAnswer)).toEqual([true, true, true, true]);
    expect([new errors.GitRemoteError("unreachable", "x"), new errors.ClusterMovingError("m", { clusterId: "c", to: "us" }), new errors.InvalidArgumentError("x"), new Error("x")].map(isNegativeAnswer)).toEqual([
      false,
      false,
      false,
      false,
    ]);
  });
});

/** Errors that never reach an OSB client as themselves: they stop a start, are logged, are wrapped, or are a defect (500). */
const NEVER_ANSWERED = new Set([
  "BaseError",
  "InvalidArgument",
  "ConfigError",
  "CatalogError",
  "DataDirLocked",
  "GitRepositoryError",
  "StoreMismatch",
  "NudgeError",
  "KubeApiError",
  "ImportAccountingError",
  "TemplateFailure",
  "ChartError",
  "WasmCallError",
  "RenderPending",
]);

describe("the table", () => {
  it("decides for every error class src/errors exports: the broker's own (OsbError), a row of the table, or never an answer", () => {
    const classes = Object.values(errors as Record<string, unknown>).filter(
      (v): v is { code: string; prototype: unknown } => typeof v === "function" && (v === errors.BaseError || (v as { prototype: unknown }).prototype instanceof errors.BaseError),
    );
    const undecided = classes
      .filter((cls) => !(cls.prototype instanceof errors.OsbError) && cls !== errors.OsbError)
      .map((cls) => cls.code)
      .filter((code) => !ANSWERED_CODES.includes(code) && !NEVER_ANSWERED.has(code));
    expect(undecided).toEqual([]);
    expect(ANSWERED_CODES.filter((code) => NEVER_ANSWERED.has(code))).toEqual([]);
  });
});
