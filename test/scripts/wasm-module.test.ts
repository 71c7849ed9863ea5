import { readFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { gunzipSync } from "node:zlib";
import { describe, expect, it } from "vitest";

/**
 * The committed WebAssembly module (ADR 0011) links what Service Fabrik shipped: its last release
 * (v0.27.1) resolved sprig v3.2.3 with huandu/xstrings v1.4.0, sigs.k8s.io/yaml v1.4.0 and
 * BurntSushi/toml v1.3.2 in interoperator/go.mod, and was built with Go 1.21.
 * Read from the build information Go writes into every binary, so this holds for the committed
 * bytes, not for a go.mod that could say one thing while the module was built from another.
 * (`scripts/build-wasm.sh --check` in .ci/run proves the bytes are what go/ builds.)
 */

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const SERVICE_FABRIK = {
  "github.com/Masterminds/sprig/v3": "v3.2.3",
  "github.com/huandu/xstrings": "v1.4.0",
  "sigs.k8s.io/yaml": "v1.4.0",
  "github.com/BurntSushi/toml": "v1.3.2",
};

/** The `dep` lines of the module's build information: module path → version. */
function linkedModules(module: Buffer): { deps: Map<string, string>; settings: string[] } {
  const text = module.toString("latin1");
  const start = text.indexOf("path\tgitops-broker/wasm\n");
  expect(start, "the module carries Go's build information").toBeGreaterThan(0);
  const deps = new Map<string, string>();
  const settings: string[] = [];
  for (const line of text.slice(start).split("\n").slice(1)) {
    const [kind, name, version] = line.split("\t");
    if (kind === "dep") deps.set(name!, version!);
    else if (kind === "build") settings.push(`${name}`);
    else if (kind !== "mod") break;
  }
  return { deps, settings };
}

describe("the committed WebAssembly module", () => {
  it("links the module versions Service Fabrik shipped, built by the toolchain go.mod pins, without VCS stamps", async () => {
    const module = gunzipSync(await readFile(path.join(ROOT, "wasm/gitops-broker.wasm.gz")));
    const { deps, settings } = linkedModules(module);
    for (const [name, version] of Object.entries(SERVICE_FABRIK)) expect(deps.get(name), name).toBe(version);

    const goMod = await readFile(path.join(ROOT, "go/go.mod"), "utf8");
    const toolchain = /^toolchain (go\S+)$/m.exec(goMod)?.[1];
    for (const [name, version] of Object.entries(SERVICE_FABRIK)) expect(goMod).toMatch(new RegExp(`\\t${name.replaceAll(".", "\\.")} ${version}( // indirect)?\\n`));
    // Service Fabrik v0.27.1's image was built FROM golang:1.21: go1.21.8 on the day of the tag.
    expect(toolchain).toBe("go1.21.8");
    // runtime.Version() is a string in the module: the release that built it.
    expect(module.includes(Buffer.from(toolchain!)), "built by the pinned toolchain").toBe(true);
    expect(new Set(settings.filter((s) => /^(-trimpath|CGO_ENABLED|GOOS|GOARCH)=/.test(s)))).toEqual(
      new Set(["-trimpath=true", "CGO_ENABLED=0", "GOOS=js", "GOARCH=wasm"]),
    );
    // A commit stamp would change the module's bytes with every commit.
    expect(settings.filter((s) => s.startsWith("vcs"))).toEqual([]);
  });

  it("is given every function it imports by the committed wasm_exec.js (taken from a later Go release: ADR 0011)", async () => {
    // The compiler's libraries here declare WebAssembly's types only (no DOM lib); Node has it.
    const { Module } = (globalThis as unknown as { WebAssembly: { Module: { new (bytes: Uint8Array): object; imports(m: object): { module: string; name: string }[] } } }).WebAssembly;
    const imports = Module.imports(new Module(gunzipSync(await readFile(path.join(ROOT, "wasm/gitops-broker.wasm.gz")))));
    const glue = await readFile(path.join(ROOT, "wasm/wasm_exec.js"), "utf8");
    expect(imports.length).toBeGreaterThan(20);
    for (const i of imports) {
      expect(i.module, `${i.module}.${i.name}`).toBe("gojs");
      expect(glue, `wasm_exec.js provides ${i.name}`).toContain(`"${i.name}": (sp) => {`);
    }
    expect(glue).toMatch(/this\.importObject = \{\s*_gotest: \{[\s\S]*?\},\s*gojs: \{/);
  });
});
