import { cp, mkdir, readdir, readFile, rm, stat, symlink } from "node:fs/promises";
import { builtinModules } from "node:module";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTempDir } from "../support/git-fixtures.js";
import { currentBuild } from "../support/global-setup.js";
import { runProcess, startProcess } from "../support/processes.js";

/**
 * deploy/Dockerfile without a Docker engine: the files its runtime stage copies from the build
 * context exist; the build stage's `npm run build` is run (into the image's layout); the compiled
 * build imports production dependencies only; and the image's ENTRYPOINT + CMD, run in that
 * layout with the image's ENV (data dir and listen address pointed at a temp dir and port 0),
 * starts the broker, which answers /healthz and stops on SIGTERM.
 */

const PROJECT = path.resolve(import.meta.dirname, "../..");

interface Stage {
  name: string;
  lines: string[];
}

/** The Dockerfile's instructions per stage, continuation lines joined, comments dropped. */
function stages(text: string): Stage[] {
  const instructions = text
    .replace(/\\\n/g, " ")
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l !== "" && !l.startsWith("#"));
  const out: Stage[] = [];
  for (const line of instructions) {
    const from = /^FROM\s+\S+(?:\s+AS\s+(\S+))?$/i.exec(line);
    if (from) out.push({ name: from[1] ?? String(out.length), lines: [] });
    else out.at(-1)!.lines.push(line);
  }
  return out;
}

function jsonArray(stage: Stage, instruction: string): string[] {
  const line = stage.lines.find((l) => l.startsWith(`${instruction} `));
  expect(line, `${instruction} in the runtime stage`).toBeDefined();
  return JSON.parse(line!.slice(instruction.length + 1)) as string[];
}

function envOf(stage: Stage): Record<string, string> {
  const env: Record<string, string> = {};
  for (const line of stage.lines.filter((l) => l.startsWith("ENV "))) {
    for (const m of line.slice(4).matchAll(/(\w+)=(\S+)/g)) env[m[1]!] = m[2]!;
  }
  return env;
}

let dockerfile: Stage[];
let runtime: Stage;
let app: string;

beforeAll(async () => {
  dockerfile = stages(await readFile(path.join(PROJECT, "deploy/Dockerfile"), "utf8"));
  runtime = dockerfile.at(-1)!;
  app = await createTempDir("gitops-broker-image-");
});
afterAll(async () => {
  if (app) await rm(app, { recursive: true, force: true });
});

