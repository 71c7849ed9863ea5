import { afterEach, describe, expect, it } from "vitest";
import { WasmCallError } from "../errors/index.js";
import { setModuleWorkers, WasmHost, WasmPool, wasmHost } from "./wasm-module.js";

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

describe("a pool of hosts", () => {
  it("runs calls made together on its workers side by side and answers each call with its own result, in the callers' order", async () => {
    const made: { host: WasmHost; calls: number }[] = [];
    const pool = new WasmPool(2, (sharedBy) => {
      const host = new WasmHost(() => 0, 1_000_000, sharedBy);
      const entry = { host, calls: 0 };
      const call = host.call.bind(host);
      host.call = (...args) => {
        entry.calls++;
        return call(...args);
      };
      made.push(entry);
      hosts.push(host);
      return host;
    });
    const request = (n: number) => new TextEncoder().encode(JSON.stringify({ outputLimit: 1024, name: `i-${n}/provision`, template: `{{ range until 20000 }}{{ end }}call ${n}`, values: {} }));
    const answers = await Promise.all([1, 2, 3, 4, 5, 6].map((n) => pool.call("gotemplate.render", request(n), { timeoutMs: 5000 }).then((out) => new TextDecoder().decode(out))));
    expect(answers).toEqual([1, 2, 3, 4, 5, 6].map((n) => `call ${n}`));
    // The host with the fewest calls waiting or running takes the next one: three each.
    expect(made.map((m) => m.calls)).toEqual([3, 3]);
  });

  it("charges a call its share of the process's CPU time while other workers run", async () => {
    // Every reading of the process's clock is 150 ms later; the limit is 100 ms. Alone, the first
    // check (the second reading) finds 150 ms spent and stops the call; shared by two workers it
    // finds 75 ms, waits, and stops it at the next check: one reading more.
    const readings = async (sharedBy: number) => {
      let cpu = 0;
      let reads = 0;
      const h = new WasmHost(() => (reads++, (cpu += 150)), 1_000_000, () => sharedBy);
      hosts.push(h);
      await render(h, "warm", 5000);
      reads = 0;
      const e = await failure(render(h, busy(100_000_000), 100));
      expect(e.reason).toBe("timeout");
      return reads;
    };
    expect(await readings(1)).toBe(2);
    expect(await readings(2)).toBe(3);
  });

  it("setModuleWorkers: the calls of the pool it replaces are answered, later calls go to the new one", async () => {
    const previous = setModuleWorkers(1);
    try {
      const request = (n: number) => new TextEncoder().encode(JSON.stringify({ outputLimit: 1024, name: "i/provision", template: `call ${n}`, values: {} }));
      const first = wasmHost().call("gotemplate.render", request(1), { timeoutMs: 5000 });
      expect(setModuleWorkers(3)).toBe(1);
      const second = wasmHost().call("gotemplate.render", request(2), { timeoutMs: 5000 });
      expect((await Promise.all([first, second])).map((out) => new TextDecoder().decode(out))).toEqual(["call 1", "call 2"]);
    } finally {
      setModuleWorkers(previous);
    }
  });
});
