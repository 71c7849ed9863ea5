/**
 * Checks a PromQL expression against the series a Prometheus registry exposes: every metric name a
 * selector names must be an exposed series (a histogram `h` exposes `h_bucket` with `le`, `h_sum`
 * and `h_count`, never `h` itself), every label a matcher, a `by (...)` or a legend names must be
 * one that expression can carry. Parsed with the Prometheus project's own grammar
 * (@prometheus-io/lezer-promql, what Prometheus' UI and Grafana's editor parse with).
 *
 *   const { problems } = checkPromQL('sum by (store) (rate(x_total[5m]))', exposedSeries(text), TARGET_LABELS);
 *
 * Labels are followed through the constructs a dashboard uses: selectors (their series' labels
 * plus the labels the scrape adds), rate-like functions (keep them), histogram_quantile (drops
 * `le`), aggregations `by (...)` (keep exactly those), binary operations (a scalar side keeps the
 * vector's labels; two vectors without on/ignoring keep the left one's, which must match the right
 * one's). Anything else (without, on, ignoring, group_left, subqueries, other functions) is
 * reported as a problem, not passed: extend the check before using it.
 */
import { parser } from "@prometheus-io/lezer-promql";

type SyntaxNode = ReturnType<typeof parser.parse>["topNode"];

/**
 * Labels Prometheus adds to every series of a target scraped through a ServiceMonitor (the
 * Prometheus Operator's relabelling): `job` (the Service's name), `namespace`, `service`, `pod`,
 * `container`, `endpoint`, and Prometheus' own `instance`.
 */
export const TARGET_LABELS: ReadonlySet<string> = new Set(["job", "instance", "namespace", "service", "pod", "container", "endpoint"]);

/** Series name -> its label names, from the Prometheus text exposition of a registry. */
export function exposedSeries(exposition: string): Map<string, Set<string>> {
  const series = new Map<string, Set<string>>();
  for (const line of exposition.split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? \S+$/.exec(line);
    if (match === null) throw new Error(`not a sample line of the text exposition: ${line}`);
    const [, name, labels = ""] = match as unknown as [string, string, string | undefined];
    const names = series.get(name) ?? new Set<string>();
    for (const [, label] of labels.matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="(?:[^"\\]|\\.)*"/g)) names.add(label!);
    series.set(name, names);
  }
  return series;
}

export interface PromQLCheck {
  /** Everything wrong, one message each; empty when the expression passes. */
  problems: string[];
  /** The metric names its selectors name. */
  metrics: string[];
  /** The labels of its result (undefined for a scalar or when a problem stopped the analysis). */
  labels: Set<string> | undefined;
}

/** Functions whose result carries the labels of their range-vector argument. */
const RANGE_FUNCTIONS = new Set(["rate", "irate", "increase", "delta", "idelta", "deriv", "changes", "resets"]);

