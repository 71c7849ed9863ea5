import { afterEach, describe, expect, it } from "vitest";
import { WasmCallError } from "../errors/index.js";
import { WasmHost } from "./wasm-module.js";

// The time limit of a module call is CPU time (see wasm-module.ts): a render that waits for a
// core on a loaded machine is not a runaway. The CPU clock is injected to play the machine.

const hosts: WasmHost[] = [];
afterEach(async () => {
  await Promise.all(hosts.splice(0).map((h) => h.close()));
});

function host(cpuMs: () => number, wallCeilingFactor: number): WasmHost {
  const h = new WasmHost(cpuMs, wallCeilingFactor);
  hosts.push(h);
  return h;
}

function render(h: WasmHost, template: string, timeoutMs: number): Promise<string> {
  const request = JSON.stringify({ outputLimit: 1024, name: "i-1/provision", template, values: {} });
  return h.call("gotemplate.render", new TextEncoder().encode(request), { timeoutMs }).then((out) => new TextDecoder().decode(out));
}

/** Go's range over sprig's `until`: a loop that needs CPU and prints nothing. */
const busy = (n: number) => `{{ range until ${n} }}{{ end }}done`;

async function failure(p: Promise<unknown>): Promise<WasmCallError> {
  const e = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(e).toBeInstanceOf(WasmCallError);
  return e as WasmCallError;
}

describe("the module call's time limit", () => {
  it("does not stop a render that got less CPU than its limit, however long it waited", async () => {
    // A CPU clock that never moves: the machine never gave the process a core. Two million
    // iterations take far longer than 1 ms of wall-clock time; the ceiling is out of reach.
    const h = host(() => 0, 1_000_000);
    expect(await render(h, busy(2_000_000), 1)).toBe("done");
  });

  it("stops a render once the process has spent the limit in CPU time", async () => {
    // Every reading of the clock is a second later: the first check finds the limit spent.
    let cpu = 0;
    const h = host(() => (cpu += 1000), 1_000_000);
    const e = await failure(render(h, busy(100_000_000), 50));
    expect([e.reason, e.message]).toEqual(["timeout", "did not finish within 50 ms"]);
    // The worker was replaced: the next call runs on a fresh one.
    expect(await render(host(() => 0, 1_000_000), "ok", 1000)).toBe("ok");
  });

  it("stops a runaway at the wall-clock ceiling even when the CPU clock says it never ran", async () => {
    const h = host(() => 0, 20);
    const started = performance.now();
    const e = await failure(render(h, busy(100_000_000), 50));
    expect(e.reason).toBe("timeout");
    // Not before 20 times its limit: the CPU clock held it back until the ceiling.
    expect(performance.now() - started).toBeGreaterThanOrEqual(20 * 50);
  });
});

describe("calls made together", () => {
  it("all answer, in order, however many were made before the worker was ready or between its answers", async () => {
    // Calls made in one tick used to be sent at once: the worker answered the first, the host
    // waited for the last, and every call but the last never settled.
    const h = host(() => 0, 1_000_000);
    expect(await Promise.all([1, 2, 3].map((n) => render(h, `call ${n}`, 5000)))).toEqual(["call 1", "call 2", "call 3"]);
    expect(await Promise.all([4, 5].map((n) => render(h, `call ${n}`, 5000)))).toEqual(["call 4", "call 5"]);
  });
});
