import { rm } from "node:fs/promises";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { createBareRemote, createTempDir, gitLog } from "../../test/support/git-fixtures.js";
import { repoFiles } from "../../test/support/repo-files.js";
import { createGitWriter, type GitWriter } from "../gitwriter/index.js";
import { routedWriter } from "../stores/index.js";
import { silentLogger } from "../log/index.js";
import { writeInstance } from "../repo/index.js";
import { provisionedRecord, SAMPLE_SMALL_PLAN_ID } from "../../test/support/records.js";
import { createRepoView, type LiveRepoView } from "../catalog/index.js";
import { createReconciler, type Reconciler } from "./reconciler.js";
import { EVENT_CEILING_MS } from "../../test/support/processes.js";

const SMALL = SAMPLE_SMALL_PLAN_ID;

let root: string;
let remote: string;
let writer: GitWriter;
let view: LiveRepoView;
let reconciler: Reconciler | undefined;

beforeEach(async () => {
  root = await createTempDir();
  remote = await createBareRemote(root, "remote.git", await repoFiles([{ id: "local" }]));
  writer = createGitWriter({
    gitdir: path.join(root, "work.git"),
    remoteUrl: remote,
    branch: "main",
    author: { name: "t", email: "t@example.com" },
    logger: silentLogger(),
  });
  await writer.start();
  view = createRepoView(writer, silentLogger());
  await view.reload();
});
afterEach(async () => {
  await reconciler?.close();
  reconciler = undefined;
  view.close();
  await writer.close();
  await rm(root, { recursive: true, force: true });
});

async function seed(ids: string[]): Promise<void> {
  await writer.submit(async (draft) => {
    for (const id of ids) writeInstance(draft, provisionedRecord(id));
    return { commit: { subject: "records", trailers: {} }, result: null };
  });
}

describe("createReconciler", () => {
  it("submits a mass re-render in batches, waiting between them for the rate", async () => {
    const ids = Array.from({ length: 10 }, (_, i) => `r-${i}`);
    await seed(ids);
    let inFlight = 0;
    let maxInFlight = 0;
    const counting: GitWriter = Object.create(writer) as GitWriter;
    counting.submit = async (op) => {
      maxInFlight = Math.max(maxInFlight, ++inFlight);
      try {
        return await writer.submit(op);
      } finally {
        inFlight--;
      }
    };
    const waits: number[] = [];
    reconciler = createReconciler({
      writer: counting,
      routed: routedWriter(counting),
      view,
      status: { instanceStatus: () => ({ state: "succeeded" }) },
      logger: silentLogger(),
      brokerVersion: "v",
      maxPerSecond: 10,
      batchSize: 3,
      retryMs: 10,
      clock: () => 0,
      delay: async (ms) => {
        waits.push(ms);
      },
    });
    expect(await reconciler.rerenderPlan(SMALL, "manual")).toBe(10);
    await reconciler.idle();
    expect(maxInFlight).toBe(3);
    // Batches of 3, 3, 3, 1: a wait of 3 / 10 s after each but the last.
    expect(waits).toEqual([300, 300, 300]);
    const subjects = (await gitLog(remote)).map((c) => c.subject);
    expect(subjects.filter((s) => s.startsWith("re-render")).sort()).toEqual(ids.map((id) => `re-render postgresql/small instance ${id}`).sort());
  });

  it("close() ends the pause between batches: it does not wait out the rate", async () => {
    const ids = Array.from({ length: 4 }, (_, i) => `c-${i}`);
    await seed(ids);
    let paused!: () => void;
    const pausing = new Promise<void>((resolve) => (paused = resolve));
    reconciler = createReconciler({
      writer,
      routed: routedWriter(writer),
      view,
      status: { instanceStatus: () => ({ state: "succeeded" }) },
      logger: silentLogger(),
      brokerVersion: "v",
      maxPerSecond: 1,
      batchSize: 2,
      retryMs: 10,
      // Time stands still: however slow the first batch's commits, a pause follows it.
      clock: () => 0,
      // A pause that only close() can end.
      delay: () => {
        paused();
        return new Promise<void>(() => undefined);
      },
    });
    expect(await reconciler.rerenderPlan(SMALL, "manual")).toBe(4);
    await pausing;
    await reconciler.close();
    // The first batch was committed; the second was dropped with the queue.
    const rerendered = (await gitLog(remote)).filter((c) => c.subject.startsWith("re-render"));
    expect(rerendered).toHaveLength(2);
  });

  it("skips an instance with an operation in progress and retries it until it is done", async () => {
    await seed(["busy-1"]);
    let busy = true;
    let asked = 0;
    reconciler = createReconciler({
      writer,
      routed: routedWriter(writer),
      view,
      status: {
        instanceStatus: () => {
          asked++;
          return { state: busy ? "in progress" : "succeeded" };
        },
      },
      logger: silentLogger(),
      brokerVersion: "v",
      maxPerSecond: 1000,
      batchSize: 2,
      retryMs: 20,
    });
    const before = writer.snapshot().commit;
    expect(await reconciler.rerenderInstance("busy-1", "manual")).toBe(true);
    expect(await reconciler.rerenderInstance("nobody", "manual")).toBe(false);
    await vi.waitFor(() => expect(asked).toBeGreaterThanOrEqual(3), { timeout: EVENT_CEILING_MS, interval: 5 });
    expect(writer.snapshot().commit).toBe(before);
    busy = false;
    await reconciler.idle();
    const [head] = await gitLog(remote);
    expect(head?.subject).toBe("re-render postgresql/small instance busy-1");
    expect(head?.message).toMatch(/\n\nReason: manual\nInstance-Id: busy-1\nBroker-Version: v$/);
  });
});
