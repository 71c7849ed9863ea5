import { describe, expect, it } from "vitest";
import { dirTreeReader } from "../repo/index.js";
import { newestGoodVersion, type History, type RegistryVersion } from "./catalog-history.js";

/** A walk over versions with these problem counts and cluster ids, newest first. */
function walk(versions: { problems: number; clusters: string[] }[], bounded: boolean, failAt?: number): () => Promise<History<RegistryVersion>> {
  return () =>
    Promise.resolve({
      bounded,
      versions: (async function* () {
        for (const [back, v] of versions.entries()) {
          if (back === failAt) throw new Error("fatal: bad object");
          yield {
            commit: `c${back}`,
            subject: `change ${back}`,
            back,
            tree: dirTreeReader("/nonexistent"),
            problems: Array.from({ length: v.problems }, () => ({ file: "registry/clusters/x.yaml", path: "", message: "broken" })),
            clusters: v.clusters.map((id) => ({ id }) as RegistryVersion["clusters"][number]),
          };
        }
      })(),
    });
}

const holdsBusy = (v: RegistryVersion) => v.clusters.some((c) => c.id === "busy");

describe("newestGoodVersion", () => {
  it("skips versions with problems and versions that strand live instances, newest first", async () => {
    const found = await newestGoodVersion(walk([{ problems: 1, clusters: ["busy"] }, { problems: 0, clusters: ["keep"] }, { problems: 0, clusters: ["busy"] }, { problems: 0, clusters: ["busy", "keep"] }], false), holdsBusy);
    expect(found).toMatchObject({ version: { commit: "c2", back: 2 }, bounded: false });
    expect(found).not.toHaveProperty("error");
  });

  it("none good within the walk: no version, and whether the walk was bounded", async () => {
    expect(await newestGoodVersion(walk([{ problems: 1, clusters: ["busy"] }], true), holdsBusy)).toEqual({ bounded: true });
  });

  it("history that cannot be read ends the walk with the error, keeping what it knew of the bound", async () => {
    const found = await newestGoodVersion(walk([{ problems: 1, clusters: ["busy"] }, { problems: 0, clusters: ["busy"] }], true, 1), holdsBusy);
    expect(found.version).toBeUndefined();
    expect(found.bounded).toBe(true);
    expect(String(found.error)).toContain("bad object");
    const unreadable = await newestGoodVersion(() => Promise.reject(new Error("fatal: not a git repository")), holdsBusy);
    expect(unreadable).toMatchObject({ bounded: false });
    expect(String(unreadable.error)).toContain("not a git repository");
  });
});
