import { readdir, readFile } from "node:fs/promises";
import path from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";
import * as errors from "./index.js";
import { BaseError, ConflictError, DataDirLockedError, GitRemoteError, KubeApiError, NudgeError, RenderPending, ServiceUnavailableError, WasmCallError } from "./index.js";

/** What a log line of the error holds: pino serializes with toJSON. */
const logged = (error: Error) => JSON.parse(JSON.stringify(error)) as Record<string, unknown>;

describe("toJSON keeps what a log reader needs", () => {
  it("a subclass's own fields are in data: the HTTP status, the reason, the kind", () => {
    expect(logged(new KubeApiError("watch /p failed: Too Many Requests", { status: 429, reason: "TooManyRequests", retryAfterMs: 1000 }))).toEqual({
      code: "KubeApiError",
      message: "watch /p failed: Too Many Requests",
      data: { status: 429, reason: "TooManyRequests", retryAfterMs: 1000 },
    });
    expect(logged(new GitRemoteError("hook", "pre-receive hook declined"))).toMatchObject({ data: { kind: "hook", remoteMessage: "pre-receive hook declined" } });
    expect(logged(new NudgeError("east", "cannot annotate", { status: 403 }))).toMatchObject({ data: { clusterId: "east", status: 403 } });
    expect(logged(new ConflictError("instance x exists with other attributes"))).toMatchObject({ code: "ConflictError", data: { status: 409 } });
    expect(logged(new ServiceUnavailableError("remote not reached"))).toMatchObject({ data: { status: 503, retryAfter: 5 } });
  });

  it("given data stays, fields left undefined are left out, and the cause is serialized the same way", () => {
    const cause = new KubeApiError("list /p: HTTP 403", { status: 403 });
    const error = new DataDirLockedError("/data", "serve", 42, undefined, { cause });
    const json = logged(error);
    expect(json.data).toEqual({ holderPid: 42, dataDir: "/data", role: "serve" });
    expect(json.cause).toEqual({ code: "KubeApiError", message: "list /p: HTTP 403", data: { status: 403 } });
    expect(Object.keys(logged(new KubeApiError("network down")).data as object)).toEqual([]);
  });

  it("a domain error's own fields are in data, and it carries no HTTP status", () => {
    expect(logged(new errors.ClusterMovedError("cluster eu-1 moved", { clusterId: "eu-1", from: "eu", to: "us" }))).toEqual({
      code: "ClusterMoved",
      message: "cluster eu-1 moved",
      data: { clusterId: "eu-1", from: "eu", to: "us" },
    });
    expect(logged(new errors.SchedulingError("no cluster", { data: { selector: "a=b" } }))).toEqual({ code: "SchedulingError", message: "no cluster", data: { selector: "a=b" } });
    expect(logged(new errors.RenderError("plan p: template t failed"))).toEqual({ code: "RenderError", message: "plan p: template t failed", data: {} });
  });

  it("the render classes keep their context, and a pending render's promise stays out", () => {
    expect(logged(new WasmCallError("did not finish within 5 ms", "timeout"))).toEqual({ code: "WasmCallError", message: "did not finish within 5 ms", data: { reason: "timeout" } });
    const pending = new RenderPending(Promise.resolve());
    expect(logged(pending)).toEqual({ code: "RenderPending", message: "the template is being rendered", data: {} });
    expect(pending.settled).toBeInstanceOf(Promise);
  });
});

describe("InvalidArgumentError", () => {
  it("is no OSB answer of its own: the error middleware answers it as any unexpected failure (500, its message kept for the log)", () => {
    const error = new errors.InvalidArgumentError('path "a/../b" has an invalid segment ".."');
    expect(errors.isOsbError(error)).toBe(false);
    expect(logged(error)).toEqual({ code: "InvalidArgument", message: 'path "a/../b" has an invalid segment ".."', data: {} });
  });
});

describe("toError", () => {
  it("keeps an Error as it is and makes anything else thrown an InternalError with its text", () => {
    const error = new TypeError("x");
    expect(errors.toError(error)).toBe(error);
    const made = errors.toError("worker gone");
    expect(made).toBeInstanceOf(errors.InternalError);
    expect(made).toMatchObject({ code: errors.InternalError.code, message: "worker gone", cause: "worker gone" });
    expect(errors.toError(undefined).message).toBe("undefined");
  });
});

type ErrorClass = (abstract new (...args: never[]) => BaseError) & { readonly code: string };

const isClass = (value: unknown): value is abstract new (...args: never[]) => unknown =>
  typeof value === "function" && /^class\b/.test(Function.prototype.toString.call(value));

/** The classes src/errors exports, by export name. */
const exported = Object.entries(errors as Record<string, unknown>).filter((entry): entry is [string, ErrorClass] => isClass(entry[1]));

