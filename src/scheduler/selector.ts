import { SchedulingError } from "../errors/index.js";

/**
 * Kubernetes label selectors in their string form, as apimachinery `labels.Parse` reads them:
 * `env=prod, tier in (gold,silver), !legacy, example.com/zone notin (a), gpu, replicas>2`.
 */

/** The operators, spelled like apimachinery's `selection.Operator`. */
export type SelectorOperator = "=" | "==" | "!=" | "in" | "notin" | "exists" | "!" | "gt" | "lt";

/** One requirement; a selector holds when all of its requirements do. `values` is empty for `exists` and `!`. */
export interface Requirement {
  key: string;
  operator: SelectorOperator;
  values: string[];
}

type TokenKind = "word" | "end" | "!" | "=" | "==" | "!=" | ">" | "<" | "(" | ")" | ",";
interface Token {
  kind: TokenKind;
  text: string;
  /** 1-based. */
  column: number;
}

const WHITESPACE = new Set([" ", "\t", "\r", "\n"]);
const SYMBOLS = new Set(["=", "!", "(", ")", ",", ">", "<"]);
const NAME = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const INTEGER = /^[+-]?\d+$/;

/** The tokens before the end, and the end token (where errors about a missing token point). */
function tokenize(selector: string): { tokens: Token[]; end: Token } {
  const tokens: Token[] = [];
  let i = 0;
  for (;;) {
    while (WHITESPACE.has(selector.charAt(i))) i++;
    const column = i + 1;
    if (i >= selector.length) return { tokens, end: { kind: "end", text: "", column } };
    const pair = selector.slice(i, i + 2);
    const char = selector.charAt(i);
    let text: string;
    let kind: TokenKind;
    if (pair === "==" || pair === "!=") [kind, text] = [pair, pair];
    else if (SYMBOLS.has(char)) [kind, text] = [char as TokenKind, char];
    else {
      let end = i;
      while (end < selector.length && !SYMBOLS.has(selector.charAt(end)) && !WHITESPACE.has(selector.charAt(end))) end++;
      [kind, text] = ["word", selector.slice(i, end)];
    }
    tokens.push({ kind, text, column });
    i += text.length;
  }
}

function keyProblem(key: string): string | undefined {
  const parts = key.split("/");
  if (parts.length > 2) return 'has more than one "/" (expected [prefix/]name)';
  const name = parts.at(-1) ?? "";
  if (parts.length === 2) {
    const prefix = parts[0] ?? "";
    if (prefix.length === 0 || prefix.length > 253 || !DNS_SUBDOMAIN.test(prefix)) {
      return "has a prefix that is not a lowercase DNS subdomain (RFC 1123, at most 253 characters)";
    }
  }
  if (name.length > 63) return "has a name longer than 63 characters";
  if (!NAME.test(name)) return "has a name that is not alphanumerics, '-', '_' or '.' starting and ending with an alphanumeric";
  return undefined;
}

function valueProblem(value: string): string | undefined {
  if (value.length > 63) return "is longer than 63 characters";
  if (value !== "" && !NAME.test(value)) return "is not alphanumerics, '-', '_' or '.' starting and ending with an alphanumeric";
  return undefined;
}

/** Parses a label selector; "" (or blanks) selects everything. Throws SchedulingError naming the column and token at fault. */
export function parseLabelSelector(selector: string): Requirement[] {
  const { tokens, end } = tokenize(selector);
  let pos = 0;
  const peek = (): Token => tokens[pos] ?? end;
  const next = (): Token => tokens[pos++] ?? end;

  const error = (token: Token, problem: string) =>
    new SchedulingError(`invalid cluster selector ${JSON.stringify(selector)}: column ${token.column}: ${problem}`, {
      data: { selector, column: token.column, found: token.text },
    });
  const unexpected = (token: Token, expected: string) =>
    error(token, `found ${token.kind === "end" ? "end of selector" : JSON.stringify(token.text)}, expected ${expected}`);

  const key = (token: Token): string => {
    if (token.kind !== "word") throw unexpected(token, 'a label key or "!"');
    const problem = keyProblem(token.text);
    if (problem) throw error(token, `label key ${JSON.stringify(token.text)} ${problem}`);
    return token.text;
  };
  const value = (token: Token): string => {
    const problem = valueProblem(token.text);
    if (problem) throw error(token, `label value ${JSON.stringify(token.text)} ${problem}`);
    return token.text;
  };
  // `key=` (nothing before "," or the end) compares with the empty value, as in Kubernetes.
  const exactValue = (): string => {
    if (peek().kind === "end" || peek().kind === ",") return "";
    const token = next();
    if (token.kind !== "word") throw unexpected(token, "a label value");
    return value(token);
  };
  const integer = (): string => {
    const token = next();
    if (token.kind !== "word" || !/^\d+$/.test(token.text)) throw unexpected(token, "an integer");
    return value(token);
  };
  // `(a,,b)` and `()` hold the empty value, as in Kubernetes.
  const valueSet = (): string[] => {
    const open = next();
    if (open.kind !== "(") throw unexpected(open, '"("');
    const values: string[] = [];
    for (;;) {
      values.push(peek().kind === "word" ? value(next()) : "");
      const separator = next();
      if (separator.kind === ")") return values;
      if (separator.kind !== ",") throw unexpected(separator, '"," or ")"');
    }
  };

  const requirement = (): Requirement => {
    const first = next();
    if (first.kind === "!") return { key: key(next()), operator: "!", values: [] };
    const k = key(first);
    const op = peek();
    if (op.kind === "end" || op.kind === ",") return { key: k, operator: "exists", values: [] };
    next();
    if (op.kind === "=" || op.kind === "==" || op.kind === "!=") return { key: k, operator: op.kind, values: [exactValue()] };
    if (op.kind === ">" || op.kind === "<") return { key: k, operator: op.kind === ">" ? "gt" : "lt", values: [integer()] };
    // "in" and "notin" are keywords only here: as keys or values they are plain words.
    if (op.kind === "word" && (op.text === "in" || op.text === "notin")) return { key: k, operator: op.text, values: valueSet() };
    throw unexpected(op, "an operator (=, ==, !=, in, notin, >, <), \",\" or end of selector");
  };

  const requirements: Requirement[] = [];
  if (peek().kind === "end") return requirements;
  for (;;) {
    requirements.push(requirement());
    const separator = next();
    if (separator.kind === "end") return requirements;
    if (separator.kind !== ",") throw unexpected(separator, '"," or end of selector');
  }
}

/** Whether the labels satisfy every requirement (Kubernetes semantics: `!=` and `notin` hold when the key is absent). */
export function matchesSelector(requirements: readonly Requirement[], labels: Readonly<Record<string, string>>): boolean {
  return requirements.every(({ key, operator, values }) => {
    const value = Object.hasOwn(labels, key) ? labels[key] : undefined;
    switch (operator) {
      case "=":
      case "==":
      case "in":
        return value !== undefined && values.includes(value);
      case "!=":
      case "notin":
        return value === undefined || !values.includes(value);
      case "exists":
        return value !== undefined;
      case "!":
        return value === undefined;
      case "gt":
      case "lt": {
        const bound = values[0];
        if (value === undefined || bound === undefined || !INTEGER.test(value)) return false;
        const difference = BigInt(value) - BigInt(bound);
        return operator === "gt" ? difference > 0n : difference < 0n;
      }
    }
  });
}
