import { PassThrough } from "node:stream";
import { describe, expect, it } from "vitest";
import { main, VERSION } from "../../src/cli/main.js";

/** The command line in-process: every command answers --help; usage errors exit 2 with the usage hint. */

function capture(): { stream: PassThrough; text: () => string } {
  const stream = new PassThrough();
  const chunks: Buffer[] = [];
  stream.on("data", (c: Buffer) => chunks.push(c));
  return { stream, text: () => Buffer.concat(chunks).toString("utf8") };
}

async function cli(...argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const out = capture();
  const err = capture();
  const code = await main(argv, { stdout: out.stream, stderr: err.stream });
  return { code, stdout: out.text(), stderr: err.text() };
}

const COMMANDS = ["serve", "clusters", "move", "update", "history", "validate"];

describe("gitops-broker --help", () => {
  it("lists every command", async () => {
    for (const argv of [["--help"], ["-h"], ["help"]]) {
      const { code, stdout } = await cli(...argv);
      expect(code).toBe(0);
      for (const command of COMMANDS) expect(stdout).toMatch(new RegExp(`^  ${command} `, "m"));
    }
  });

  it.each(COMMANDS)("%s --help prints its usage and options, exit 0, without running", async (command) => {
    const { code, stdout, stderr } = await cli(command, "--help");
    expect({ code, stderr }).toEqual({ code: 0, stderr: "" });
    expect(stdout).toMatch(new RegExp(`^Usage: gitops-broker ${command} `));
    expect(stdout).toContain("-h, --help");
    if (command !== "validate") expect(stdout).toContain("--config <file>");
    expect((await cli("help", command)).stdout).toBe(stdout);
  });

  it.each([
    ["render", ["--plan <id>", "--action <action>", "--instance <id>", "--binding <id>", "--parameters <json>", "[repo-dir]"]],
    ["render-template", ["--engine <engine>", "gotemplate or handlebars"]],
    [
      "render-chart",
      ["-f, --values <file>", "--set <key=value>", "--set-string", "--set-json", "--set-file", "--set-literal", "-n, --namespace <namespace>", "--kube-version", "-a, --api-versions", "--include-crds", "--skip-tests", "--no-hooks", "--is-upgrade", "--skip-schema-validation", "-s, --show-only <path>"],
    ],
  ])("%s --help lists every option it takes (commander, as every command)", async (command, options) => {
    const { code, stdout, stderr } = await cli(command, "--help");
    expect({ code, stderr }).toEqual({ code: 0, stderr: "" });
    expect(stdout).toMatch(new RegExp(`^Usage: gitops-broker ${command} `));
    for (const option of options) expect(stdout).toContain(option);
    expect(stdout).not.toContain("[args...]");
    expect((await cli("help", command)).stdout).toBe(stdout);
  });

  it("an unknown command with --help is an unknown command: exit 2, the message, no help", async () => {
    for (const argv of [["frobnicate", "--help"], ["frobnicate", "-h"], ["frobnicate", "x", "--help"]]) {
      const { code, stdout, stderr } = await cli(...argv);
      expect({ code, stdout }).toEqual({ code: 2, stdout: "" });
      expect(stderr).toBe("error: unknown command 'frobnicate'\n(add --help for usage)\n");
    }
  });

  it("move --help says what happens to the data", async () => {
    const { stdout } = await cli("move", "--help");
    expect(stdout).toMatch(/--dry-run/);
    expect(stdout).toMatch(/--yes/);
    expect(stdout).toMatch(/DELETES them on the old cluster: the operator drops the database there/);
  });

  it("--version prints the package version", async () => {
    expect(await cli("--version")).toEqual({ code: 0, stdout: `${VERSION}\n`, stderr: "" });
    expect(VERSION).toMatch(/^\d+\.\d+\.\d+/);
  });
});

describe("usage errors exit 2 with a hint", () => {
  it.each([
    [["bogus"], /unknown command 'bogus'/],
    [["clusters", "--bogus"], /unknown option '--bogus'/],
    [["clusters", "extra"], /too many arguments for 'clusters'/],
    [["history"], /missing required argument 'instance-id'/],
    [["move", "i-1"], /missing required argument 'cluster-id'/],
    [["move", "i-1", "c-1"], /the database there is dropped.*\n.*--dry-run.*--yes/],
    [["update"], /give one of --plan <plan-id> and --instance <instance-id>/],
    [["update", "--plan", "p", "--instance", "i"], /'--plan <plan-id>' cannot be used with option '--instance <instance-id>'/],
    [["update", "--plan"], /option '--plan <plan-id>' argument missing/],
    [["validate", "a", "b"], /too many arguments for 'validate'/],
    [["render", "--plan", "p"], /required option '--action <action>' not specified/],
    [["render-template", "x"], /too many arguments for 'render-template'/],
    [["render-chart", "a", "b", "c"], /too many arguments for 'render-chart'/],
    [["render-chart", "c", "--bogus"], /unknown option '--bogus'/],
  ])("%j", async (argv, message) => {
    const { code, stdout, stderr } = await cli(...argv);
    expect({ code, stdout }).toEqual({ code: 2, stdout: "" });
    expect(stderr).toMatch(message);
    expect(stderr).toContain("(add --help for usage)");
  });
});
