import { rm } from "node:fs/promises";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createRepoView } from "../../src/catalog/index.js";
import { createGitWriter, type GitWriter } from "../../src/gitwriter/index.js";
import { routedWriter } from "../../src/stores/index.js";
import { createLogger, silentLogger, type Logger } from "../../src/log/index.js";
import { createReconciler } from "../../src/reconcile/index.js";
import { writeInstance } from "../../src/repo/index.js";
import { provisionedRecord, SAMPLE_SMALL_PLAN_ID } from "../support/records.js";
import { createBareRemote, createTempDir } from "../support/git-fixtures.js";
import { repoFiles } from "../support/repo-files.js";

/**
 * Long work says how far it got: progress lines with counts during a cold start (reading every
 * instance record) and a mass re-render, at most one per interval of the injected clock, and
 * none for work that ends within the first interval.
 */

const SMALL = SAMPLE_SMALL_PLAN_ID;

type Line = Record<string, unknown> & { msg: string };

/** A logger whose lines land in `lines` as they are written (a synchronous destination). */
function capturing(): { logger: Logger; lines: Line[] } {
  const lines: Line[] = [];
  const destination = { write: (text: string) => void lines.push(JSON.parse(text) as Line) };
  return { logger: createLogger({ level: "info", destination }), lines };
}

/** A clock that moves `step` ms each time it is read. */
function steppingClock(step: number): { now: () => number } {
  let t = 0;
  return { now: () => (t += step) };
}

let root: string;
let writer: GitWriter;

async function repository(instances: number): Promise<void> {
  const remote = await createBareRemote(root, `remote-${instances}.git`, await repoFiles([{ id: "local" }]));
  writer = createGitWriter({ gitdir: path.join(root, `work-${instances}.git`), remoteUrl: remote, branch: "main", author: { name: "t", email: "t@example.com" }, logger: silentLogger() });
  await writer.start();
  await writer.submit(async (draft) => {
    for (let i = 0; i < instances; i++) writeInstance(draft, provisionedRecord(`i-${i}`));
    return { commit: { subject: "records", trailers: {} }, result: null };
  });
}

beforeEach(async () => {
  root = await createTempDir("gitops-broker-progress-");
});
afterEach(async () => {
  await writer?.close();
  await rm(root, { recursive: true, force: true });
});

describe("cold start progress", () => {
  const MSG = "cold start: reading the instance records";

  it("logs how many records were read of how many, once per interval, on a large repository", async () => {
    await repository(1000);
    const { logger, lines } = capturing();
    // One clock read per record read: 1,000 reads, a line at most every 100.
    const view = createRepoView(writer, logger, undefined, {}, { progress: { everyMs: 100, ...steppingClock(1) } });
    await view.reload();
    view.close();
    const progress = lines.filter((l) => l.msg === MSG);
    expect(progress.length).toBeGreaterThanOrEqual(8);
    expect(progress.length).toBeLessThanOrEqual(10);
    for (const l of progress) expect(l).toMatchObject({ level: 30, total: 1000 });
    const loaded = progress.map((l) => l.loaded as number);
    for (let i = 1; i < loaded.length; i++) expect(loaded[i]! - loaded[i - 1]!).toBeGreaterThanOrEqual(100);
    expect(loaded.at(-1)).toBeLessThanOrEqual(1000);
  });

  it("logs no progress for a small repository", async () => {
    await repository(20);
    const { logger, lines } = capturing();
    const view = createRepoView(writer, logger, undefined, {}, { progress: { everyMs: 100, ...steppingClock(1) } });
    await view.reload();
    view.close();
    const all = lines;
    expect(all.some((l) => l.msg === "repository view loaded")).toBe(true);
    expect(all.filter((l) => l.msg === MSG)).toEqual([]);
  });
});

describe("mass re-render progress", () => {
  async function rerenderAll(instances: number): Promise<Line[]> {
    await repository(instances);
    const view = createRepoView(writer, silentLogger());
    await view.reload();
    const { logger, lines } = capturing();
    const reconciler = createReconciler({
      writer,
      routed: routedWriter(writer),
      view,
      status: { instanceStatus: () => ({ state: "succeeded" }) },
      logger,
      brokerVersion: "v",
      maxPerSecond: 1000,
      batchSize: 4,
      retryMs: 10,
      // Three clock reads per batch: 300 ms of the clock per batch, a line at most every 500.
      clock: steppingClock(100).now,
      progressEveryMs: 500,
      delay: async () => undefined,
    });
    try {
      expect(await reconciler.rerenderPlan(SMALL, "manual")).toBe(instances);
      await reconciler.idle();
    } finally {
      await reconciler.close();
      view.close();
    }
    return lines.filter((l) => l.msg === "re-rendering");
  }

  it("logs how many are done and left, once per interval", async () => {
    const progress = await rerenderAll(24);
    // Six batches of four: lines after the 2nd, 4th and 6th.
    expect(progress.map((l) => [l.done, l.left])).toEqual([[8, 16], [16, 8], [24, 0]]);
  });

  it("logs no progress for a re-render that ends within the first interval", async () => {
    expect(await rerenderAll(3)).toEqual([]);
  });
});
