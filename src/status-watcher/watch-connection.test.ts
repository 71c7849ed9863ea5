import type { KubernetesObject } from "@kubernetes/client-node";
import { describe, expect, it, vi } from "vitest";
import { KubeApiError } from "../errors/index.js";
import { createLogger } from "../log/index.js";
import type { KubeStatus, ListWatchTransport } from "../kube/index.js";
import { openWatch } from "./watch-connection.js";
import type { WatchStep } from "./watch-state.js";

type Obj = KubernetesObject & KubeStatus;

/** A transport whose one watch the test drives: it answers when told, sends events, ends. */
function scriptedWatch() {
  const calls: string[] = [];
  let onEvent: (type: string, object: Obj) => void = () => {};
  let onDone: (error: unknown) => void = () => {};
  let answer: { resolve: () => void; reject: (error: Error) => void } | undefined;
  const aborts: number[] = [];
  const transport: ListWatchTransport = {
    list: () => Promise.reject(new Error("not listed here")),
    watch(resourceVersion, eventFn, doneFn) {
      calls.push(resourceVersion);
      onEvent = eventFn;
      onDone = doneFn;
      return new Promise((resolve, reject) => {
        answer = { resolve: () => resolve({ abort: () => aborts.push(1) }), reject };
      });
    },
  };
  return {
    transport,
    calls,
    aborts,
    /** The server answers 200. */
    answer: () => answer!.resolve(),
    refuse: (error: Error) => answer!.reject(error),
    send: (type: string, object: Obj) => onEvent(type, object),
    end: (error?: unknown) => onDone(error),
  };
}

function captureLogs() {
  const lines: Array<Record<string, unknown>> = [];
  const logger = createLogger({ level: "debug", destination: { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) } });
  return { logger, lines };
}

const pg = (name: string, resourceVersion: string): Obj => ({ apiVersion: "acid.zalan.do/v1", kind: "postgresql", metadata: { namespace: "ns", name, resourceVersion } });

function open(script: ReturnType<typeof scriptedWatch>, apply: (type: string, object: Obj) => WatchStep<KubernetesObject> = () => ({ kind: "event" })) {
  const { logger, lines } = captureLogs();
  const applied: string[] = [];
  let started = 0;
  const connection = openWatch({
    transport: script.transport,
    resourceVersion: "41",
    path: "/apis/acid.zalan.do/v1/postgresqls",
    logger,
    apply: (type, object) => {
      applied.push(`${type} ${object.metadata?.name ?? ""}`);
      return apply(type, object);
    },
    onStarted: () => started++,
  });
  return { connection, applied, lines, started: () => started };
}

describe("one watch connection", () => {
  it("watches from the resourceVersion, applies each event, says when the server answered, and ends when the stream ends", async () => {
    const script = scriptedWatch();
    const { connection, applied, started } = open(script);
    expect(script.calls).toEqual(["41"]);
    script.answer();
    await vi.waitFor(() => expect(started()).toBe(1));
    script.send("ADDED", pg("a", "42"));
    script.send("BOOKMARK", pg("", "43"));
    script.end();
    await expect(connection.ended).resolves.toBe("ended");
    expect(applied).toEqual(["ADDED a", "BOOKMARK "]);
  });

  it("ends expired after a 410 event, and after a 410 status of the stream", async () => {
    const byEvent = scriptedWatch();
    const first = open(byEvent, () => ({ kind: "expired" }));
    byEvent.answer();
    byEvent.send("ERROR", { code: 410, reason: "Expired" });
    byEvent.end();
    await expect(first.connection.ended).resolves.toBe("expired");

    const byStatus = scriptedWatch();
    const second = open(byStatus);
    byStatus.end(Object.assign(new Error("Gone"), { statusCode: 410 }));
    await expect(second.connection.ended).resolves.toBe("expired");
  });

  it("fails with a failing ERROR event once the stream ends, and with the error that ended the stream", async () => {
    const byEvent = scriptedWatch();
    const refused = new KubeApiError("watch: forbidden", { status: 403 });
    const first = open(byEvent, () => ({ kind: "failed", error: refused }));
    byEvent.answer();
    byEvent.send("ERROR", { code: 403, message: "forbidden" });
    byEvent.end();
    await expect(first.connection.ended).rejects.toBe(refused);

    const byStream = scriptedWatch();
    const second = open(byStream);
    byStream.end(new Error("socket hang up"));
    await expect(second.connection.ended).rejects.toThrow("watch /apis/acid.zalan.do/v1/postgresqls failed: socket hang up");
  });

  it("fails when the watch cannot start, without saying it started", async () => {
    const script = scriptedWatch();
    const { connection, started } = open(script);
    script.refuse(new KubeApiError("connect ECONNREFUSED"));
    await expect(connection.ended).rejects.toThrow("connect ECONNREFUSED");
    expect(started()).toBe(0);
  });

  it("interrupted before the server answered: aborts the watch as soon as it did, and does not say it started", async () => {
    const script = scriptedWatch();
    const { connection, started } = open(script);
    connection.interrupt();
    expect(script.aborts).toHaveLength(0);
    script.answer();
    await vi.waitFor(() => expect(script.aborts).toHaveLength(1));
    expect(started()).toBe(0);
    script.end();
    await expect(connection.ended).resolves.toBe("interrupted");
  });

  it("interrupted while running: aborts it, ends interrupted; once ended, an interrupt does nothing", async () => {
    const script = scriptedWatch();
    const { connection, started } = open(script);
    script.answer();
    await vi.waitFor(() => expect(started()).toBe(1));
    connection.interrupt();
    expect(script.aborts).toHaveLength(1);
    script.end(new Error("aborted"));
    await expect(connection.ended).resolves.toBe("interrupted");
    connection.interrupt();
    expect(script.aborts).toHaveLength(1);
  });

  it("logs an event it could not apply and goes on with the next", async () => {
    const script = scriptedWatch();
    const { connection, applied, lines } = open(script, (type) => {
      if (type === "ADDED") throw new TypeError("bad object");
      return { kind: "event" };
    });
    script.answer();
    script.send("ADDED", pg("a", "42"));
    script.send("MODIFIED", pg("b", "43"));
    script.end();
    await expect(connection.ended).resolves.toBe("ended");
    expect(applied).toEqual(["ADDED a", "MODIFIED b"]);
    expect(lines).toMatchObject([{ level: 50, type: "ADDED", msg: "watch cache failed to apply an event", err: { message: "bad object" } }]);
  });
});
