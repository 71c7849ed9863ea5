import { describe, expect, it } from "vitest";
import { PROGRESS_INTERVAL_MS, buildProgress, elapsed } from "./test-tools.js";

/** What the first `npm test` on a machine prints while the test tools build (buildProgress), on a clock of the test's. */

function recorder() {
  let clock = 0;
  const out: string[] = [];
  const progress = buildProgress((t) => void out.push(t), () => clock);
  return { progress, out, advance: (ms: number) => void (clock += ms) };
}

describe("buildProgress", () => {
  it("says once that the build is a one-time one, shows the script's lines, counts Go's downloads and says how long a tool has taken", () => {
    const { progress, out, advance } = recorder();
    progress.line("building kube-apiserver (k8s.io/kubernetes/cmd/kube-apiserver) into /c/kube-apiserver-1: a few minutes on a fresh machine");
    for (let i = 0; i < 250; i++) progress.line(`go: downloading example.com/m${i} v1.0.0`);
    advance(PROGRESS_INTERVAL_MS);
    progress.tick();
    advance(3 * 60_000 + 5_000 - PROGRESS_INTERVAL_MS);
    progress.tick();
    progress.line("built kube-apiserver in 185 s");
    progress.line("building helm (helm.sh/helm/v3/cmd/helm) into /c/helm-1: a few minutes on a fresh machine");
    advance(PROGRESS_INTERVAL_MS);
    progress.tick();
    progress.line("built helm in 30 s");
    progress.done();
    expect(out.join("")).toBe(
      [
        "",
        "The tests run real programs built from their Go modules (kube-apiserver, etcd, Helm ...: scripts/build-test-tools.sh, ADR 0022).",
        "A one-time build per machine, minutes on 2 cores; later runs use the cache (~/.cache/gitops-broker/test-tools).",
        "building kube-apiserver (k8s.io/kubernetes/cmd/kube-apiserver) into /c/kube-apiserver-1: a few minutes on a fresh machine",
        "  still building kube-apiserver: 30 s, 250 Go modules downloaded so far (one-time)",
        "  still building kube-apiserver: 3 min 5 s, 250 Go modules downloaded so far (one-time)",
        "built kube-apiserver in 185 s",
        "building helm (helm.sh/helm/v3/cmd/helm) into /c/helm-1: a few minutes on a fresh machine",
        "  still building helm: 30 s, 250 Go modules downloaded so far (one-time)",
        "built helm in 30 s",
        "The test tools are ready after 3 min 35 s; the tests start.",
        "",
        "",
      ].join("\n"),
    );
  });

  it("says nothing when every tool is cached", () => {
    const { progress, out } = recorder();
    progress.done();
    expect(out).toEqual([]);
  });

  it("says what it waits for when the script builds nothing yet (another run holds the tool's lock)", () => {
    const { progress, out, advance } = recorder();
    advance(PROGRESS_INTERVAL_MS);
    progress.tick();
    expect(out).toEqual(["  scripts/build-test-tools.sh: 30 s so far (it waits while another run on this machine builds the same tool)\n"]);
  });
});

describe("elapsed", () => {
  it("reads as seconds under a minute, minutes and seconds from one on", () => {
    expect([elapsed(0), elapsed(59_400), elapsed(60_000), elapsed(412_000)]).toEqual(["0 s", "59 s", "1 min 0 s", "6 min 52 s"]);
  });
});
