import { createHash } from "node:crypto";
import { RenderError } from "../errors/index.js";
import { yamlText } from "./yaml-output.js";

/**
 * The helper library of handlebars templates (documented in docs/templates.md). Names and argument
 * order follow Sprig (Helm, Service Fabrik's Go templates) so that a Go template translates
 * mechanically: `{{ .x | default "a" }}` becomes `{{default "a" x}}`. Every helper is pure:
 * no clock, no randomness, no I/O, so a render is reproducible.
 */

interface Helper {
  min: number;
  max: number;
  fn: (...args: unknown[]) => unknown;
}

const helper = (min: number, max: number, fn: (...args: unknown[]) => unknown): Helper => ({ min, max, fn });

export const HELPERS: Readonly<Record<string, Helper>> = {
  default: helper(2, 2, (fallback, value) => (isMissing(value) ? fallback : value)),
  coalesce: helper(1, Infinity, (...values) => values.find((v) => !isMissing(v))),
  required: helper(2, 2, (message, value) => {
    if (isMissing(value)) throw new RenderError(text(message));
    return value;
  }),
  lookup: helper(2, Infinity, (value, ...path) => lookupPath(value, path)),
  hasKey: helper(2, 2, (map, key) => isRecord(map) && Object.hasOwn(map, text(key))),

  toYaml: helper(1, 1, (value) => yamlText(value)),
  toJson: helper(1, 1, (value) => JSON.stringify(sortedKeys(value ?? null))),
  fromJson: helper(1, 1, (s) => parseJson(text(s))),
  toString: helper(1, 1, (value) => (isRecord(value) || Array.isArray(value) ? JSON.stringify(sortedKeys(value)) : text(value))),
  int: helper(1, 1, (value) => Math.trunc(num(value))),
  b64enc: helper(1, 1, (s) => Buffer.from(text(s), "utf8").toString("base64")),
  b64dec: helper(1, 1, (s) => b64dec(text(s))),
  sha256: helper(1, 1, (s) => createHash("sha256").update(text(s), "utf8").digest("hex")),

  indent: helper(2, 2, (n, s) => indent(count(n), text(s))),
  nindent: helper(2, 2, (n, s) => `\n${indent(count(n), text(s))}`),
  quote: helper(1, 1, (s) => JSON.stringify(text(s))),
  squote: helper(1, 1, (s) => `'${text(s).replaceAll("'", "''")}'`),
  upper: helper(1, 1, (s) => text(s).toUpperCase()),
  lower: helper(1, 1, (s) => text(s).toLowerCase()),
  trim: helper(1, 1, (s) => text(s).trim()),
  trimPrefix: helper(2, 2, (prefix, s) => trimPrefix(text(prefix), text(s))),
  trimSuffix: helper(2, 2, (suffix, s) => trimSuffix(text(suffix), text(s))),
  trunc: helper(2, 2, (n, s) => truncate(int(n), text(s))),
  replace: helper(3, 3, (from, to, s) => replace(text(from), text(to), text(s))),
  join: helper(2, 2, (sep, items) => listOf(items).map(text).join(text(sep))),
  concat: helper(1, Infinity, (...values) => concat(values)),

  eq: helper(2, 2, (a, b) => a === b),
  ne: helper(2, 2, (a, b) => a !== b),
  lt: helper(2, 2, (a, b) => compare(a, b) < 0),
  le: helper(2, 2, (a, b) => compare(a, b) <= 0),
  gt: helper(2, 2, (a, b) => compare(a, b) > 0),
  ge: helper(2, 2, (a, b) => compare(a, b) >= 0),
  // Like Go's and/or: the deciding value itself, so `or a b` also picks a value.
  and: helper(1, Infinity, (...values) => {
    // The first falsy value itself (even `undefined`), else the last value.
    const i = values.findIndex((v) => !truthy(v));
    return i >= 0 ? values[i] : values[values.length - 1];
  }),
  or: helper(1, Infinity, (...values) => values.find(truthy) ?? values[values.length - 1]),
  not: helper(1, 1, (value) => !truthy(value)),

  add: helper(2, Infinity, (...values) => values.map(num).reduce((a, b) => a + b)),
  sub: helper(2, 2, (a, b) => num(a) - num(b)),
  mul: helper(2, Infinity, (...values) => values.map(num).reduce((a, b) => a * b)),
  div: helper(2, 2, (a, b) => divide(num(a), num(b))),

  list: helper(0, Infinity, (...values) => values),
  dict: helper(0, Infinity, (...pairs) => dict(pairs)),
  merge: helper(1, Infinity, (...maps) => maps.reduce<Record<string, unknown>>((acc, m) => mergeInto(acc, mapOf(m)), {})),
};

/** `undefined`, `null` and `""` are missing; unlike Sprig, `0` and `false` are values (replicas: 0 stays 0). */
function isMissing(value: unknown): boolean {
  return value === undefined || value === null || value === "";
}

