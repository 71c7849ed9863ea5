/**
 * What the real-agent tests wait on: an assertion that holds eventually, and an OSB operation that
 * is no longer in progress (last_operation through the broker the test started).
 */
import { expect, vi } from "vitest";
import type { OsbClient } from "../support/osb-client.js";
import { EVENT_CEILING_MS } from "../support/processes.js";

export const eventually = <T>(assertion: () => Promise<T>, timeout = EVENT_CEILING_MS): Promise<T> => vi.waitFor(assertion, { timeout, interval: 200 });

export interface OperationWaits {
  lastOperation(instanceId: string, operation?: string): Promise<{ state: string; description?: string }>;
  /** Polls last_operation until it is no longer in progress; resolves with the answer. */
  finished(instanceId: string, operation: string, timeout?: number): Promise<{ state: string; description?: string }>;
}

/** `osb` gives the client made in beforeAll; `logs` the agent's logs, shown when an operation stays in progress. */
export function operationWaits(osb: () => OsbClient, logs: () => string): OperationWaits {
  const lastOperation = async (instanceId: string, operation?: string) => {
    const res = await osb().lastOperation(instanceId, operation ? { operation } : undefined);
    expect(res.status).toBe(200);
    return res.body as { state: string; description?: string };
  };
  const finished = (instanceId: string, operation: string, timeout = EVENT_CEILING_MS) =>
    eventually(async () => {
      const answer = await lastOperation(instanceId, operation);
      // The agent's logs first: a CI log keeps the message's tail, which says what the broker waits for.
      expect(answer.state, `${logs()}\n\nlast_operation of ${instanceId} (${operation}): ${answer.description}`).not.toBe("in progress");
      return answer;
    }, timeout);
  return { lastOperation, finished };
}
