import { spawn } from "node:child_process";
import { once } from "node:events";
import fs from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { createTempDir } from "./git-fixtures.js";
import { removeAbandonedRunDirs } from "./global-setup.js";

describe("removeAbandonedRunDirs", () => {
  it("removes the directories of runs whose process is gone, and keeps live runs' and others'", async () => {
    const parent = await createTempDir("run-dirs-");
    const gone = spawn(process.execPath, ["-e", ""], { stdio: "ignore" });
    await once(gone, "exit");
    const abandoned = path.join(parent, `gitops-broker-run-${gone.pid!}-a1B2c3`);
    const live = path.join(parent, `gitops-broker-run-${process.pid}-d4E5f6`);
    const other = path.join(parent, `gitops-broker-${gone.pid!}-g7H8i9`);
    for (const dir of [abandoned, live, other]) await fs.mkdir(path.join(dir, "remote.git"), { recursive: true });

    await removeAbandonedRunDirs(parent);

    expect((await fs.readdir(parent)).sort()).toEqual([path.basename(other), path.basename(live)].sort());
  });
});
