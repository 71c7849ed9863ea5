import { mkdir, readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { createTempDir } from "../support/git-fixtures.js";
import { testTool } from "../support/test-tools.js";
import { GENERATED_CASES, ORACLE_CHART } from "./cases.js";
import {
  difference,
  errorMessage,
  expand,
  findCharts,
  firstDiff,
  helmModuleDir,
  mapLimit,
  ROOT,
  runHelm,
  runOurs,
  type OracleCase,
  type Outcome,
} from "./oracle.js";

/**
 * `gitops-broker render-chart` against `helm template` (Helm 3.21.4 built from its module), byte
 * for byte on stdout, and on the error when helm fails (ADR 0023). The corpus: every chart in this
 * repository's tests and deploy/chart, every chart Helm's module ships in its testdata (each with
 * --include-crds), and the generated cases of cases.ts (some over the chart `helm create` writes). Helm runs first for every case, two
 * processes at a time; ours runs in process, the function the CLI runs.
 */

/**
 * Helm's testdata charts with the mariadb subchart render random passwords unless given ones, and
 * a test Pod with a random name: given passwords, without tests.
 */
const NOT_RANDOM = ["--set", "mariadb.rootUser.password=root,mariadb.db.password=db,mariadb.replication.password=repl", "--skip-tests"];

const helmDir = await helmModuleDir();
const repoCharts = [
  ...(await findCharts(path.join(ROOT, "test"), (rel) => rel === "helm-oracle")),
  ...(await findCharts(path.join(ROOT, "go"))),
  path.join(ROOT, "deploy/chart"),
];
const helmCharts = await findCharts(helmDir);

function chartCase(chart: string): OracleCase {
  const extra = /chart-with-(un)?compressed-dependencies/.test(chart) ? NOT_RANDOM : [];
  const name = chart.startsWith(helmDir) ? `Helm's testdata chart ${path.relative(helmDir, chart)}` : `repository chart ${path.relative(ROOT, chart)}`;
  return { name, args: [chart, "--include-crds", ...extra] };
}

const CASES: OracleCase[] = [
  ...repoCharts.map(chartCase),
  ...helmCharts.map(chartCase),
  ...GENERATED_CASES.map((c) => ({ ...c, name: `generated: ${c.name}` })),
];

/**
 * The errors that differ on purpose (ADR 0023), each checked precisely: a rule answers true when
 * the two messages differ only as documented.
 */
const DOCUMENTED_ERRORS: { what: string; applies: (helm: string, ours: string) => boolean }[] = [
  {
    // Our values.schema.json validator is ajv (src/charts/schema.ts), Helm's santhosh-tekuri/jsonschema:
    // the same charts and the same failing paths, each validator's words for why.
    what: "schema violations: ajv's words instead of jsonschema's",
    applies: (helm, ours) => {
      const head = "Error: values don't meet the specifications of the schema(s) in the following chart(s):\n";
      const shape = (m: string) => m.split("\n").map((l) => l.replace(/^(- at '[^']*'): .*$/, "$1"));
      return helm.startsWith(head) && ours.startsWith(head) && JSON.stringify(shape(helm)) === JSON.stringify(shape(ours));
    },
  },
  {
    // Helm names the MIME type Go's net/http sniffs in the file; we do not sniff.
    what: "a file that is not a chart archive: no '; got <MIME type>'",
    applies: (helm, ours) => /^Error: file '.*' does not appear to be a gzipped archive$/.test(ours) && helm.replace(/; got '[^']*'$/, "") === ours,
  },
];

/**
 * `.Capabilities.HelmVersion.GoVersion` is the Go release that runs the templates: helm's (the test
 * tools' toolchain) there, ours (go1.21.8, Service Fabrik's: ADR 0011) here. Every helm output is
 * compared with that release replaced by ours wherever it shows (ADR 0023, documented differences).
 */
const toolchainOf = async (goMod: string) => /^toolchain (go\S+)$/m.exec(await readFile(path.join(ROOT, goMod), "utf8"))?.[1] ?? "";
const [HELM_GO, OUR_GO] = await Promise.all([toolchainOf("tools/helm/go.mod"), toolchainOf("go/go.mod")]);
const withOurGoRelease = (o: Outcome): Outcome => ({ ...o, stdout: o.stdout.replaceAll(HELM_GO, OUR_GO) });

describe("helm template is the oracle for render-chart", () => {
  const helmOutcomes = new Map<string, Outcome>();
  const argsOf = new Map<string, string[]>();
  let helm: string;

  beforeAll(async () => {
    helm = testTool("helm");
    const root = await createTempDir("helm-oracle-");
    const scaffold = path.join(root, "scaffold");
    const created = await runHelm(helm, [scaffold], root, "create");
    if (created.code !== 0) throw new Error(`helm create failed: ${created.stderr}`);
    let n = 0;
    await mapLimit(CASES, 2, async (c) => {
      const dir = path.join(root, String(n++));
      await mkdir(dir, { recursive: true });
      for (const [name, text] of Object.entries(c.files ?? {})) {
        await mkdir(path.dirname(path.join(dir, name)), { recursive: true });
        await writeFile(path.join(dir, name), text);
      }
      const args = expand(c.args, dir, scaffold);
      argsOf.set(c.name, args);
      helmOutcomes.set(c.name, withOurGoRelease(await runHelm(helm, args, dir)));
    });
  });

  it("finds the corpus: the repository's charts and Helm's own testdata charts", () => {
    expect(repoCharts.map((c) => path.relative(ROOT, c))).toEqual(expect.arrayContaining(["deploy/chart", "go/helm/testdata/webapp", "test/broker/testdata/charts/kvstore"]));
    expect(helmCharts.length).toBeGreaterThanOrEqual(60);
    // Helm must render most of them: a helm that failed on everything would make every case agree.
    const rendered = [...repoCharts, ...helmCharts].filter((c) => helmOutcomes.get(chartCase(c).name)?.code === 0);
    expect(rendered.length).toBeGreaterThanOrEqual(30);
  });

  it("replaces helm's Go release, which its output shows, by ours", () => {
    expect(HELM_GO).toMatch(/^go\d+\.\d+\.\d+$/);
    expect(OUR_GO).toMatch(/^go\d+\.\d+\.\d+$/);
    expect([...helmOutcomes.values()].filter((o) => o.stdout.includes(`go_version: ${OUR_GO}`)).length).toBeGreaterThan(10);
    expect(HELM_GO).not.toBe(OUR_GO);
  });

  it.each(CASES)("$name", async (c) => {
    const h = helmOutcomes.get(c.name);
    const args = argsOf.get(c.name);
    if (h === undefined || args === undefined) throw new Error(`helm did not run for ${c.name}`);
    if (c.name.startsWith("generated: ")) {
      // What the case is for: the ones named "... fails" must fail in helm, the others render.
      expect({ code: h.code === 0 ? 0 : 1, stderr: h.code === 0 ? "" : errorMessage(h.stderr) }).toEqual(
        c.name.endsWith(" fails") ? { code: 1, stderr: expect.stringMatching(/^Error: /) as unknown } : { code: 0, stderr: "" },
      );
    }
    const ours = await runOurs(args);
    if (c.documented !== undefined) {
      // A documented difference: still there in helm's output, and ours is exactly what ADR 0023 says.
      expect(h.code).toBe(0);
      const expected = c.documented(h.stdout);
      expect(expected, "helm's output no longer shows the documented difference: update ADR 0023").not.toBe(h.stdout);
      const d = difference({ ...h, stdout: expected }, ours);
      if (d !== "") throw new Error(`${d}\n(args: ${JSON.stringify(args)})`);
      return;
    }
    const d = difference(h, ours);
    if (d !== "") throw new Error(`${d}\n(args: ${JSON.stringify(args)})`);
    if (h.code !== 0) {
      const [hm, om] = [errorMessage(h.stderr), errorMessage(ours.stderr)];
      if (hm !== om && !DOCUMENTED_ERRORS.some((r) => r.applies(hm, om))) {
        throw new Error(`both fail, with different errors:\n${firstDiff(hm, om)}`);
      }
    }
  });

  it("fails on a difference, with a unified diff of the first differing lines", async () => {
    const h = helmOutcomes.get("generated: defaults");
    expect(h?.code).toBe(0);
    const ours = await runOurs([ORACLE_CHART, "--set", "replicas=7"]);
    const d = difference(h as Outcome, ours);
    expect(d).toMatch(/^stdout differs:\n--- helm template\n\+\+\+ gitops-broker render-chart\n@@ -\d+,\d+ \+\d+,\d+ @@\n/);
    expect(d).toMatch(/\n- +replicas: 1\n/);
    expect(d).toMatch(/\n\+ +replicas: 7(\n|$)/);
    expect(difference({ code: 1, stdout: "", stderr: "Error: x" }, ours)).toBe("helm failed and render-chart did not:\nError: x");
    expect(firstDiff("a\nb\nc\nd\ne\nf\ng\n", "a\nb\nc\nD\ne\nf\ng\n")).toBe(
      "--- helm template\n+++ gitops-broker render-chart\n@@ -1,4 +1,4 @@\n a\n b\n c\n-d\n+D",
    );
  });
});