/** The truthiness of `{{#if}}`: empty lists are false too. */
function truthy(value: unknown): boolean {
  return !(!value || (Array.isArray(value) && value.length === 0));
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function typeName(value: unknown): string {
  return Array.isArray(value) ? "list" : isRecord(value) ? "map" : typeof value;
}

/** A scalar as text; a missing value is ""; maps and lists must go through toYaml/toJson. */
function text(value: unknown): string {
  if (value === undefined || value === null) return "";
  if (typeof value === "string") return value;
  if (typeof value === "number" || typeof value === "boolean") return String(value);
  throw new RenderError(`expected a string, got a ${typeName(value)} (use toYaml or toJson)`);
}

function num(value: unknown): number {
  const n = typeof value === "number" ? value : typeof value === "string" && value.trim() !== "" ? Number(value) : NaN;
  if (!Number.isFinite(n)) throw new RenderError(`${JSON.stringify(value) ?? "undefined"} is not a number`);
  return n;
}

function int(value: unknown): number {
  const n = num(value);
  if (!Number.isInteger(n)) throw new RenderError(`${n} is not an integer`);
  return n;
}

function count(value: unknown): number {
  const n = int(value);
  if (n < 0) throw new RenderError(`${n} is negative`);
  return n;
}

function listOf(value: unknown): unknown[] {
  if (!Array.isArray(value)) throw new RenderError(`expected a list, got a ${typeName(value)}`);
  return value;
}

function mapOf(value: unknown): Record<string, unknown> {
  if (value === undefined || value === null) return {};
  if (!isRecord(value)) throw new RenderError(`expected a map, got a ${typeName(value)}`);
  return value;
}

/** Defines rather than assigns, so a key named `__proto__` is data, not a prototype change. */
function setOwn(target: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

/**
 * Each argument is a key of the current value (an index for lists); an argument that is not a
 * key of the current value is read as a dotted path. Only own properties are read.
 */
function lookupPath(value: unknown, path: unknown[]): unknown {
  let current = value;
  for (const arg of path) {
    const key = text(arg);
    const segments = isRecord(current) && Object.hasOwn(current, key) ? [key] : key.split(".");
    for (const segment of segments) {
      if (Array.isArray(current) && /^\d+$/.test(segment)) current = current[Number(segment)];
      else if (isRecord(current) && Object.hasOwn(current, segment)) current = current[segment];
      else return undefined;
    }
  }
  return current;
}

/** Maps rebuilt with sorted keys (integer-like keys still come first: that is JS). */
function sortedKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortedKeys);
  if (!isRecord(value)) return value;
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value).sort()) setOwn(out, key, sortedKeys(value[key]));
  return out;
}

function parseJson(s: string): unknown {
  try {
    return JSON.parse(s);
  } catch (e) {
    throw new RenderError(`invalid JSON: ${e instanceof Error ? e.message : String(e)}`, { cause: e });
  }
}

function b64dec(s: string): string {
  const compact = s.replace(/\s+/g, "");
  if (compact.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(compact)) throw new RenderError("invalid base64");
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(Buffer.from(compact, "base64"));
  } catch (e) {
    throw new RenderError("decoded bytes are not UTF-8 text", { cause: e });
  }
}

/** Empty lines stay empty: no trailing blanks, and YAML block scalars do not need them. */
function indent(n: number, s: string): string {
  const pad = " ".repeat(n);
  return s
    .split("\n")
    .map((line) => (line === "" ? line : pad + line))
    .join("\n");
}

function trimPrefix(prefix: string, s: string): string {
  return prefix !== "" && s.startsWith(prefix) ? s.slice(prefix.length) : s;
}

function trimSuffix(suffix: string, s: string): string {
  return suffix !== "" && s.endsWith(suffix) ? s.slice(0, -suffix.length) : s;
}

/** Sprig's trunc: the first n characters, or the last -n for a negative n. */
function truncate(n: number, s: string): string {
  return n >= 0 ? s.slice(0, n) : s.slice(n);
}

function replace(from: string, to: string, s: string): string {
  if (from === "") throw new RenderError("the string to replace is empty");
  return s.replaceAll(from, to);
}

/** Lists are concatenated into one list; anything else is joined as text. */
function concat(values: unknown[]): unknown {
  const lists = values.filter(Array.isArray);
  if (lists.length === values.length) return lists.flat(1);
  if (lists.length > 0) throw new RenderError("cannot mix lists and strings");
  return values.map(text).join("");
}

function compare(a: unknown, b: unknown): number {
  if (typeof a === "number" && typeof b === "number") return a - b;
  if (typeof a === "string" && typeof b === "string") return a < b ? -1 : a > b ? 1 : 0;
  throw new RenderError(`cannot compare a ${typeName(a)} with a ${typeName(b)} (both must be numbers or both strings)`);
}

/** Integer division, as in Sprig. */
function divide(a: number, b: number): number {
  if (b === 0) throw new RenderError("division by zero");
  return Math.trunc(a / b);
}

function dict(pairs: unknown[]): Record<string, unknown> {
  if (pairs.length % 2 !== 0) throw new RenderError("expects key/value pairs, got an odd number of arguments");
  const out: Record<string, unknown> = {};
  for (let i = 0; i < pairs.length; i += 2) {
    const key = pairs[i];
    if (typeof key !== "string") throw new RenderError(`key ${i / 2 + 1} is a ${typeName(key)}, not a string`);
    setOwn(out, key, pairs[i + 1]);
  }
  return out;
}

/** Deep merge into a copy; keys already set win (the leftmost map wins, as in Sprig). */
function mergeInto(target: Record<string, unknown>, source: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(target)) setOwn(out, key, target[key]);
  for (const key of Object.keys(source)) {
    const mine = out[key];
    const theirs = source[key];
    if (!Object.hasOwn(out, key) || mine === undefined) setOwn(out, key, theirs);
    else if (isRecord(mine) && isRecord(theirs)) setOwn(out, key, mergeInto(mine, theirs));
  }
  return out;
}
