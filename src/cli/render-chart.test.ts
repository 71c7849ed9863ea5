import { describe, expect, it } from "vitest";
import { helmStyleArgv, parseRenderChartArgs, runRenderChart } from "./render-chart.js";

describe("render-chart arguments", () => {
  it("reads Helm's flags in every form, slices split on commas, arrays not", () => {
    const p = parseRenderChartArgs([
      "my-release", "./chart", "-f", "a.yaml,b.yaml", "--values=c.yaml", "--set", "a=1,b=2", "--set=c={x,y}",
      "-n", "shop", "--kube-version=1.29", "-a", "x.io/v1,y.io/v2", "--api-versions", "z.io/v1",
      "--include-crds", "--skip-tests", "--is-upgrade=false", "-s", "templates/a.yaml", "--show-only=templates/b,c.yaml",
      "--set-string", "s=1,t=2", "--set-json=j={\"a\":1}", "--set-file", "f=x.txt", "--set-literal", "l=a,b", "-nother", "-a=w.io/v1",
    ]);
    expect(p).toEqual({
      positional: ["my-release", "./chart"],
      valueFiles: ["a.yaml", "b.yaml", "c.yaml"],
      sets: { set: ["a=1,b=2", "c={x,y}"], setString: ["s=1,t=2"], setJson: ['j={"a":1}'], setFile: ["f=x.txt"], setLiteral: ["l=a,b"] },
      options: {
        namespace: "other",
        kubeVersion: "1.29",
        apiVersions: ["x.io/v1", "y.io/v2", "z.io/v1", "w.io/v1"],
        includeCrds: true,
        skipTests: true,
        isUpgrade: false,
        showOnly: ["templates/a.yaml", "templates/b,c.yaml"],
      },
    });
  });

  it("reads pflag's forms commander does not know as commander's, values and what follows -- untouched", () => {
    expect(helmStyleArgv(["-n=ns", "--is-upgrade=false", "--no-hooks=false", "--include-crds=true", "--set", "-n=x", "--skip-tests=maybe", "--", "-a=b"])).toEqual([
      "-n", "ns", "--no-is-upgrade", "--hooks", "--include-crds", "--set", "-n=x", "--skip-tests=maybe", "--", "-a=b",
    ]);
    expect(parseRenderChartArgs(["c", "--include-crds", "--include-crds=false", "--no-hooks"]).options).toEqual({ includeCrds: false, disableHooks: true });
  });

  it("refuses unknown flags, missing flag values and bad argument counts: usage errors, exit 2", async () => {
    expect(() => parseRenderChartArgs(["--debugx"])).toThrow("error: unknown option '--debugx'");
    expect(() => parseRenderChartArgs(["chart", "--set"])).toThrow("error: option '--set <key=value>' argument missing");
    expect(() => parseRenderChartArgs(["chart", "--skip-tests=maybe"])).toThrow("error: unknown option '--skip-tests=maybe'");
    const run = async (args: string[]) => {
      let err = "";
      const code = await runRenderChart(args, {
        call: () => Promise.reject(new Error("the module is not called")),
        stdout: () => undefined,
        stderr: (t) => (err += t),
      });
      return { code, err };
    };
    expect(await run([])).toEqual({ code: 2, err: "error: requires at least 1 arg(s), only received 0: give CHART (and NAME before it)\n(add --help for usage)\n" });
    expect(await run(["a", "b", "c", "d"])).toEqual({ code: 2, err: "error: too many arguments. Expected 2 arguments but got 4.\n(add --help for usage)\n" });
    expect(await run(["n", "chart", "--name-template", "x"])).toEqual({ code: 1, err: "Error: cannot set --name-template and also specify a name\n" });
  });
});