/** Checks `expr` against `series` (name -> label names), with `targetLabels` added by the scrape. */
export function checkPromQL(expr: string, series: ReadonlyMap<string, ReadonlySet<string>>, targetLabels: ReadonlySet<string> = TARGET_LABELS): PromQLCheck {
  const problems: string[] = [];
  const metrics: string[] = [];
  const tree = parser.parse(expr);
  tree.iterate({
    enter: (n) => {
      if (n.type.isError) problems.push(`syntax error at ${n.from}: ${JSON.stringify(expr.slice(Math.max(0, n.from - 10), n.to + 10))}`);
    },
  });
  if (problems.length > 0) return { problems, metrics, labels: undefined };

  const text = (n: SyntaxNode) => expr.slice(n.from, n.to);
  const children = (n: SyntaxNode): SyntaxNode[] => {
    const out: SyntaxNode[] = [];
    for (let c = n.firstChild; c !== null; c = c.nextSibling) out.push(c);
    return out;
  };
  const child = (n: SyntaxNode, name: string) => children(n).find((c) => c.name === name);
  const unsupported = (n: SyntaxNode): Set<string> | undefined => {
    problems.push(`${n.name} is not followed by this check: ${text(n)}`);
    return undefined;
  };

  /** Labels of the result of `n`; null for a scalar; undefined after a problem. */
  const labelsOf = (n: SyntaxNode): Set<string> | null | undefined => {
    switch (n.name) {
      case "PromQL":
      case "ParenExpr":
        return labelsOf(n.firstChild!);
      case "NumberDurationLiteral":
        return null;
      case "MatrixSelector":
        return labelsOf(child(n, "VectorSelector")!);
      case "VectorSelector": {
        const identifier = child(n, "Identifier");
        if (identifier === undefined) return unsupported(n);
        const name = text(identifier);
        metrics.push(name);
        const known = series.get(name);
        if (known === undefined) {
          problems.push(`${name} is not a series the registry exposes`);
          return undefined;
        }
        const labels = new Set([...known, ...targetLabels]);
        for (const matcher of children(child(n, "LabelMatchers") ?? n).filter((c) => c.name.endsWith("LabelMatcher") || c.name === "QuotedLabelName")) {
          if (matcher.name !== "UnquotedLabelMatcher") {
            unsupported(matcher);
            continue;
          }
          const label = text(child(matcher, "LabelName")!);
          if (!labels.has(label)) problems.push(`${name} has no label ${label}`);
        }
        return labels;
      }
      case "FunctionCall": {
        const fn = text(child(n, "FunctionIdentifier")!);
        const args = children(child(n, "FunctionCallBody")!);
        if (RANGE_FUNCTIONS.has(fn) && args.length === 1) return labelsOf(args[0]!);
        if (fn === "histogram_quantile" && args.length === 2) {
          const quantile = labelsOf(args[0]!);
          if (quantile !== null) problems.push(`histogram_quantile's first argument must be a number: ${text(args[0]!)}`);
          const labels = labelsOf(args[1]!);
          if (labels === null) problems.push(`histogram_quantile of a scalar: ${text(n)}`);
          if (!labels) return undefined;
          if (!labels.has("le")) problems.push(`histogram_quantile of series without le: ${text(args[1]!)}`);
          return new Set([...labels].filter((l) => l !== "le"));
        }
        return unsupported(n);
      }
      case "AggregateExpr": {
        const modifier = child(n, "AggregateModifier");
        const args = children(child(n, "FunctionCallBody")!);
        if (args.length !== 1) return unsupported(n);
        const inner = labelsOf(args[0]!);
        if (inner === null) problems.push(`aggregation of a scalar: ${text(n)}`);
        if (modifier === undefined) return inner ? new Set<string>() : undefined;
        if (child(modifier, "By") === undefined) return unsupported(modifier);
        const grouping = children(child(modifier, "GroupingLabels")!).map(text);
        if (inner) for (const label of grouping.filter((l) => !inner.has(l))) problems.push(`by (${label}): ${text(args[0]!)} has no label ${label}`);
        return inner ? new Set(grouping) : undefined;
      }
      case "BinaryExpr": {
        const parts = children(n);
        const modifiers = parts.filter((c) => c.name === "MatchingModifierClause");
        if (modifiers.length > 0) return unsupported(modifiers[0]!);
        const left = labelsOf(parts[0]!);
        const right = labelsOf(parts[parts.length - 1]!);
        if (left === undefined || right === undefined) return undefined;
        if (left === null || right === null) return left ?? right;
        // Two vectors, one-to-one on all their labels: both sides must carry the same ones.
        const differ = [...left].filter((l) => !right.has(l)).concat([...right].filter((l) => !left.has(l)));
        if (differ.length > 0) problems.push(`the two sides of ${text(n)} differ in labels ${differ.join(", ")}: no series would match`);
        return left;
      }
      default:
        return unsupported(n);
    }
  };
  const labels = labelsOf(tree.topNode);
  return { problems, metrics, labels: problems.length > 0 || labels === null ? undefined : labels };
}
