import type { TreeReader } from "../gitwriter/index.js";
import { latestOperation, readBinding, readInstance, type BindingRecord, type InstanceRecord, type OperationEntry } from "../repo/index.js";
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

/**
 * Waits (within the status watcher's bound) until the status of `operation` is judged from a
 * complete view of its cluster: after a restart, an answer never goes back to "in progress" for
 * what was "succeeded" before (ADR 0012). At once in commit mode.
 */
export async function settled(ctx: Ctx, instance: InstanceRecord, binding: BindingRecord | undefined, operation: OperationEntry | undefined): Promise<void> {
  if (operation && ctx.deps.status.settle && ctx.deps.status.observing?.()) await ctx.deps.status.settle(instance, binding, operation);
}

/**
 * Before an operation is queued: settles the latest operations of the instance (and binding) it
 * will look at, so that the queued operation judges "in progress" from a complete view (it must
 * not wait inside the queue). No read at all unless a cluster is observed live.
 */
export async function settleLatest(ctx: Ctx, instanceId: string, bindingId?: string): Promise<void> {
  if (!ctx.deps.status.settle || !ctx.deps.status.observing?.()) return;
  const tree = ctx.deps.writer.snapshot();
  const instance = await readInstance(tree, instanceId);
  if (!instance) return;
  await settled(ctx, instance, undefined, latestOperation(instance.status.operations));
  if (bindingId === undefined) return;
  const binding = await readBinding(tree, instanceId, bindingId);
  if (binding) await settled(ctx, instance, binding, latestOperation(binding.status.operations));
}
