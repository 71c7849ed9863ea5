import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";
import { gunzipSync } from "node:zlib";
import { toError, WasmCallError } from "../errors/index.js";

/**
 * The WebAssembly module built from the Go module in go/ (Go's text/template and sprig, ADR 0011), run in a
 * worker thread so a template that runs away never blocks the event loop: each call has a time
 * limit, after which the worker is terminated (a Go program cannot be interrupted from inside)
 * and the next call starts a fresh one from the module compiled once per process.
 *
 * The limit is CPU time, not the wall clock: on a machine loaded many times over, a render that
 * needs 50 ms of CPU can wait seconds for a core, and answering 400 "time limit" then would
 * blame the plan for the machine. When the wall-clock limit passes, the call fails only if the
 * process has spent the limit in CPU time since the call started (process-wide, so never less
 * than the worker spent: a runaway is never given more than the limit); otherwise the check is
 * re-armed for the CPU time still missing, up to a wall-clock ceiling of
 * `WALL_CEILING_FACTOR` times the limit.
 *
 * Nothing is read or compiled until the first call: a broker without gotemplate plans never
 * loads the module.
 *
 * The process's calls go to a pool of such hosts (`WasmPool`), one by default; a command that
 * renders many instances at once (the import's `--render-workers`) sizes it
 * (`setModuleWorkers`). Each call is answered by one host, so the answers are the same whichever
 * host ran it; the order of the results is the callers' (ADR 0026, 2026-11-29).
 */

/** `wasm/` at the package root; the same relative path from src/render and dist/render. */
const WASM_DIR = new URL("../../wasm/", import.meta.url);

export interface WasmCallOptions {
  /** Milliseconds before the call fails and its worker is replaced. */
  timeoutMs: number;
}

interface Pending {
  id: number;
  method: string;
  request: Uint8Array;
  timeoutMs: number;
  resolve: (response: Uint8Array) => void;
  reject: (e: Error) => void;
}

interface Reply {
  id?: number;
  response?: Uint8Array;
  error?: string;
  memory?: number;
  ready?: boolean;
  exited?: string | boolean;
}

/** A call is stopped after this many times its limit in wall-clock time, whatever the CPU says. */
export const WALL_CEILING_FACTOR = 6;

/** The process's CPU time so far, in milliseconds (every thread, the workers' included). */
export type CpuClock = () => number;

const processCpuMs: CpuClock = () => {
  const usage = process.cpuUsage();
  return (usage.user + usage.system) / 1000;
};

/** A worker whose Go heap grew past this is replaced after its call (wasm memory never shrinks). */
const MEMORY_RECYCLE_BYTES = 512 * 1024 * 1024;

/** A compiled WebAssembly.Module (opaque here: posted to the worker as is). */
type CompiledModule = object;
const wasm = (globalThis as unknown as { WebAssembly: { compile(bytes: Uint8Array): Promise<CompiledModule> } }).WebAssembly;

let compiled: Promise<CompiledModule> | undefined;

/** The module compiled once per process (decompressing and compiling: see bench/). */
export function compiledModule(): Promise<CompiledModule> {
  compiled ??= (async () => {
    const bytes = gunzipSync(readFileSync(new URL("gitops-broker.wasm.gz", WASM_DIR)));
    return wasm.compile(bytes);
  })();
  return compiled;
}

/**
 * One worker, one call at a time (the Go program is single-threaded); calls queue in order.
 * The worker does not keep the process alive while idle.
 */
export class WasmHost {
  private worker: Worker | undefined;
  private ready: Promise<Worker> | undefined;
  private readonly queue: Pending[] = [];
  private current: { call: Pending; timer: NodeJS.Timeout; worker: Worker } | undefined;
  /** A call is taken off the queue and waits for the worker: no other may be sent meanwhile. */
  private dispatching = false;
  private nextId = 1;
  private closed = false;