describe("deploy/Dockerfile", () => {
  it("is multi-stage: the build stage runs npm ci and npm run build, the runtime stage installs production dependencies only", () => {
    const [build] = dockerfile;
    expect(dockerfile.map((s) => s.name)).toEqual(["build", "runtime"]);
    expect(build!.lines).toContain("RUN npm ci --no-audit --no-fund");
    expect(build!.lines).toContain("RUN npm run build");
    expect(runtime.lines.some((l) => /^RUN npm ci --omit=dev\b/.test(l))).toBe(true);
    expect(runtime.lines.some((l) => /apt-get install .*\bgit\b/.test(l))).toBe(true);
    expect(runtime.lines.filter((l) => l.startsWith("USER "))).toEqual(["USER 10001:10001"]);
  });

  it("copies files that exist; its entrypoint starts the broker from the compiled build, which imports production dependencies only", async () => {
    // The runtime stage's layout: the build context's files, and dist/ as the build stage makes it.
    const workdir = runtime.lines.find((l) => l.startsWith("WORKDIR "))!.slice(8);
    for (const line of runtime.lines.filter((l) => l.startsWith("COPY "))) {
      const args = line.slice(5).split(/\s+/);
      const dest = args.pop()!;
      const target = path.join(app, path.relative(workdir, path.resolve(workdir, dest)));
      if (args[0]?.startsWith("--from=")) {
        expect(args).toEqual(["--from=build", "/app/dist"]);
        expect(dockerfile[0]!.lines.find((l) => l.startsWith("WORKDIR "))).toBe("WORKDIR /app");
        // `npm run build` is `tsc -p tsconfig.build.json` (outDir dist): its output into the layout,
        // the checkout's when that is current (a compile costs ~15 s of CPU), else compiled here.
        const scripts = (JSON.parse(await readFile(path.join(PROJECT, "package.json"), "utf8")) as { scripts: Record<string, string> }).scripts;
        expect(scripts.build).toBe("tsc -p tsconfig.build.json");
        const dist = await currentBuild();
        if (dist !== undefined) {
          await cp(dist, target, { recursive: true });
        } else {
          const tsc = [path.join(PROJECT, "node_modules/typescript/bin/tsc"), "-p", path.join(PROJECT, "tsconfig.build.json"), "--outDir", target];
          const compiled = await runProcess(process.execPath, tsc, { cwd: PROJECT });
          expect(compiled, "npm run build").toMatchObject({ code: 0 });
        }
        continue;
      }
      for (const source of args) {
        const from = path.join(PROJECT, source);
        expect((await stat(from).catch(() => null)) !== null, `${source} exists`).toBe(true);
        const into = dest.endsWith("/") ? path.join(target, path.basename(source)) : target;
        await mkdir(path.dirname(into), { recursive: true });
        await cp(from, into, { recursive: true });
      }
    }
    expect((await readdir(app)).sort()).toEqual(["bin", "dist", "examples", "package-lock.json", "package.json"]);

    // Production dependencies only: every package the build imports is in "dependencies".
    const pkg = JSON.parse(await readFile(path.join(app, "package.json"), "utf8")) as { dependencies: Record<string, string> };
    const imported = new Set<string>();
    const files = (await readdir(path.join(app, "dist"), { recursive: true })).filter((f) => f.endsWith(".js"));
    for (const file of [...files.map((f) => path.join(app, "dist", f)), path.join(app, "bin/gitops-broker.js")]) {
      for (const m of (await readFile(file, "utf8")).matchAll(/(?:from\s+|import\(|require\()\s*"([^"./][^"]*)"/g)) {
        const spec = m[1]!;
        if (spec.startsWith("node:") || builtinModules.includes(spec)) continue;
        imported.add(spec.startsWith("@") ? spec.split("/").slice(0, 2).join("/") : spec.split("/")[0]!);
      }
    }
    expect([...imported].filter((p) => !(p in pkg.dependencies) && p !== "tsx")).toEqual([]);
    expect(Object.keys(pkg.dependencies)).not.toContain("tsx");
    // bin/ imports tsx only when src/ is there: never in the image.
    expect(await readdir(app)).not.toContain("src");
    await symlink(path.join(PROJECT, "node_modules"), path.join(app, "node_modules"));

    const [command, ...args] = [...jsonArray(runtime, "ENTRYPOINT"), ...jsonArray(runtime, "CMD")];
    expect(command).toBe("node");
    const dataDir = path.join(app, "data");
    const env = { ...envOf(runtime), GITOPS_BROKER_DATA_DIR: dataDir, GITOPS_BROKER_LISTEN: "127.0.0.1:0" };
    expect(envOf(runtime)).toMatchObject({ NODE_ENV: "production", GITOPS_BROKER_LISTEN: "0.0.0.0:8080" });
    // A tracked process group: killed after the file whatever happened.
    const child = startProcess(process.execPath, args, { cwd: app, env: { PATH: process.env.PATH ?? "", ...env } });
    try {
      const entry = (line: string): { msg?: string; url?: string } => {
        try {
          return JSON.parse(line) as { msg?: string; url?: string };
        } catch {
          return {}; // not a log line
        }
      };
      const listening = await child.waitForLine((line) => {
        const { msg, url } = entry(line);
        return msg === "gitops-broker listening" && url !== undefined;
      }, "the listening log line");
      const url = entry(listening).url!;
      const health = await fetch(`${url}/healthz`);
      expect(health.status).toBe(200);
      expect((await stat(path.join(dataDir, "password"))).mode & 0o777).toBe(0o600);
    } finally {
      child.signal("SIGTERM");
    }
    expect((await child.exited).code).toBe(0);
  }, 300_000);
});
