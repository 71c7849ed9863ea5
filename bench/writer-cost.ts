/**
 * The git writer's own cost per operation, without HTTP, rendering or the remote: `ops` provisions
 * (record and manifests rendered beforehand) submitted at once to a writer on an existing local
 * repository. They go out in a few pushes, so the CPU this process spends is the writer's: drafts,
 * trees, commits, packs. This is the cost ADR 0002's fan-out keeps flat as the repository grows.
 */
import { createGitWriter, type Operation } from "../src/gitwriter/index.js";
import { silentLogger } from "../src/log/index.js";
import { instanceManifestDir, instanceRecordPath } from "../src/repo/index.js";
import { provisionFiles, type SamplePlacement } from "./prefill.js";

const WARM_UP = 200;

export interface WriterCost {
  ops: number;
  /** CPU of this process (all threads) per operation. */
  cpuMsPerOp: number;
  wallMs: number;
}

export async function measureWriterCost(gitdir: string, remoteUrl: string, placement: SamplePlacement, ops: number): Promise<WriterCost> {
  const writer = createGitWriter({ gitdir, remoteUrl, branch: "main", author: { name: "bench", email: "bench@gitops-broker.invalid" }, logger: silentLogger() });
  await writer.start();
  const at = new Date().toISOString();
  const prepared = Array.from({ length: WARM_UP + ops }, (_, n) => {
    const id = `writer-cost-${Date.now()}-${n}`;
    return { id, files: provisionFiles(placement, id, `op-${n}`, at) };
  });
  const operation = ({ id, files }: (typeof prepared)[number]): Operation<null> => async (draft) => {
    // What a provision reads before it writes: the record (absent) and the manifest directory.
    if ((await draft.readFile(instanceRecordPath(id))) !== null) throw new Error(`${id} exists`);
    await draft.list(instanceManifestDir(placement.cluster.id, id));
    for (const [file, content] of files) draft.write(file, content);
    return { commit: { subject: `provision ${id}`, trailers: { "Instance-Id": id } }, result: null };
  };
  // Warm-up, not measured: JIT and the caches of the trees near the root.
  await Promise.all(prepared.splice(0, WARM_UP).map((p) => writer.submit(operation(p))));
  const cpu = process.cpuUsage();
  const started = performance.now();
  await Promise.all(prepared.map((p) => writer.submit(operation(p))));
  const wallMs = performance.now() - started;
  const used = process.cpuUsage(cpu);
  await writer.close();
  return { ops, cpuMsPerOp: (used.user + used.system) / 1000 / ops, wallMs };
}