/** Bases that are never thrown themselves. */
const ABSTRACT = new Set<unknown>([errors.BaseError, errors.OsbError]);

/**
 * One instance of every concrete class src/errors exports. A class added there and not here fails
 * the walk below: add it with the arguments it takes.
 */
const samples: Record<string, () => BaseError> = {
  BadRequestError: () => new errors.BadRequestError("bad"),
  RenderError: () => new errors.RenderError("bad template"),
  UnauthorizedError: () => new errors.UnauthorizedError(),
  PayloadTooLargeError: () => new errors.PayloadTooLargeError("too large"),
  UnsupportedMediaTypeError: () => new errors.UnsupportedMediaTypeError("br"),
  ForbiddenError: () => new errors.ForbiddenError("no quota"),
  NotFoundError: () => new errors.NotFoundError("no such instance"),
  ConflictError: () => new errors.ConflictError("exists"),
  GoneError: () => new errors.GoneError("gone"),
  PreconditionFailedError: () => new errors.PreconditionFailedError("version"),
  AsyncRequiredError: () => new errors.AsyncRequiredError(),
  ConcurrencyError: () => new errors.ConcurrencyError("in progress"),
  MaintenanceInfoConflictError: () => new errors.MaintenanceInfoConflictError("version"),
  RequiresAppError: () => new errors.RequiresAppError(),
  UnprocessableEntityError: () => new errors.UnprocessableEntityError("not updateable"),
  SchedulingError: () => new errors.SchedulingError("no cluster"),
  ServiceUnavailableError: () => new errors.ServiceUnavailableError("remote"),
  AbandonedRequestError: () => new errors.AbandonedRequestError("the platform went away"),
  InternalError: () => new errors.InternalError("bug"),
  ConfigError: () => new errors.ConfigError([{ file: "config", path: "git.branch", message: "is not a valid branch name" }]),
  CatalogError: () => new errors.CatalogError([{ file: "catalog/a.yaml", path: "", message: "is not valid YAML" }]),
  GitRemoteError: () => new errors.GitRemoteError("rejected", "non-fast-forward"),
  DataDirLockedError: () => new errors.DataDirLockedError("/data", "serve", 1, "host"),
  GitRepositoryError: () => new errors.GitRepositoryError("object missing"),
  InvalidArgumentError: () => new errors.InvalidArgumentError("path must not be empty"),
  GitWriterClosedError: () => new errors.GitWriterClosedError("closed"),
  NudgeError: () => new errors.NudgeError("east", "webhook answered 500", { status: 500 }),
  KubeApiError: () => new errors.KubeApiError("list failed", { status: 403 }),
  ImportAccountingError: () => new errors.ImportAccountingError("does not add up", ["a-1"]),
  TemplateFailure: () => new errors.TemplateFailure("parse error"),
  ChartError: () => new errors.ChartError("chart not found", { debugHint: true }),
  WasmCallError: () => new errors.WasmCallError("exited", "exited"),
  RenderPending: () => new errors.RenderPending(Promise.resolve()),
  StoreMismatchError: () => new errors.StoreMismatchError("an operation on store eu edited clusters/us-1/a.yaml", { path: "clusters/us-1/a.yaml", store: "eu", owner: "us" }),
  ClusterMovingError: () => new errors.ClusterMovingError("cluster eu-1 is moving", { clusterId: "eu-1", to: "us" }),
  ClusterMovedError: () => new errors.ClusterMovedError("cluster eu-1 moved", { clusterId: "eu-1", from: "eu", to: "us" }),
  StoreUnavailableError: () => new errors.StoreUnavailableError("store eu has not answered", { store: "eu" }),
  InstanceMoveAcrossStoresError: () => new errors.InstanceMoveAcrossStoresError("across", { instanceId: "i", clusterId: "us-1", from: "eu", to: "us" }),
  ClusterMoveRefusedError: () => new errors.ClusterMoveRefusedError("store nowhere is not configured"),
  ClusterMoveConflictError: () => new errors.ClusterMoveConflictError("cluster eu-1 is in store us already"),
};

