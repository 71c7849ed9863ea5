import { describe, expect, it } from "vitest";
import { GitRemoteError } from "../errors/index.js";
import { Reachability } from "./reachability.js";

function setup(waiting = 0) {
  const up: number[] = [];
  const marks: number[] = [];
  const logs: string[] = [];
  const log = (_obj: object, msg: string) => void logs.push(msg);
  const reach = new Reachability({
    logger: { info: log, warn: log, error: log },
    metrics: { fetched: { mark: () => void marks.push(1) }, remoteUp: { set: (v: number) => void up.push(v), inc: () => undefined, reset: () => undefined } as never },
    labels: { store: "eu" },
    activityTimeoutMs: 5_000,
    waitingMs: () => waiting,
  });
  return { reach, up, marks, logs };
}

describe("Reachability", () => {
  it("reports a failed contact, then recovery, on remote_up and in its trouble", () => {
    const { reach, up, logs } = setup();
    expect(reach.trouble).toBeUndefined();
    reach.failed(new GitRemoteError("unreachable", "Failed to connect"));
    expect(reach.trouble).toBe("last contact with the Git remote failed");
    expect(reach.attempt()).toBe(1);
    expect(reach.attempt()).toBe(2);
    reach.reached(1_000);
    expect(reach.trouble).toBeUndefined();
    expect(reach.attempt()).toBe(1);
    expect(up).toEqual([0, 1]);
    expect(logs).toContain("git remote reachable again");
    expect(reach.viewAsOf).toBe(1_000);
    reach.reached(500);
    expect(reach.viewAsOf).toBe(1_000);
  });

  it("a command in flight past the activity timeout counts as not answering", () => {
    expect(setup(6_500).reach.trouble).toBe("the Git remote has not answered for 6 s (activity timeout 5 s)");
  });

  it("explains a command killed for want of an answer by what the remote said before in the outage", () => {
    const { reach } = setup();
    const killed = new GitRemoteError("unreachable", "no answer from the remote within 5 s", { repository: "store eu", timedOut: true });
    expect(reach.explain(killed)).toBe(killed);
    reach.failed(new GitRemoteError("unreachable", "The requested URL returned error: 503"));
    reach.failed(killed); // a kill does not replace what the remote said
    const explained = reach.explain(killed);
    expect(explained.remoteMessage).toBe("no answer from the remote within 5 s; before that: The requested URL returned error: 503");
    expect(explained).toMatchObject({ repository: "store eu", timedOut: true });
    expect(reach.lastSaid()).toBe("; it last said: The requested URL returned error: 503");
    reach.reached();
    expect(reach.lastSaid()).toBe("");
  });
});
