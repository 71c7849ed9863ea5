import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { RenderError } from "../errors/index.js";
import { renderTextNow, type RenderValues } from "./index.js";

const VALUES: RenderValues = {
  service: { spec: { name: "postgresql" } },
  plan: { spec: { id: "plan-1", context: { size: "small", replicas: 0, enabled: false, ranges: ["10.0.0.0/8", "192.168.0.0/16"] } } },
  instance: {
    metadata: { name: "pg-1", namespace: "tenant-a" },
    spec: {
      parameters: {
        "app.kubernetes.io/name": "dotted key",
        size: "large",
        empty: "",
        nested: { b: 2, a: { y: "yes", x: 1 } },
        users: [{ name: "alice" }, { name: "bob" }],
        html: `<a href="x">&'`,
      },
    },
  },
  bindings: [],
};

function run(content: string, values: RenderValues = VALUES): string {
  return renderTextNow({ action: "t", templates: [{ action: "t", type: "handlebars", content, source: "test.hbs" }], values, planName: "p" });
}

function failure(content: string): RenderError {
  try {
    run(content);
  } catch (e) {
    if (e instanceof RenderError) return e;
    throw e;
  }
  throw new Error(`rendering ${JSON.stringify(content)} did not fail`);
}

describe("helpers", () => {
  it("default: the value unless it is missing or empty; 0 and false are values", () => {
    expect(run(`{{default "small" instance.spec.parameters.size}}`)).toBe("large");
    expect(run(`{{default "small" instance.spec.parameters.nope}}`)).toBe("small");
    expect(run(`{{default "small" instance.spec.parameters.empty}}`)).toBe("small");
    expect(run(`{{default 3 plan.spec.context.replicas}}`)).toBe("0");
    expect(run(`{{default true plan.spec.context.enabled}}`)).toBe("false");
  });

  it("coalesce: the first value that is not missing", () => {
    expect(run(`{{coalesce instance.spec.parameters.nope instance.spec.parameters.empty "c"}}`)).toBe("c");
    expect(run(`{{coalesce instance.spec.parameters.nope}}`)).toBe("");
  });

  it("required: fails the render with the given message and the line", () => {
    expect(run(`{{required "size is required" instance.spec.parameters.size}}`)).toBe("large");
    const e = failure(`a: 1\nsize: {{required "parameter size is required" instance.spec.parameters.nope}}`);
    expect(e.message).toBe(
      'plan p: template t (test.hbs): line 2: helper required: parameter size is required: "size: {{required \\"parameter size is required\\" instance.spec.parameters.nope}}"',
    );
  });

  it("lookup: deep paths, list indexes, exact keys with dots, several path arguments", () => {
    expect(run(`{{lookup instance "spec.parameters.size"}}`)).toBe("large");
    expect(run(`{{lookup instance "spec.parameters.users.1.name"}}`)).toBe("bob");
    expect(run(`{{lookup instance.spec.parameters "app.kubernetes.io/name"}}`)).toBe("dotted key");
    expect(run(`{{lookup instance "spec" "parameters" "nested.a.x"}}`)).toBe("1");
    expect(run(`{{lookup plan.spec.context.ranges 0}}`)).toBe("10.0.0.0/8");
    expect(run(`{{lookup instance "spec.nope.deeper"}}`)).toBe("");
  });

  it("lookup and plain paths never reach prototype properties", () => {
    expect(run(`[{{lookup instance "constructor"}}][{{lookup instance "metadata.name.length"}}][{{instance.constructor}}]`)).toBe("[][][]");
  });

  it("hasKey: own keys of a map", () => {
    expect(run(`{{hasKey instance.spec.parameters "size"}} {{hasKey instance.spec.parameters "toString"}} {{hasKey bindings "0"}}`)).toBe("true false false");
  });

  it("toYaml: sorted keys, quoted ambiguous strings, and nindent places it in a document", () => {
    expect(run(`{{toYaml instance.spec.parameters.nested}}`)).toBe('a:\n  x: 1\n  "y": "yes"\nb: 2');
    expect(run(`{{toYaml "yes"}}|{{toYaml 5}}|{{toYaml instance.spec.parameters.nope}}`)).toBe('"yes"|5|null');
    const doc = run(`spec:\n  params:{{nindent 4 (toYaml instance.spec.parameters.nested)}}\n  users:{{nindent 4 (toYaml instance.spec.parameters.users)}}\n`);
    expect(doc).toBe('spec:\n  params:\n    a:\n      x: 1\n      "y": "yes"\n    b: 2\n  users:\n    - name: alice\n    - name: bob\n');
    expect(parse(doc)).toEqual({ spec: { params: { a: { x: 1, y: "yes" }, b: 2 }, users: [{ name: "alice" }, { name: "bob" }] } });
  });

  it("toYaml keeps a multi-line string a block that nindent can place", () => {
    const values = { ...VALUES, instance: { spec: { parameters: { conf: "a = 1\n\nb = 2\n" } } } };
    const doc = run(`conf:{{nindent 2 (toYaml instance.spec.parameters.conf)}}\n`, values);
    expect(doc).toBe("conf:\n  |\n  a = 1\n\n  b = 2\n");
    expect(parse(doc)).toEqual({ conf: "a = 1\n\nb = 2\n" });
    for (const conf of [" leading blank\nx", "a\n  b", "kept\n\n\n", "\n\nstarts empty"]) {
      const text = run(`top:\n  conf:{{nindent 4 (toYaml v)}}\n  list:{{nindent 4 (toYaml (list v))}}\n`, { ...VALUES, v: conf });
      expect(parse(text)).toEqual({ top: { conf, list: [conf] } });
    }
  });

  it("toJson and fromJson: compact JSON with sorted keys, and back", () => {
    expect(run(`{{toJson instance.spec.parameters.nested}}`)).toBe('{"a":{"x":1,"y":"yes"},"b":2}');
    expect(run(`{{toJson instance.spec.parameters.nope}}`)).toBe("null");
    expect(run(`{{lookup (fromJson '{"a":{"b":[1,2]}}') "a.b.1"}}`)).toBe("2");
    expect(failure(`{{fromJson "{nope"}}`).message).toMatch(/^plan p: template t \(test\.hbs\): line 1: helper fromJson: invalid JSON: /);
  });

  it("b64enc and b64dec: UTF-8 text to base64 and back; invalid input fails", () => {
    expect(run(`{{b64enc "grüße"}}`)).toBe("Z3LDvMOfZQ==");
    expect(run(`{{b64dec "Z3LDvMOfZQ=="}}`)).toBe("grüße");
    expect(failure(`{{b64dec "not base64!"}}`).message).toContain("helper b64dec: invalid base64");
  });

  it("indent and nindent: every non-empty line, nindent with a leading newline", () => {
    expect(run(`{{indent 2 "a\nb\n\nc"}}`)).toBe("  a\n  b\n\n  c");
    expect(run(`x:{{nindent 4 "a: 1"}}`)).toBe("x:\n    a: 1");
    expect(failure(`{{indent -1 "a"}}`).message).toContain("helper indent: -1 is negative");
  });

  it("quote and squote: YAML double- and single-quoted strings", () => {
    expect(run(`{{quote 'say "hi"\nnow'}} {{quote 15}} {{quote instance.spec.parameters.nope}}`)).toBe('"say \\"hi\\"\\nnow" "15" ""');
    expect(run(`{{squote "it's"}}`)).toBe("'it''s'");
    expect(parse(run(`a: {{quote 'x: "y"\\z'}}\nb: {{squote "it's: on"}}`))).toEqual({ a: 'x: "y"\\z', b: "it's: on" });
  });

  it("eq, ne, lt, le, gt, ge", () => {
    expect(run(`{{eq instance.spec.parameters.size "large"}} {{eq 1 "1"}} {{ne 1 2}}`)).toBe("true false true");
    expect(run(`{{lt 1 2}} {{le 2 2}} {{gt "b" "a"}} {{ge 1 2}}`)).toBe("true true true false");
    expect(run(`{{#if (eq plan.spec.context.size "small")}}small{{else}}other{{/if}}`)).toBe("small");
    expect(failure(`{{lt 1 "2"}}`).message).toContain("helper lt: cannot compare a number with a string");
  });

  it("and, or, not: #if truthiness, returning the deciding value", () => {
    expect(run(`{{and 1 "x"}} {{and 1 0 "x"}} {{or instance.spec.parameters.nope "fallback"}} {{or 0 false}}`)).toBe("x 0 fallback false");
    // A missing value is falsy and decides `and`, even followed by truthy ones.
    expect(run(`{{#if (and instance.spec.parameters.nope "x")}}yes{{else}}no{{/if}}`)).toBe("no");
    expect(run(`{{not bindings}} {{not plan.spec.context.ranges}} {{#if (and plan.spec.context.ranges (not plan.spec.context.enabled))}}yes{{/if}}`)).toBe("true false yes");
  });

  it("upper, lower, trim, trimPrefix, trimSuffix", () => {
    expect(run(`{{upper "abc"}} {{lower "ABC"}} [{{trim "  a b  "}}] {{trimPrefix "pg-" "pg-1"}} {{trimSuffix "-" "name-"}}`)).toBe("ABC abc [a b] 1 name");
  });

  it("trunc: the first n characters, or the last -n", () => {
    expect(run(`{{trunc 5 "hello world"}}|{{trunc -5 "hello world"}}|{{trunc 63 "short"}}`)).toBe("hello|world|short");
  });

  it("replace: every occurrence (Sprig order: old, new, string)", () => {
    expect(run(`{{replace "." "-" "a.b.c"}}`)).toBe("a-b-c");
  });

  it("join and concat: strings and lists", () => {
    expect(run(`{{join "," plan.spec.context.ranges}}`)).toBe("10.0.0.0/8,192.168.0.0/16");
    expect(run(`{{concat plan.spec.service "pg-" instance.metadata.name "-" 1}}`)).toBe("pg-pg-1-1");
    expect(run(`{{toJson (concat (list 1 2) (list 3))}}`)).toBe("[1,2,3]");
    expect(failure(`{{concat (list 1) "a"}}`).message).toContain("helper concat: cannot mix lists and strings");
  });

  it("sha256: hex digest of the UTF-8 text", () => {
    expect(run(`{{sha256 "abc"}}`)).toBe("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  });

  it("list and dict build values for toYaml; a __proto__ key is plain data", () => {
    expect(run(`{{toJson (dict "b" (list 1 "two") "a" (dict))}}`)).toBe('{"a":{},"b":[1,"two"]}');
    expect(run(`{{toJson (dict "__proto__" "x")}} {{toJson (list)}}`)).toBe('{"__proto__":"x"} []');
    expect(failure(`{{dict "a"}}`).message).toContain("helper dict: expects key/value pairs");
  });

  it("merge: deep, the leftmost value wins, inputs untouched", () => {
    expect(run(`{{toJson (merge instance.spec.parameters.nested (dict "b" 3 "c" 4 "a" (dict "z" 0)))}}|{{toJson instance.spec.parameters.nested}}`)).toBe(
      '{"a":{"x":1,"y":"yes","z":0},"b":2,"c":4}|{"a":{"x":1,"y":"yes"},"b":2}',
    );
  });

  it("toString and int", () => {
    expect(run(`{{toString 5}} {{toString (list 1)}} {{int "42"}} {{int 3}}`)).toBe("5 [1] 42 3");
    expect(failure(`{{int "4x"}}`).message).toContain('helper int: "4x" is not a number');
    expect(run(`{{int "7.9"}}`)).toBe("7");
  });

  it("add, sub, mul, div (integer division)", () => {
    expect(run(`{{add 1 2 3}} {{sub 5 7}} {{mul plan.spec.context.replicas 4}} {{mul "2" 1024}} {{div 7 2}}`)).toBe("6 -2 0 2048 3");
    expect(failure(`{{div 1 0}}`).message).toContain("helper div: division by zero");
  });

  it("string helpers refuse maps and lists, pointing at toYaml", () => {
    expect(failure(`x\n{{upper instance.spec}}`).message).toBe(
      'plan p: template t (test.hbs): line 2: helper upper: expected a string, got a map (use toYaml or toJson): "{{upper instance.spec}}"',
    );
  });

  it("checks arity, block use and hash arguments", () => {
    expect(failure(`{{eq 1}}`).message).toContain("helper eq: expects 2 argument(s), got 1");
    expect(failure(`{{#upper "a"}}x{{/upper}}`).message).toContain("helper upper: is not a block helper");
    expect(failure(`{{indent 2 "a" width=3}}`).message).toContain("helper indent: takes no hash arguments");
  });

  it("has no log helper and no unknown helpers: both fail at compile time with the line", () => {
    expect(failure(`a\n{{log "x"}}`).message).toBe(
      'plan p: template t (test.hbs): line 2: You specified knownHelpersOnly, but used the unknown helper log: "{{log \\"x\\"}}"',
    );
    expect(failure(`{{nindnet 2 "x"}}`).message).toContain("line 1: You specified knownHelpersOnly, but used the unknown helper nindnet");
  });

  it("builtins if, unless, each, with work, and values are not HTML-escaped", () => {
    const out = run(`{{#each instance.spec.parameters.users}}{{name}}{{#unless @last}},{{/unless}}{{/each}} {{#with instance.metadata}}{{namespace}}{{/with}} {{plan.missing.deeply}}<&">`);
    expect(out).toBe(`alice,bob tenant-a <&">`);
    expect(run(`{{instance.spec.parameters.html}}`)).toBe(`<a href="x">&'`);
  });
});
