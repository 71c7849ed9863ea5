/**
 * Pushes in doubt, one of the writer's pieces (ADR 0005's addendum of 2026-11-29): a push that got
 * no verdict after it may have delivered its pack (GitRemoteError.inDoubt), so the remote may
 * still take `commit`. Its operations keep their place in the queue and are answered when the
 * remote's branch tells: acknowledged with what they answered then when a fetched tip holds
 * `commit`; run again when the branch moved elsewhere (the remote moves a branch only from the old
 * tip a push names); carried by the next push of ours otherwise. All doubts are on one base, the
 * remote tip when they failed.
 */
export class PushDoubts<E, O> {
  private doubts: { commit: string; outcomes: Map<E, O> }[] = [];

  get size(): number {
    return this.doubts.length;
  }

  /** Whether `entry` is in a push in doubt: it is answered only once the remote tells. */
  has(entry: E): boolean {
    return this.doubts.some((d) => d.outcomes.has(entry));
  }

  record(commit: string, outcomes: Map<E, O>): void {
    this.doubts.push({ commit, outcomes });
  }

  /** The branch moved from the doubts' base by a push of ours: none of them can land any more. */
  clear(): void {
    this.doubts = [];
  }

  /**
   * The branch moved to `tip` (a fetch): the outcomes of the pushes in doubt that it holds
   * (`holds(commit, tip)`: commit is `tip` or one of its ancestors); the others can never land.
   * Clears the doubts either way.
   */
  async settle(tip: string | null, holds: (commit: string, tip: string) => Promise<boolean>): Promise<Map<E, O>> {
    const doubts = this.doubts;
    this.doubts = [];
    const landed = new Map<E, O>();
    if (tip === null) return landed;
    for (const doubt of doubts) {
      if (await holds(doubt.commit, tip).catch(() => false)) for (const [entry, outcome] of doubt.outcomes) landed.set(entry, outcome);
    }
    return landed;
  }
}
