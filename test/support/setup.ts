/**
 * Runs in every test file (vitest `setupFiles`): before the file, a slot among the machine's test
 * files in flight across every run of the suite (file-slots.ts); after it, no process it started
 * is left running and no temporary directory it made is left behind, whether its tests passed,
 * failed or timed out (see processes.ts), and the slot is free again.
 */
import { afterAll, beforeAll } from "vitest";
import { holdFileSlot, releaseFileSlot } from "./file-slots.js";
import { cleanUp, reopen } from "./processes.js";

// At the top level, not in a hook: a wait for a slot is not part of any hook's timeout.
await holdFileSlot();

beforeAll(reopen);
afterAll(async () => {
  await cleanUp();
  await releaseFileSlot();
});
