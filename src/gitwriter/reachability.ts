import { GitRemoteError } from "../errors/index.js";
import type { GitWriterInstruments } from "../metrics/index.js";
import type { PieceLogger } from "./history-watch.js";

/**
 * Reachability, one of the writer's pieces: whether the last contact with the remote succeeded,
 * how many attempts of the current outage failed (their backoff), what the remote last said in
 * it, and since when the remote is known to hold the writer's tip (`viewAsOf`: the start of the
 * last successful fetch or push; ADR 0012 confirms refusals against it).
 */
export class Reachability {
  private reachable = true;
  private outages = 0;
  /** The last failure of the current outage that was not a command killed for want of an answer: what the remote said. */
  private lastTrouble: GitRemoteError | undefined;
  private confirmedAt = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly deps: {
      logger: PieceLogger;
      metrics: Pick<GitWriterInstruments, "fetched" | "remoteUp">;
      labels: { store: string };
      /** A fetch or push without an answer for this long makes the remote count as not answering. */
      activityTimeoutMs: number;
      /** How long the command in flight has waited for the remote (Remote.waitingMs). */
      waitingMs: () => number;
    },
  ) {}

  /** Why the remote does not count as reachable; undefined when it does. */
  get trouble(): string | undefined {
    if (!this.reachable) return "last contact with the Git remote failed";
    const waiting = this.deps.waitingMs();
    if (waiting > this.deps.activityTimeoutMs) {
      return `the Git remote has not answered for ${Math.floor(waiting / 1000)} s (activity timeout ${this.deps.activityTimeoutMs / 1000} s)`;
    }
    return undefined;
  }

  /** performance.now() since when the remote is known to hold the tip the writer has. */
  get viewAsOf(): number {
    return this.confirmedAt;
  }

  /** The remote answered (a fetch or push that started at `startedAt` succeeded: it held the tip then). */
  reached(startedAt?: number): void {
    if (startedAt !== undefined) this.confirmedAt = Math.max(this.confirmedAt, startedAt);
    if (!this.reachable) this.deps.logger.info({ after: this.outages }, "git remote reachable again");
    this.reachable = true;
    this.outages = 0;
    this.lastTrouble = undefined;
    this.deps.metrics.fetched.mark(this.deps.labels);
    this.deps.metrics.remoteUp.set(1, this.deps.labels);
  }

  /** A contact failed; what the remote said is kept unless the command was killed for want of an answer. */
  failed(error: unknown): void {
    this.reachable = false;
    this.deps.metrics.remoteUp.set(0, this.deps.labels);
    if (error instanceof GitRemoteError && !error.timedOut) this.lastTrouble = error;
  }

  /** One more failed attempt of the current outage; resolves with its number (for the backoff). */
  attempt(): number {
    this.outages += 1;
    return this.outages;
  }

  /** `error`, with what the remote said before when it is only a command killed for want of an answer. */
  explain(error: GitRemoteError): GitRemoteError {
    if (!error.timedOut || this.lastTrouble === undefined || error.remoteMessage.includes(this.lastTrouble.remoteMessage)) return error;
    return new GitRemoteError("unreachable", `${error.remoteMessage}; before that: ${this.lastTrouble.remoteMessage}`, {
      repository: error.repository,
      timedOut: true,
    });
  }

  /** "; it last said: ..." for a message about an outage, or "". */
  lastSaid(): string {
    return this.lastTrouble ? `; it last said: ${this.lastTrouble.remoteMessage}` : "";
  }
}
