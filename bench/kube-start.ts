/**
 * What a test pays for a real Kubernetes control plane (ADR 0022) beside the API server double,
 * in the same run, alternating: the double's start; the real etcd + kube-apiserver start (etcd
 * healthy, then kube-apiserver's /readyz), the CRDs the live tests install (Flux's GitRepository
 * and Kustomization, Argo CD's Application, our postgresql) until Established and served, and a
 * kill -9 and restart of kube-apiserver on the same etcd.
 *
 *   npx tsx bench/kube-start.ts [--rounds 5]
 */
import path from "node:path";
import { parseArgs } from "node:util";
import { startKubeApiServer } from "../test/support/kube-api-server.js";
import { cleanUp } from "../test/support/processes.js";
import { startRealKube } from "../test/support/real-kube.js";
import { buildTestTools, testTool } from "../test/support/test-tools.js";
import { median } from "./load.js";

const { values } = parseArgs({ options: { rounds: { type: "string", default: "5" } } });
const ROUNDS = Number(values.rounds);

const figures: Record<string, number[]> = { double: [], "real: etcd + kube-apiserver ready": [], "real: kube-apiserver alone": [], "real: 4 CRDs established": [], "real: kill -9 and restart": [] };


await buildTestTools();
const crds = testTool("crds");
const files = [
  path.resolve(import.meta.dirname, "../test/support/crds/postgresqls.acid.zalan.do.yaml"),
  path.join(crds, "source.toolkit.fluxcd.io_gitrepositories.yaml"),
  path.join(crds, "kustomize.toolkit.fluxcd.io_kustomizations.yaml"),
  path.join(crds, "application-crd.yaml"),
];
try {
  for (let round = 0; round < ROUNDS; round++) {
    let t = performance.now();
    const double = await startKubeApiServer();
    figures.double!.push(performance.now() - t);
    await double.close();

    t = performance.now();
    const kube = await startRealKube();
    figures["real: etcd + kube-apiserver ready"]!.push(performance.now() - t);
    figures["real: kube-apiserver alone"]!.push(kube.lastStartMs);
    t = performance.now();
    await kube.installCrds(files);
    figures["real: 4 CRDs established"]!.push(performance.now() - t);
    await kube.restartApiServer();
    figures["real: kill -9 and restart"]!.push(kube.lastStartMs);
    await kube.close();
  }
} finally {
  await cleanUp();
}

console.log(`| step (${ROUNDS} rounds, ms) | min | median | max |`);
console.log("|---|---|---|---|");
for (const [name, xs] of Object.entries(figures)) {
  console.log(`| ${name} | ${Math.round(Math.min(...xs))} | ${Math.round(median(xs))} | ${Math.round(Math.max(...xs))} |`);
}