  /**
   * Injected for tests: the CPU clock (the process's by default) and the wall-clock ceiling.
   * `sharedBy`: how many hosts of its pool are running a call (itself included). The process's CPU
   * time is all its threads', so with several workers a call is charged its share: the time spent
   * since it started divided by that number at each check (a runaway next to idle workers is
   * charged everything the process spent).
   */
  constructor(
    private readonly cpuMs: CpuClock = processCpuMs,
    private readonly wallCeilingFactor = WALL_CEILING_FACTOR,
    private readonly sharedBy: () => number = () => 1,
  ) {}

  /** A call is running or being sent to the worker. */
  get busy(): boolean {
    return this.current !== undefined || this.dispatching;
  }

  /** Calls waiting and running. */
  get load(): number {
    return this.queue.length + (this.busy ? 1 : 0);
  }

  call(method: string, request: Uint8Array, options: WasmCallOptions): Promise<Uint8Array> {
    if (this.closed) return Promise.reject(new WasmCallError("the module host is closed", "exited"));
    return new Promise((resolve, reject) => {
      this.queue.push({ id: this.nextId++, method, request, timeoutMs: options.timeoutMs, resolve, reject });
      this.pump();
    });
  }

  /** Terminates the worker; pending calls fail. */
  async close(): Promise<void> {
    this.closed = true;
    for (const call of this.queue.splice(0)) call.reject(new WasmCallError("the module host is closed", "exited"));
    if (this.current) {
      clearTimeout(this.current.timer);
      this.current.call.reject(new WasmCallError("the module host is closed", "exited"));
      this.current = undefined;
    }
    const worker = this.worker;
    this.worker = undefined;
    this.ready = undefined;
    if (worker) await worker.terminate();
  }

  private pump(): void {
    if (this.current !== undefined || this.dispatching || this.queue.length === 0 || this.closed) return;
    const call = this.queue.shift()!;
    this.dispatching = true;
    this.start().then(
      (worker) => {
        this.dispatching = false;
        if (this.closed) {
          call.reject(new WasmCallError("the module host is closed", "exited"));
          return;
        }
        worker.ref();
        this.current = { call, timer: this.limit(worker, call), worker };
        // The request is copied: the caller may reuse its buffer.
        worker.postMessage({ id: call.id, method: call.method, request: call.request });
      },
      (e: unknown) => {
        this.dispatching = false;
        call.reject(toError(e));
        this.pump();
      },
    );
  }

  /** The timer that stops `call` once it has had its CPU time (or the wall-clock ceiling passed). */
  private limit(worker: Worker, call: Pending): NodeJS.Timeout {
    const startCpu = this.cpuMs();
    const startWall = performance.now();
    const ceiling = call.timeoutMs * this.wallCeilingFactor;
    const check = (): void => {
      const current = this.current;
      if (current === undefined || current.call !== call) return;
      const cpu = (this.cpuMs() - startCpu) / Math.max(1, this.sharedBy());
      const wall = performance.now() - startWall;
      if (cpu >= call.timeoutMs || wall >= ceiling) {
        this.fail(worker, new WasmCallError(`did not finish within ${call.timeoutMs} ms`, "timeout"));
        return;
      }
      // The machine gave the call less CPU than its limit so far: wait for the rest.
      current.timer = setTimeout(check, Math.min(Math.max(call.timeoutMs - cpu, 25), ceiling - wall));
    };
    return setTimeout(check, call.timeoutMs);
  }

  private start(): Promise<Worker> {
    this.ready ??= compiledModule().then(
      (module) =>
        new Promise<Worker>((resolve, reject) => {
          const worker = new Worker(fileURLToPath(new URL("worker.js", WASM_DIR)), { workerData: { module } });
          this.worker = worker;
          worker.on("message", (reply: Reply) => {
            if (reply.ready) {
              worker.unref();
              resolve(worker);
            } else this.onReply(worker, reply);
          });
          worker.on("error", (e) => {
            reject(e);
            this.fail(worker, new WasmCallError(`the module's worker failed: ${e.message}`, "exited"));
          });
          worker.on("exit", () => {
            reject(new WasmCallError("the module's worker exited while starting", "exited"));
            this.fail(worker, new WasmCallError("the module's worker exited", "exited"));
          });
        }),
    );
    return this.ready;
  }

