import { afterAll, describe, expect, it } from "vitest";
import { RenderError } from "../errors/index.js";
import type { PlanTemplate } from "../catalog/types.js";
import { renderTemplateText, setGotemplateLimits, type RenderValues } from "./index.js";

const previous = setGotemplateLimits({ timeoutMs: 3000, outputBytes: 1024 * 1024 });
afterAll(() => void setGotemplateLimits(previous));

const values: RenderValues = { service: {}, plan: {}, instance: { spec: { instanceId: "i-1" } }, bindings: [] };
const go = (content: string): PlanTemplate => ({ action: "provision", type: "gotemplate", content, source: "t.tpl" });

describe("gotemplate limits", () => {
  it("stops a runaway template with an OSB error while the event loop keeps running", async () => {
    let ticks = 0;
    const timer = setInterval(() => ticks++, 20);
    try {
      const runaway = renderTemplateText(go("{{ range until 100000000 }}x{{ end }}"), values, "p");
      // Meanwhile: timers fire and another engine renders.
      const other = await renderTemplateText({ ...go("{{x}}"), type: "handlebars" }, { ...values, x: "ok" }, "p");
      expect(other).toBe("ok");
      const error = await runaway.then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(RenderError);
      // Which limit stops it first depends on the machine: the 1 MiB output, the 3 s, or Go's memory.
      expect((error as Error).message).toMatch(/^plan p: template provision \(t\.tpl\): gotemplate renderer - can't render template for i-1\/provision\. (output exceeds 1048576 bytes|stopped after 3000 ms \(time limit\)|.*out of memory.*)/s);
      expect(ticks).toBeGreaterThan(0);
    } finally {
      clearInterval(timer);
    }
    // The next render gets a working module.
    expect(await renderTemplateText(go("{{ add 1 2 }}"), values, "p")).toBe("3");
  }, 120_000);

  it("refuses a template that exhausts Go's memory with the runtime's words, not its stacks", async () => {
    // until 1e9 grows a list towards 8 GB: past wasm32's 4 GiB, so the runtime's fatal error ends
    // the Go program in the middle of the call. The time limit is out of the way on a busy machine.
    setGotemplateLimits({ timeoutMs: 60_000, outputBytes: 1024 * 1024 });
    const error = await renderTemplateText(go("{{ len (until 1000000000) }}"), values, "p")
      .then(
        () => undefined,
        (e: unknown) => e,
      )
      .finally(() => setGotemplateLimits({ timeoutMs: 3000, outputBytes: 1024 * 1024 }));
    expect(error).toBeInstanceOf(RenderError);
    expect((error as Error).message).toMatch(
      /^plan p: template provision \(t\.tpl\): gotemplate renderer - can't render template for i-1\/provision\. runtime: out of memory: cannot allocate \d+-byte block \(\d+ in use\)\nfatal error: out of memory$/,
    );
    expect(await renderTemplateText(go("{{ add 1 2 }}"), values, "p")).toBe("3");
  }, 120_000);

  it("bounds the output", async () => {
    await expect(renderTemplateText(go('{{ repeat 2000000 "x" }}'), values, "p")).rejects.toThrow(
      "plan p: template provision (t.tpl): gotemplate renderer - can't render template for i-1/provision. output exceeds 1048576 bytes",
    );
  }, 120_000);
});

describe("gotemplate's Go release", () => {
  // The module is built with go1.21.8, the release Service Fabrik's last image was built with
  // (ADR 0011): what Go 1.22 and 1.23 added to text/template fails here as it failed there, with
  // that release's messages (go1.21.8's parser expects the right delimiter after `else` unless an
  // `if` follows; its range has no case for integers).
  it("refuses {{else with}} (Go 1.23) when the template is parsed", async () => {
    await expect(renderTemplateText(go("{{ with .x }}a{{ else with .y }}b{{ end }}"), values, "p")).rejects.toThrow(
      "plan p: template provision (t.tpl): gotemplate renderer - can't create template for i-1/provision. template: i-1/provision:1: unexpected <with> in else",
    );
  });

  it("refuses range over an integer (Go 1.22) when the template runs", async () => {
    await expect(renderTemplateText(go("{{ range 3 }}x{{ end }}"), values, "p")).rejects.toThrow(
      `plan p: template provision (t.tpl): gotemplate renderer - can't render template for i-1/provision. template: i-1/provision:1:9: executing "i-1/provision" at <3>: range can't iterate over 3`,
    );
    // A list of integers, as sprig's until makes, ranges in every release.
    expect(await renderTemplateText(go("{{ range until 3 }}{{ . }}{{ end }}"), values, "p")).toBe("012");
  });
});
