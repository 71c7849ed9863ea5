/**
 * Rounds of OSB requests of every kind against one repository whose remote hangs, each timed
 * from the client, and what the answers must be: a write 503 with Retry-After naming the
 * repository ("nothing was changed"), a read of what is known 200, a read that needs the remote
 * 503 saying it was a read. Used by test/broker/remote-hang.test.ts (the control repository) and
 * test/stores/store-outage.test.ts (a store).
 */
import { setTimeout as sleep } from "node:timers/promises";
import { expect } from "vitest";
import type { OsbClient, OsbReply } from "./osb-client.js";

/**
 * The bound the docs give (git.pushTimeoutSeconds plus 2 s), plus room for a machine loaded 20x
 * (three suites at once: 21.4 s for a 10 s timeout).
 */
export function answerBoundMs(pushTimeoutSeconds: number): number {
  return (pushTimeoutSeconds + 2) * 1000 + 12_000;
}

export interface Timed {
  kind: string;
  /** A write (its 503 says nothing was changed) or a read of what is unknown (its 503 says it was a read); `known`: a read served without the remote. */
  expect: "write" | "read" | "known";
  /** The id the request created or changed (writes). */
  id: string;
  reply: OsbReply;
  ms: number;
}

export interface RoundTargets {
  serviceId: string;
  planId: string;
  /** An instance (with binding `binding`) in the hung repository. */
  existing: string;
  binding: string;
  /** An instance in the hung repository to deprovision. */
  doomed: string;
  /** A new id whose instance would be in the hung repository. */
  newId: string;
}

async function timed(kind: string, expectation: Timed["expect"], id: string, send: () => Promise<OsbReply>): Promise<Timed> {
  const started = performance.now();
  const reply = await send();
  return { kind, expect: expectation, id, reply, ms: performance.now() - started };
}

/** One request of each kind, all at once. */
export function requestRound(osb: OsbClient, t: RoundTargets, round: number): Promise<Timed[]> {
  const plan = { service_id: t.serviceId, plan_id: t.planId };
  const newBinding = `${t.existing}-hb${round}`;
  return Promise.all([
    timed("provision", "write", t.newId, () => osb.provision(t.newId, { ...plan, organization_guid: "org", space_guid: "space" })),
    timed("update", "write", t.existing, () => osb.update(t.existing, { service_id: t.serviceId, parameters: { storageGB: 10 + round } })),
    timed("bind", "write", newBinding, () => osb.bind(t.existing, newBinding, plan)),
    timed("unbind", "write", t.binding, () => osb.unbind(t.existing, t.binding, plan)),
    timed("deprovision", "write", t.doomed, () => osb.deprovision(t.doomed, plan)),
    timed("get instance", "known", t.existing, () => osb.getInstance(t.existing)),
    timed("last_operation", "known", t.existing, () => osb.lastOperation(t.existing)),
    timed("get unknown instance", "read", "", () => osb.getInstance(`never-${round}`)),
    timed("last_operation of an unknown instance", "read", "", () => osb.lastOperation(`never-${round}`)),
    timed("get unknown binding", "read", "", () => osb.getBinding(t.existing, `never-${round}`)),
  ]);
}

/**
 * Sends a round every `everyMs` for `forMs` (rounds overlap: later writes queue behind the hung
 * pushes of earlier ones), with a new id per round; resolves with every answer.
 */
export async function roundsDuring(osb: OsbClient, targets: (round: number) => RoundTargets, forMs: number, everyMs: number): Promise<Timed[]> {
  const rounds: Promise<Timed[]>[] = [];
  const started = performance.now();
  for (let round = 0; performance.now() - started < forMs; round++) {
    rounds.push(requestRound(osb, targets(round), round));
    await sleep(everyMs);
  }
  return (await Promise.all(rounds)).flat();
}

/** Every answer within the bound, and each what its kind must be; `repository` as the 503s name it. */
export function expectBoundedAnswers(answers: Timed[], pushTimeoutSeconds: number, repository: RegExp): void {
  const bound = answerBoundMs(pushTimeoutSeconds);
  if (process.env.HANG_DEBUG) {
    for (const a of answers) console.log(`${a.kind}\t${a.id}\t${a.reply.status}\t${Math.round(a.ms)}\t${String(a.reply.body.description).slice(0, 120)}`);
  }
  for (const a of answers) {
    const what = `${a.kind} ${a.id}: ${a.reply.status} after ${Math.round(a.ms)} ms ${JSON.stringify(a.reply.body)}`;
    expect(a.ms, what).toBeLessThanOrEqual(bound);
    if (a.expect === "known") {
      expect(a.reply.status, what).toBe(200);
      continue;
    }
    expect(a.reply.status, what).toBe(503);
    expect(Number(a.reply.headers.get("retry-after")), what).toBeGreaterThan(0);
    const description = String(a.reply.body.description);
    expect(description, what).toMatch(repository);
    expect(description, what).toMatch(a.expect === "read" ? /read/ : /nothing was changed/);
  }
}
