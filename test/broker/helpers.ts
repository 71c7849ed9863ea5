import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { expect } from "vitest";
import type { ReadinessCheck } from "../../src/catalog/index.js";
import type { OsbClient } from "../support/osb-client.js";

import { remoteHead } from "../support/git-fixtures.js";

export { remoteHead };

const run = promisify(execFile);

/** Sample catalog ids, looked up by name so the tests do not copy UUIDs. */
export interface SamplePlans {
  serviceId: string;
  small: { id: string; name: string };
  medium: { id: string; name: string; maintenanceVersion: string | undefined };
}

export async function samplePlans(osb: OsbClient): Promise<SamplePlans> {
  const res = await osb.catalog();
  expect(res.status).toBe(200);
  const services = res.body.services as { id: string; name: string; plans: Record<string, unknown>[] }[];
  const pg = services.find((s) => s.name === "postgresql");
  if (!pg) throw new Error("sample catalog has no postgresql service");
  const plan = (name: string) => {
    const p = pg.plans.find((x) => x.name === name);
    if (!p) throw new Error(`sample catalog has no plan ${name}`);
    return p;
  };
  const medium = plan("medium");
  return {
    serviceId: pg.id,
    small: { id: plan("small").id as string, name: "small" },
    medium: {
      id: medium.id as string,
      name: "medium",
      maintenanceVersion: (medium.maintenance_info as { version?: string } | undefined)?.version,
    },
  };
}

export function provisionBody(serviceId: string, planId: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    service_id: serviceId,
    plan_id: planId,
    organization_guid: "org-guid",
    space_guid: "space-guid",
    context: { platform: "cloudfoundry", organization_guid: "org-guid", space_guid: "space-guid" },
    ...extra,
  };
}

/** GET /readyz of the broker at `url` (no credentials: probes carry none): its status and body. */
export async function readyz(url: string): Promise<{ status: number; body: { status: string; checks: ReadinessCheck[] } }> {
  const res = await fetch(new URL("/readyz", url));
  return { status: res.status, body: (await res.json()) as never };
}

export async function remoteFiles(remoteDir: string, prefix = ""): Promise<string[]> {
  const { stdout } = await run("git", ["ls-tree", "-r", "--name-only", "main", ...(prefix ? ["--", prefix] : [])], {
    cwd: remoteDir,
    maxBuffer: 64 * 1024 * 1024,
  });
  return stdout.split("\n").filter(Boolean);
}

/** Runs `fn` and asserts the remote did not move (a 4xx leaves the repository unchanged). */
export async function unchangedRemote<T>(remoteDir: string, fn: () => Promise<T>): Promise<T> {
  const before = await remoteHead(remoteDir);
  const out = await fn();
  expect(await remoteHead(remoteDir)).toBe(before);
  return out;
}

export async function commitCount(remoteDir: string): Promise<number> {
  const { stdout } = await run("git", ["rev-list", "--count", "main"], { cwd: remoteDir });
  return Number(stdout.trim());
}

export async function headMessage(remoteDir: string): Promise<string> {
  const { stdout } = await run("git", ["log", "-1", "--format=%B", "main"], { cwd: remoteDir });
  return stdout;
}

/** Asserts an OSB error reply: status, optional error code, and a description matching `description`. */
export function expectOsbError(
  res: { status: number; body: Record<string, unknown> },
  status: number,
  description: RegExp,
  error?: string,
): void {
  expect({ status: res.status, body: res.body }).toMatchObject({ status, body: { description: expect.stringMatching(description) } });
  if (error !== undefined) expect(res.body.error).toBe(error);
}
