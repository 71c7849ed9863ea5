import { describe, expect, it } from "vitest";
import { startProcess, stillOurs, stopProcesses, waitUntil } from "./processes.js";

/**
 * Process groups are killed by number only while the number is still the group this file started
 * (test/support/processes.ts): once a group is empty the kernel hands its number out again.
 */

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe("process groups", () => {
  it("forget a group whose leader exited alone: its number may be someone else's by the clean-up", async () => {
    const p = startProcess("sh", ["-c", "exit 0"]);
    await p.exited;
    expect(stillOurs(p.pid)).toBe(false);
  });

  it("keep a group whose leader was killed alone while a process it started runs, and kill that process at the clean-up", async () => {
    // The shell starts a sleep in its own group and says its pid; then only the shell is killed.
    const p = startProcess("sh", ["-c", "sleep 300 & echo $!; wait"]);
    const child = Number(await p.waitForLine((l) => /^\d+$/.test(l), "the sleep's pid"));
    p.signal("SIGKILL");
    await p.exited;
    expect(alive(child)).toBe(true);
    expect(stillOurs(p.pid)).toBe(true);
    await stopProcesses();
    await waitUntil(() => !alive(child), "the sleep left behind killed");
    expect(stillOurs(p.pid)).toBe(false);
  });
});
