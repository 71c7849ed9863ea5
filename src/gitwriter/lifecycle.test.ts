import { describe, expect, it } from "vitest";
import { GitWriterClosedError } from "../errors/index.js";
import { Lifecycle } from "./lifecycle.js";

/** A promise that resolves when `open()` is called. */
function gate(): { passed: Promise<void>; open: () => void } {
  let open: () => void = () => undefined;
  const passed = new Promise<void>((resolve) => (open = resolve));
  return { passed, open };
}

describe("Lifecycle", () => {
  it("starts once however often it is asked; open when the start went through", async () => {
    const life = new Lifecycle();
    let starts = 0;
    const start = async () => {
      starts += 1;
      life.opened();
    };
    expect(life.notOpenError()).toEqual(new GitWriterClosedError("git writer not started"));
    await Promise.all([life.start(start), life.start(start)]);
    await life.start(start);
    expect(starts).toBe(1);
    expect(life.state).toBe("open");
  });

  it("a failed start may be tried again", async () => {
    const life = new Lifecycle();
    const unreachable = new Error("unreachable");
    await expect(life.start(() => Promise.reject(unreachable))).rejects.toBe(unreachable);
    expect(life.state).toBe("new");
    await life.start(async () => life.opened());
    expect(life.state).toBe("open");
  });

  it("closes an open writer: closing while it drains, then closed, once", async () => {
    const life = new Lifecycle();
    await life.start(async () => life.opened());
    const drained = gate();
    const states: string[] = [];
    const closed = life.close(async () => {
      states.push(life.state);
      await drained.passed;
    });
    drained.open();
    expect(await closed).toBe(true);
    expect(states).toEqual(["closing"]);
    expect(life.state).toBe("closed");
    expect(life.notOpenError()).toEqual(new GitWriterClosedError("git writer is closed"));
    expect(await life.close(async () => void states.push("again"))).toBe(false);
    expect(states).toEqual(["closing"]);
  });

  it("a close during the start waits for it and leaves the writer closed, without draining", async () => {
    const life = new Lifecycle();
    const startGate = gate();
    const started = life.start(async () => {
      await startGate.passed;
      life.opened();
    });
    let drained = false;
    let closedYet = false;
    const closed = life.close(async () => void (drained = true)).then((value) => ((closedYet = true), value));
    await new Promise((resolve) => setImmediate(resolve));
    expect(closedYet).toBe(false); // waits for the start under way
    startGate.open();
    await started;
    expect(await closed).toBe(false);
    expect(drained).toBe(false);
    expect(life.state).toBe("closed");
  });
});
