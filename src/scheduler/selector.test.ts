import { describe, expect, it } from "vitest";
import { SchedulingError } from "../errors/index.js";
import { matchesSelector, parseLabelSelector, type Requirement } from "./selector.js";

describe("parseLabelSelector", () => {
  it.each<[string, Requirement[]]>([
    ["", []],
    ["  \t\n", []],
    ["env=prod", [{ key: "env", operator: "=", values: ["prod"] }]],
    ["env==prod", [{ key: "env", operator: "==", values: ["prod"] }]],
    ["env!=dev", [{ key: "env", operator: "!=", values: ["dev"] }]],
    ["env=", [{ key: "env", operator: "=", values: [""] }]],
    ["tier in (gold, silver)", [{ key: "tier", operator: "in", values: ["gold", "silver"] }]],
    ["tier notin (bronze)", [{ key: "tier", operator: "notin", values: ["bronze"] }]],
    ["x in (a,,b)", [{ key: "x", operator: "in", values: ["a", "", "b"] }]],
    ["x in ()", [{ key: "x", operator: "in", values: [""] }]],
    ["x notin (a,)", [{ key: "x", operator: "notin", values: ["a", ""] }]],
    ["gpu", [{ key: "gpu", operator: "exists", values: [] }]],
    ["!legacy", [{ key: "legacy", operator: "!", values: [] }]],
    ["! legacy", [{ key: "legacy", operator: "!", values: [] }]],
    ["nodes>2", [{ key: "nodes", operator: "gt", values: ["2"] }]],
    ["nodes < 10", [{ key: "nodes", operator: "lt", values: ["10"] }]],
    ["example.com/tier=gold", [{ key: "example.com/tier", operator: "=", values: ["gold"] }]],
    ["app.kubernetes.io/name in (pg)", [{ key: "app.kubernetes.io/name", operator: "in", values: ["pg"] }]],
    ["v=1.2_3-x", [{ key: "v", operator: "=", values: ["1.2_3-x"] }]],
    // "in" and "notin" are keywords only where an operator goes
    ["in=notin", [{ key: "in", operator: "=", values: ["notin"] }]],
    ["x in (in,notin)", [{ key: "x", operator: "in", values: ["in", "notin"] }]],
    [
      " plan = small ,tier!=dev,  region in (eu-1 ,eu-2), gpu , !legacy ",
      [
        { key: "plan", operator: "=", values: ["small"] },
        { key: "tier", operator: "!=", values: ["dev"] },
        { key: "region", operator: "in", values: ["eu-1", "eu-2"] },
        { key: "gpu", operator: "exists", values: [] },
        { key: "legacy", operator: "!", values: [] },
      ],
    ],
  ])("%j", (selector, requirements) => {
    expect(parseLabelSelector(selector)).toEqual(requirements);
  });

  it.each<[string, number, string]>([
    ["a=b,", 5, 'found end of selector, expected a label key or "!"'],
    [",a", 1, 'found ",", expected a label key or "!"'],
    ["a b", 3, 'found "b", expected an operator (=, ==, !=, in, notin, >, <), "," or end of selector'],
    ["a in b", 6, 'found "b", expected "("'],
    ["a in (b", 8, 'found end of selector, expected "," or ")"'],
    ["a in (b c)", 9, 'found "c", expected "," or ")"'],
    ["a notin (b))", 12, 'found ")", expected "," or end of selector'],
    ["a=b=c", 4, 'found "=", expected "," or end of selector'],
    ["a=(b)", 3, 'found "(", expected a label value'],
    ["a===b", 4, 'found "=", expected a label value'],
    ["!a=b", 3, 'found "=", expected "," or end of selector'],
    ["!", 2, 'found end of selector, expected a label key or "!"'],
    ["a>b", 3, 'found "b", expected an integer'],
    ["a<", 3, "found end of selector, expected an integer"],
    ["=b", 1, 'found "=", expected a label key or "!"'],
    ["Example.com/tier=x", 1, 'label key "Example.com/tier" has a prefix that is not a lowercase DNS subdomain'],
    ["/tier=x", 1, 'label key "/tier" has a prefix that is not a lowercase DNS subdomain'],
    ["a/b/c", 1, 'label key "a/b/c" has more than one "/"'],
    ["example.com/=x", 1, 'label key "example.com/" has a name that is not alphanumerics'],
    ["-a=x", 1, 'label key "-a" has a name that is not alphanumerics'],
    [`${"k".repeat(64)}=x`, 1, `label key "${"k".repeat(64)}" has a name longer than 63 characters`],
    ["a=-x", 3, 'label value "-x" is not alphanumerics'],
    ["a in (ok, bad_)", 11, 'label value "bad_" is not alphanumerics'],
    [`a=${"v".repeat(64)}`, 3, `label value "${"v".repeat(64)}" is longer than 63 characters`],
    ["tier=gold;", 6, 'label value "gold;" is not alphanumerics'],
  ])("rejects %j at column %i", (selector, column, problem) => {
    let caught: unknown;
    try {
      parseLabelSelector(selector);
    } catch (e) {
      caught = e;
    }
    expect(caught).toBeInstanceOf(SchedulingError);
    const error = caught as SchedulingError;
    expect(error.message).toContain(`invalid cluster selector ${JSON.stringify(selector)}: column ${column}: ${problem}`);
    expect(error.data).toMatchObject({ selector, column });
  });
});

describe("matchesSelector", () => {
  const labels = { env: "prod", tier: "gold", "example.com/zone": "eu-1", nodes: "5", empty: "" };
  it.each<[string, boolean]>([
    ["", true],
    ["env=prod", true],
    ["env==prod", true],
    ["env=dev", false],
    ["missing=x", false],
    ["env!=dev", true],
    ["env!=prod", false],
    ["missing!=x", true],
    ["tier in (gold,silver)", true],
    ["tier in (silver)", false],
    ["missing in (x)", false],
    ["tier notin (silver)", true],
    ["tier notin (gold)", false],
    ["missing notin (x)", true],
    ["env", true],
    ["missing", false],
    ["!missing", true],
    ["!env", false],
    ["empty", true],
    ["empty=", true],
    ["empty in ()", true],
    ["example.com/zone=eu-1", true],
    ["nodes>4", true],
    ["nodes>5", false],
    ["nodes<6", true],
    ["nodes<5", false],
    ["env>1", false],
    ["missing<9", false],
    ["env=prod,tier=gold,!legacy", true],
    ["env=prod,tier=silver", false],
  ])("%j -> %s", (selector, expected) => {
    expect(matchesSelector(parseLabelSelector(selector), labels)).toBe(expected);
  });

  it("does not see inherited properties as labels", () => {
    expect(matchesSelector(parseLabelSelector("toString"), {})).toBe(false);
  });
});
