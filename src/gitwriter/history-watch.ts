import type { GitWriterInstruments } from "../metrics/index.js";
import type { LostCommit } from "./remote.js";
import type { HistoryRewrite } from "./types.js";

/** The logger the writer's pieces need (a pino logger fits). */
export interface PieceLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

/**
 * History-rewrite detection, one of the writer's pieces (ADR 0013): called when a fetch moves the
 * tip from `previous` to `tip`. A tip that does not descend from `previous` means a force-push
 * erased commits, acknowledged operations among them: logged as an error naming them, and kept in
 * `rewrite` until they are on the branch again (or the process restarts). The writer follows the
 * remote either way (it is the system of record).
 */
export class HistoryWatch {
  private current: HistoryRewrite | undefined;

  constructor(
    private readonly deps: {
      /** Commits reachable from `previous` but not from `tip` (Remote.lostCommits). */
      lostCommits: (previous: string, tip: string, max?: number) => Promise<LostCommit[]>;
      logger: PieceLogger;
      metrics: Pick<GitWriterInstruments, "lostCommits">;
      labels: { store: string };
      now: () => Date;
    },
  ) {}

  /** The last rewrite that erased commits, while they are still missing from the branch. */
  get rewrite(): HistoryRewrite | undefined {
    return this.current;
  }

  async check(previous: string, tip: string): Promise<void> {
    const { lostCommits, logger, metrics, labels } = this.deps;
    try {
      if (this.current !== undefined && (await lostCommits(this.current.previousTip, tip, 1)).length === 0) {
        logger.info({ tip, previousTip: this.current.previousTip }, "the commits erased by the history rewrite are on the branch again");
        this.current = undefined;
        metrics.lostCommits.set(0, labels);
      }
      const lost = await lostCommits(previous, tip);
      if (lost.length === 0) return;
      const lostInstances = [...new Set(lost.flatMap((c) => c.instanceIds))];
      this.current = { noticedAt: this.deps.now().toISOString(), previousTip: previous, tip, lostCommits: lost, lostInstances };
      metrics.lostCommits.set(lost.length, labels);
      const fields = { previousTip: previous, tip, lostCommits: lost.map((c) => c.commit), lostInstances };
      if (lostInstances.length > 0) {
        logger.error(fields, "the remote branch was rewritten: acknowledged operations are gone from it; following the remote");
      } else {
        logger.warn(fields, "the remote branch was rewritten: commits are gone from it; following the remote");
      }
    } catch (error) {
      logger.warn({ err: error, previousTip: previous, tip }, "cannot tell whether the remote branch was rewritten");
    }
  }
}
