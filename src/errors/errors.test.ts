import { describe, expect, it } from "vitest";
import { ConflictError, DataDirLockedError, GitRemoteError, KubeApiError, NudgeError, ServiceUnavailableError } from "./index.js";

/** What a log line of the error holds: pino serializes with toJSON. */
const logged = (error: Error) => JSON.parse(JSON.stringify(error)) as Record<string, unknown>;

describe("toJSON keeps what a log reader needs", () => {
  it("a subclass's own fields are in data: the HTTP status, the reason, the kind", () => {
    expect(logged(new KubeApiError("watch /p failed: Too Many Requests", { status: 429, reason: "TooManyRequests", retryAfterMs: 1000 }))).toEqual({
      code: "KubeApiError",
      message: "watch /p failed: Too Many Requests",
      data: { status: 429, reason: "TooManyRequests", retryAfterMs: 1000 },
    });
    expect(logged(new GitRemoteError("hook", "pre-receive hook declined"))).toMatchObject({ data: { kind: "hook", remoteMessage: "pre-receive hook declined" } });
    expect(logged(new NudgeError("east", "cannot annotate", { status: 403 }))).toMatchObject({ data: { clusterId: "east", status: 403 } });
    expect(logged(new ConflictError("instance x exists with other attributes"))).toMatchObject({ code: "ConflictError", data: { status: 409 } });
    expect(logged(new ServiceUnavailableError("remote not reached"))).toMatchObject({ data: { status: 503, retryAfter: 5 } });
  });

  it("given data stays, fields left undefined are left out, and the cause is serialized the same way", () => {
    const cause = new KubeApiError("list /p: HTTP 403", { status: 403 });
    const error = new DataDirLockedError("/data", "serve", 42, undefined, { cause });
    const json = logged(error);
    expect(json.data).toEqual({ holderPid: 42, dataDir: "/data", role: "serve" });
    expect(json.cause).toEqual({ code: "KubeApiError", message: "list /p: HTTP 403", data: { status: 403 } });
    expect(Object.keys(logged(new KubeApiError("network down")).data as object)).toEqual([]);
  });
});
