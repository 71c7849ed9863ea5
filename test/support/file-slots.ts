/**
 * Test files in flight on the machine, counted across every run of the suite on it (ADR 0039).
 *
 * vitest sizes its pool per run (maxWorkers: cores + 2). The suite is bound by the machine's CPU,
 * not by its workers (three workers did as well as four, ADR 0019), so a second run beside the
 * first (another checkout, another CI job on the same runner) doubles the files in flight without
 * doing more work per minute: each file takes twice as long, and the tests whose subject is a
 * bound (a push timeout, a lease, a connection limit) fail their bound. Every file therefore holds
 * one of `slotCount()` slots, shared by all runs of one user, before it starts.
 *
 * A slot is an flock(2) lock held by a small process (`flock`, from util-linux, then `cat` reading
 * the worker's pipe): released when the file ends, and by the kernel when the worker dies, however
 * it dies. Waiters queue on a turnstile lock; the one in it looks for a free slot once a second.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdirSync } from "node:fs";
import type { Socket } from "node:net";
import { availableParallelism, tmpdir } from "node:os";
import path from "node:path";

/**
 * Test files one run keeps in flight, vitest's `maxWorkers` (vitest.config.ts): two more than the
 * cores, since files wait on git processes, servers and timers (ADR 0019).
 */
export const FILES_PER_RUN = availableParallelism() + 2;

/** Slots on the machine (default: FILES_PER_RUN, one run's); 0: no limit. */
export const SLOTS_VARIABLE = "GITOPS_BROKER_TEST_SLOTS";

export function slotCount(env: NodeJS.ProcessEnv = process.env): number {
  const given = env[SLOTS_VARIABLE];
  if (given === undefined || given === "") return FILES_PER_RUN;
  const count = Number(given);
  if (!Number.isInteger(count) || count < 0) throw new Error(`${SLOTS_VARIABLE}=${given}: a whole number of test files at once (0: no limit)`);
  return count;
}

/** Where the locks of one user's runs live. */
export function slotDir(): string {
  return path.join(tmpdir(), `gitops-broker-test-slots-${process.getuid?.() ?? "user"}`);
}

// $1 directory, $2 slots. Prints the slot's number once it holds it, then holds it until stdin
// closes. fd 8: the turnstile; fd 9: the slot, inherited by cat (the lock lives as long as cat).
const HOLDER = `
exec 8>"$1/turnstile"
flock 8
while :; do
  i=0
  while [ "$i" -lt "$2" ]; do
    exec 9>"$1/slot-$i"
    if flock -n 9; then
      exec 8>&-
      echo "$i"
      exec cat >/dev/null
    fi
    exec 9>&-
    i=$((i + 1))
  done
  sleep 1
done
`;

export interface Slot {
  number: number;
  /** Lets the slot go; resolves once another file may take it. */
  release(): Promise<void>;
}

/**
 * Resolves once this process holds one of `count` slots in `dir`. `onWait` is called once if no
 * slot is free within `waitNoticeMs` (other runs hold them all).
 */
export function acquireSlot({ dir = slotDir(), count = slotCount(), waitNoticeMs = 5_000, onWait }: { dir?: string; count?: number; waitNoticeMs?: number; onWait?: (count: number) => void } = {}): Promise<Slot> {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const holder: ChildProcess = spawn("sh", ["-c", HOLDER, "slot-holder", dir, String(count)], { stdio: ["pipe", "pipe", "inherit"] });
  // The holder must not keep the worker alive, nor its pipes its event loop.
  holder.unref();
  return new Promise<Slot>((resolve, reject) => {
    const notice = setTimeout(() => onWait?.(count), waitNoticeMs);
    notice.unref();
    let out = "";
    const exited = new Promise<void>((done) => holder.once("exit", () => done()));
    holder.once("error", (error) => {
      clearTimeout(notice);
      reject(error);
    });
    holder.once("exit", (code, signal) => {
      clearTimeout(notice);
      reject(new Error(`the test-file slot holder (flock, util-linux) exited before it held a slot: ${signal ?? `exit ${code}`}`));
    });
    holder.stdout!.on("data", (chunk: Buffer) => {
      out += chunk.toString("utf8");
      if (!out.includes("\n")) return;
      clearTimeout(notice);
      (holder.stdout as Socket).unref();
      (holder.stdin as Socket).unref();
      resolve({
        number: Number(out.trim()),
        release: async () => {
          holder.stdin!.end();
          await exited;
        },
      });
    });
  });
}

let held: Slot | undefined;

/** For the setup of every file: one slot per worker, kept from a file whose end did not release it. */
export async function holdFileSlot(): Promise<void> {
  if (held !== undefined || slotCount() === 0) return;
  held = await acquireSlot({
    onWait: (count) => process.stderr.write(`waiting for one of the machine's ${count} test-file slots: other test files, of this run or another, hold them (${SLOTS_VARIABLE}, ADR 0039)\n`),
  });
}

export async function releaseFileSlot(): Promise<void> {
  const slot = held;
  held = undefined;
  await slot?.release();
}