describe("every error class src/errors exports", () => {
  it("extends BaseError and has a static code of its own, the code and name of its instances", () => {
    expect(exported.map(([name]) => name)).toEqual(expect.arrayContaining(["BaseError", "OsbError", ...Object.keys(samples)]));
    for (const [name, cls] of exported) {
      expect(cls === BaseError || cls.prototype instanceof BaseError, `${name} extends BaseError`).toBe(true);
      expect(Object.hasOwn(cls, "code"), `${name} has a static code of its own`).toBe(true);
      expect(typeof cls.code, name).toBe("string");
      if (ABSTRACT.has(cls)) continue;
      const sample = samples[name];
      expect(sample, `a sample of ${name} in this test`).toBeDefined();
      const error = sample!();
      expect(Object.getPrototypeOf(error), name).toBe(cls.prototype);
      expect({ code: error.code, name: error.name }).toEqual({ code: cls.code, name: cls.code });
      expect(JSON.parse(JSON.stringify(error))).toMatchObject({ code: cls.code });
    }
  });

  it("no two share a code, and every sample is of an exported class", () => {
    const codes = exported.map(([, cls]) => cls.code);
    expect(codes.filter((code, i) => codes.indexOf(code) !== i)).toEqual([]);
    expect(Object.keys(samples).filter((name) => !exported.some(([n]) => n === name))).toEqual([]);
  });
});

/** A class declared in src/ outside src/errors that extends an error class, and the code it declares. */
interface DeclaredErrorClass {
  where: string;
  name: string;
  /** The class it extends. */
  base: string;
  code: string | undefined;
}

/**
 * The error classes of a source text: classes extending one of `bases` (or a class of the same text
 * that does), each with the string of its `static code` (undefined when it declares none).
 */
function errorClassesOf(file: string, text: string, bases: ReadonlySet<string>): DeclaredErrorClass[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const classes: { node: ts.ClassLikeDeclaration; name: string; base: string }[] = [];
  const visit = (node: ts.Node): void => {
    if ((ts.isClassDeclaration(node) || ts.isClassExpression(node)) && node.heritageClauses) {
      const extended = node.heritageClauses.find((h) => h.token === ts.SyntaxKind.ExtendsKeyword)?.types[0]?.expression;
      if (extended && ts.isIdentifier(extended)) classes.push({ node, name: node.name?.text ?? "(anonymous)", base: extended.text });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  const errorNames = new Set(bases);
  for (let grown = true; grown; ) {
    grown = false;
    for (const c of classes) {
      if (errorNames.has(c.base) && !errorNames.has(c.name)) {
        errorNames.add(c.name);
        grown = true;
      }
    }
  }
  return classes
    .filter((c) => errorNames.has(c.base))
    .map(({ node, name, base }) => {
      const member = node.members.find(
        (m): m is ts.PropertyDeclaration =>
          ts.isPropertyDeclaration(m) && ts.isIdentifier(m.name) && m.name.text === "code" && (ts.getCombinedModifierFlags(m) & ts.ModifierFlags.Static) !== 0,
      );
      const init = member?.initializer;
      const line = source.getLineAndCharacterOfPosition(node.getStart()).line + 1;
      return { where: `${file}:${line}`, name, base, code: init && ts.isStringLiteral(init) ? init.text : undefined };
    });
}

const SRC = path.resolve(import.meta.dirname, "..");
const isSourceFile = (f: string) => f.endsWith(".ts") && !f.endsWith(".test.ts") && !f.endsWith(".d.ts") && !f.split(path.sep).includes("testdata");

describe("error classes declared outside src/errors", () => {
  const bases = new Set(["Error", ...exported.map(([name]) => name)]);

  it("each extends BaseError (not Error) with a static code no other class has", async () => {
    const files = (await readdir(SRC, { recursive: true })).filter((f) => isSourceFile(f) && !f.startsWith(`errors${path.sep}`)).sort();
    const found: DeclaredErrorClass[] = [];
    for (const f of files) {
      const text = await readFile(path.join(SRC, f), "utf8");
      if (/\bclass\b[^{]*\bextends\b/.test(text)) found.push(...errorClassesOf(`src/${f.split(path.sep).join("/")}`, text, bases));
    }
    expect(found.filter((c) => c.base === "Error" || c.code === undefined).map((c) => `${c.where} ${c.name}`)).toEqual([]);
    const codes = [...exported.map(([, cls]) => cls.code), ...found.map((c) => c.code!)];
    expect(codes.filter((code, i) => codes.indexOf(code) !== i)).toEqual([]);
  });

  it("the walk finds such a class, one that extends Error directly, and one without a code", () => {
    const text = `
      class Refusal extends BaseError { static override readonly code = "ConflictError"; }
      class Deeper extends Refusal { static readonly code = "Deeper"; }
      export class Plain extends Error {}
      const Anonymous = class extends NotFoundError {};
      class Unrelated extends Map {}`;
    expect(errorClassesOf("x.ts", text, bases)).toEqual([
      { where: "x.ts:2", name: "Refusal", base: "BaseError", code: "ConflictError" },
      { where: "x.ts:3", name: "Deeper", base: "Refusal", code: "Deeper" },
      { where: "x.ts:4", name: "Plain", base: "Error", code: undefined },
      { where: "x.ts:5", name: "(anonymous)", base: "NotFoundError", code: undefined },
    ]);
  });
});
