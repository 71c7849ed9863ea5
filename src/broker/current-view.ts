import type { TreeReader } from "../gitwriter/index.js";
import type { Ctx } from "./context.js";

/**
 * Reads for an answer from the last known remote tip; when the read finds nothing (the answer
 * would be "not found" or "gone"), fetches once and reads again: a replica may have written it
 * since this broker last fetched (ADR 0012). What exists costs no round trip.
 */
export async function readConfirmed<T>(ctx: Ctx, read: (tree: TreeReader) => Promise<T>, missing: (value: T) => boolean): Promise<T> {
  const before = ctx.deps.writer.snapshot();
  const first = await read(before);
  if (!missing(first)) return first;
  await ctx.deps.writer.refresh();
  const after = ctx.deps.writer.snapshot();
  return after.commit === before.commit ? first : read(after);
}
