import { defineConfig } from "vitest/config";
import { FILES_PER_RUN } from "./test/support/file-slots.js";

export default defineConfig({
  test: {
    include: ["src/**/*.test.ts", "test/**/*.test.ts"],
    // Ceilings for a hang, not budgets: a test that passes in 2 s on a quiet machine takes 40 s on
    // one loaded ten times over. Waits inside tests have their own ceilings with a message; files
    // that start broker processes set longer timeouts (PROCESS_TEST_TIMEOUT_MS, test/support/processes.ts).
    testTimeout: 180_000,
    hookTimeout: 180_000,
    pool: "forks",
    // One module graph per worker, not per file: the sources, express, ajv, client-node ... are
    // loaded once per worker instead of once per file (import time summed over the files: 84 s
    // -> 21 s for test/broker). No test mocks modules, stubs globals or changes the environment.
    isolate: false,
    // Two more files at a time than there are cores (vitest's default is one fewer): files wait
    // on git processes, servers, timers and bounds they test, so on 2 cores the default of one
    // file at a time left a core idle, and 4 beat 3 (ADR 0019). Also the machine's default number
    // of test-file slots, shared by every run on it (ADR 0039).
    maxWorkers: FILES_PER_RUN,
    // Workers without V8's optimizing compiler: a test runs most code a few times, and compiling
    // what got warm (on background threads, a third as much CPU again as the workers' main threads)
    // rarely paid back (ADR 0019, "workers without the optimizing compiler"). Brokers started as
    // processes are not workers.
    execArgv: ["--no-opt"],
    // Before the files: dist/ built when stale, so spawned brokers run the compiled build.
    globalSetup: ["test/support/global-setup.ts"],
    // After each file: every process it started is killed, every temp directory removed.
    setupFiles: ["test/support/setup.ts"],
  },
});
