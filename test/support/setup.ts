/**
 * Runs in every test file (vitest `setupFiles`): after the file, no process it started is left
 * running and no temporary directory it made is left behind, whether its tests passed, failed or
 * timed out (see processes.ts).
 */
import { afterAll, beforeAll } from "vitest";
import { cleanUp, reopen } from "./processes.js";

beforeAll(reopen);
afterAll(cleanUp);
