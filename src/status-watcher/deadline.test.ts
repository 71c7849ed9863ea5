import { describe, expect, it } from "vitest";
import type { Plan } from "../catalog/index.js";
import type { OperationEntry } from "../repo/index.js";
import { deadlineOf, pastDeadline } from "./deadline.js";
import type { OperationStatus } from "./types.js";

const plan = { name: "medium", maximumPollingDuration: 60 } as Plan;
const at = "2026-03-01T10:00:00Z";
const received = Date.parse(at);
const operation: OperationEntry = { id: "op-1", action: "provision", at };

describe("deadlineOf", () => {
  it("counts the plan's maximum_polling_duration from this process's acknowledgement", () => {
    expect(deadlineOf(plan, operation, received + 2_000, 5_000)).toBe(received + 2_000 + 60_000);
  });

  it("without one, from the receipt plus the longest a request waits for its push", () => {
    expect(deadlineOf(plan, operation, undefined, 5_000)).toBe(received + 5_000 + 60_000);
  });

  it("never from before the receipt", () => {
    expect(deadlineOf(plan, operation, received - 30_000, 5_000)).toBe(received + 60_000);
  });

  it("none without a maximum_polling_duration, or a receipt time it can read", () => {
    expect(deadlineOf({ name: "small" } as Plan, operation, received, 0)).toBeUndefined();
    expect(deadlineOf(plan, { ...operation, at: "yesterday" }, received, 0)).toBeUndefined();
  });
});

describe("pastDeadline", () => {
  const waiting: OperationStatus = { state: "in progress", description: "waiting for it to report healthy" };
  const deadline = received + 60_000;

  it("fails an operation still in progress at its deadline, saying which and why it waited", () => {
    expect(pastDeadline(waiting, plan, operation, deadline, deadline)).toEqual({
      state: "failed",
      description: "provision did not finish within the plan's maximum_polling_duration (60 s): waiting for it to report healthy",
    });
  });

  it("leaves it before the deadline, without one, provisional (the view is incomplete), or finished", () => {
    expect(pastDeadline(waiting, plan, operation, deadline, deadline - 1)).toBe(waiting);
    expect(pastDeadline(waiting, plan, operation, undefined, deadline)).toBe(waiting);
    const provisional = { ...waiting, provisional: true };
    expect(pastDeadline(provisional, plan, operation, deadline, deadline + 1)).toBe(provisional);
    const done: OperationStatus = { state: "succeeded" };
    expect(pastDeadline(done, plan, operation, deadline, deadline + 1)).toBe(done);
  });
});