  private onReply(worker: Worker, reply: Reply): void {
    const current = this.current;
    if (reply.id === undefined || current === undefined || current.worker !== worker || current.call.id !== reply.id) {
      // The Go program exited between calls: the next call starts another worker.
      if (reply.exited) this.retire(worker);
      return;
    }
    clearTimeout(current.timer);
    this.current = undefined;
    worker.unref();
    if (reply.error !== undefined) current.call.reject(new WasmCallError(reply.error, reply.exited ? "exited" : "error"));
    else current.call.resolve(reply.response ?? new Uint8Array());
    if (reply.exited || (reply.memory ?? 0) > MEMORY_RECYCLE_BYTES) this.retire(worker);
    this.pump();
  }

  /** The worker's current call fails with `error`; the worker is replaced. */
  private fail(worker: Worker, error: WasmCallError): void {
    const current = this.current;
    if (current !== undefined && current.worker === worker) {
      clearTimeout(current.timer);
      this.current = undefined;
      current.call.reject(error);
    }
    this.retire(worker);
    this.pump();
  }

  private retire(worker: Worker): void {
    if (this.worker === worker) {
      this.worker = undefined;
      this.ready = undefined;
    }
    worker.removeAllListeners("message");
    void worker.terminate();
  }
}

/** What renders call: one host, or a pool of them. */
export interface ModuleHost {
  call(method: string, request: Uint8Array, options: WasmCallOptions): Promise<Uint8Array>;
  close(): Promise<void>;
}

/**
 * `size` hosts, each with its worker thread: a call goes to the host with the fewest calls waiting
 * or running (the first of them on a tie), so calls made together run in parallel, up to `size`.
 */
export class WasmPool implements ModuleHost {
  private readonly hosts: WasmHost[];
  private inFlight = 0;
  private retiring = false;

  constructor(
    readonly size: number,
    makeHost: (sharedBy: () => number) => WasmHost = (sharedBy) => new WasmHost(processCpuMs, WALL_CEILING_FACTOR, sharedBy),
  ) {
    const busy = () => this.hosts.filter((h) => h.busy).length;
    this.hosts = Array.from({ length: Math.max(1, Math.floor(size)) }, () => makeHost(busy));
  }

  call(method: string, request: Uint8Array, options: WasmCallOptions): Promise<Uint8Array> {
    const host = this.hosts.reduce((best, h) => (h.load < best.load ? h : best));
    this.inFlight++;
    return host.call(method, request, options).finally(() => {
      this.inFlight--;
      if (this.retiring && this.inFlight === 0) void this.close();
    });
  }

  /** Closes the pool once the calls made so far are answered (a pool of another size took its place). */
  retire(): void {
    this.retiring = true;
    if (this.inFlight === 0) void this.close();
  }

  async close(): Promise<void> {
    await Promise.all(this.hosts.map((h) => h.close()));
  }
}

let workers = 1;
let shared: WasmPool | undefined;

/** The process's pool, created on first use with `setModuleWorkers`' size (1 by default). */
export function wasmHost(): ModuleHost {
  shared ??= new WasmPool(workers);
  return shared;
}

/**
 * How many worker threads run the module's calls from now on (at least 1); returns the previous
 * number. A pool of another size already made answers the calls it has and then closes.
 */
export function setModuleWorkers(n: number): number {
  const previous = workers;
  workers = Math.max(1, Math.floor(n));
  if (shared !== undefined && shared.size !== workers) {
    shared.retire();
    shared = undefined;
  }
  return previous;
}
