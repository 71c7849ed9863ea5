import { readFile } from "node:fs/promises";
import path from "node:path";
import { Counter, Gauge, Histogram, Registry } from "prom-client";
import { beforeAll, describe, expect, it } from "vitest";
import { createInstruments, createPrometheusMetrics } from "../../src/metrics/index.js";
import { checkPromQL, exposedSeries, TARGET_LABELS } from "../support/promql.js";

/**
 * The Grafana dashboard of the chart (deploy/chart/dashboards/gitops-broker.json): every PromQL
 * query of its panels and variables names only series and labels that the broker exports, as a
 * real prom-client Registry exposes what `createInstruments` registers. A renamed metric or label
 * fails here instead of leaving an empty panel. The chart's rendering of it: chart.test.ts.
 */

const FILE = path.resolve(import.meta.dirname, "../../deploy/chart/dashboards/gitops-broker.json");

interface Target {
  refId: string;
  expr: string;
  legendFormat?: string;
}
interface Panel {
  id: number;
  type: string;
  title: string;
  gridPos: { x: number; y: number; w: number; h: number };
  datasource?: { type: string; uid: string };
  targets?: Target[];
  panels?: Panel[];
}
interface Variable {
  name: string;
  type: string;
  query: string;
}
interface Dashboard {
  uid: string;
  panels: Panel[];
  templating: { list: Variable[] };
}

/**
 * Grafana's variables replaced by values a query could have, so that the text is PromQL:
 * `$__rate_interval` and `$__interval` by a duration, any other `$name` / `${name}` (the
 * dashboard's own variables, used inside label matchers' strings) by a word.
 */
function substituteVariables(expr: string): string {
  return expr
    .replace(/\$__rate_interval|\$\{__rate_interval\}/g, "5m")
    .replace(/\$__interval|\$\{__interval\}/g, "1m")
    .replace(/\$\{?\w+\}?/g, "value");
}

/** The series and labels a real Registry exposes for every instrument createInstruments registers. */
async function brokerSeries(): Promise<Map<string, Set<string>>> {
  const registry = new Registry();
  createInstruments(createPrometheusMetrics(registry));
  // A series appears with its first sample: give each metric one, every label set to a value.
  for (const object of registry.getMetricsAsArray()) {
    const metric = registry.getSingleMetric(object.name);
    const { labelNames } = metric as unknown as { labelNames?: unknown };
    if (!Array.isArray(labelNames)) throw new Error(`prom-client no longer keeps the label names of ${object.name} where this test reads them`);
    const labels = Object.fromEntries(labelNames.map((n: string) => [n, "x"]));
    if (metric instanceof Counter) metric.inc(labels);
    else if (metric instanceof Gauge) metric.set(labels, 1);
    else if (metric instanceof Histogram) metric.observe(labels, 1);
    else throw new Error(`${object.name}: a metric type this test does not sample`);
  }
  return exposedSeries(await registry.metrics());
}

const dashboardText = await readFile(FILE, "utf8");
const dashboard = JSON.parse(dashboardText) as Dashboard;
const panels = dashboard.panels.flatMap((p) => [p, ...(p.panels ?? [])]);
const queries = panels.flatMap((p) => (p.targets ?? []).map((t) => ({ panel: p.title, ...t })));

let series: Map<string, Set<string>>;
beforeAll(async () => {
  series = await brokerSeries();
});

/** The problems of one dashboard query (legend included). */
function problemsOf(expr: string, legendFormat = ""): string[] {
  const { problems, labels } = checkPromQL(substituteVariables(expr), series, TARGET_LABELS);
  for (const [, label] of legendFormat.matchAll(/\{\{\s*(\w+)\s*\}\}/g)) {
    if (labels !== undefined && !labels.has(label!)) problems.push(`the legend names {{${label!}}}, which the query's result does not carry`);
  }
  return problems;
}

describe("the chart's Grafana dashboard", () => {
  it("reads series the broker exports: histograms as _bucket (with le), _sum and _count", () => {
    expect(series.get("gitops_broker_operations_total")).toEqual(new Set(["kind", "outcome"]));
    expect(series.get("gitops_broker_git_push_duration_seconds_bucket")).toEqual(new Set([...series.get("gitops_broker_git_push_duration_seconds_count")!, "le"]));
    expect(series.has("gitops_broker_git_push_duration_seconds")).toBe(false);
    expect(series.get("gitops_broker_catalog_loaded")).toEqual(new Set());
  });

  it("has queries in every panel, each naming only series and labels the broker exports", () => {
    expect(queries.length).toBeGreaterThan(20);
    const found = Object.fromEntries(queries.map((q) => [`${q.panel} ${q.refId}: ${q.expr}`, problemsOf(q.expr, q.legendFormat)]));
    expect(found).toEqual(Object.fromEntries(Object.keys(found).map((k) => [k, []])));
  });

  it("has variables whose label_values queries name exported series and labels", () => {
    const queryVariables = dashboard.templating.list.filter((v) => v.type === "query");
    expect(queryVariables.map((v) => v.name)).toEqual(["namespace", "job", "store", "cluster"]);
    for (const v of queryVariables) {
      const [, selector, label] = /^label_values\((.+),\s*(\w+)\)$/.exec(v.query) ?? [];
      expect(selector, v.query).toBeDefined();
      const check = checkPromQL(substituteVariables(selector!), series, TARGET_LABELS);
      expect(check.problems, v.query).toEqual([]);
      expect([...check.labels!], v.query).toContain(label);
    }
  });

  it("shows the write path, stores, agents and nudges, catalog state and the leader", () => {
    const read = new Set(queries.flatMap((q) => checkPromQL(substituteVariables(q.expr), series, TARGET_LABELS).metrics));
    const base = (name: string) => name.replace(/_(bucket|sum|count)$/, "");
    expect(new Set([...read].map(base))).toEqual(
      new Set([
        // write path
        "gitops_broker_operations_total",
        "gitops_broker_operation_ack_duration_seconds",
        "gitops_broker_git_pushes_total",
        "gitops_broker_git_batch_operations",
        "gitops_broker_git_push_window_wait_seconds",
        "gitops_broker_git_queued_operations",
        "gitops_broker_git_push_duration_seconds",
        // stores
        "gitops_broker_git_last_fetch_age_seconds",
        "gitops_broker_git_history_lost_commits",
        // agents and nudges
        "gitops_broker_nudges_total",
        "gitops_broker_cluster_up",
        "gitops_broker_watch_restarts_total",
        "gitops_broker_watch_relists_total",
        // catalog state
        "gitops_broker_catalog_loaded",
        "gitops_broker_catalog_problems",
        "gitops_broker_catalog_state",
        "gitops_broker_registry_state",
        "gitops_broker_catalog_plans",
        "gitops_broker_service_instances",
        "gitops_broker_service_bindings",
        // leader
        "gitops_broker_leader",
        "gitops_broker_leader_transitions_total",
      ]),
    );
    // Per store, per cluster: the write path and stores by store, agents and instances by cluster.
    const by = (metric: string) => queries.filter((q) => q.expr.includes(metric)).map((q) => /by \(([^)]*)\)/.exec(q.expr)?.[1]);
    expect(by("gitops_broker_git_pushes_total")).toEqual(["store, result"]);
    expect(by("gitops_broker_git_last_fetch_age_seconds")).toEqual(["store"]);
    expect(by("gitops_broker_nudges_total")).toEqual(["cluster, via, result"]);
    expect(by("gitops_broker_service_instances")).toEqual(["cluster, plan"]);
  });

  it("fails a query that names a series or a label the broker does not export", () => {
    expect(problemsOf('sum by (kind) (rate(gitops_broker_operation_total{job="$job"}[$__rate_interval]))')).toEqual([
      "gitops_broker_operation_total is not a series the registry exposes",
    ]);
    // A histogram's own name is no series; le exists on its buckets only.
    expect(problemsOf("rate(gitops_broker_git_push_duration_seconds[5m])")).toEqual(["gitops_broker_git_push_duration_seconds is not a series the registry exposes"]);
    expect(problemsOf("histogram_quantile(0.5, sum by (le) (rate(gitops_broker_git_push_duration_seconds_count[5m])))")).toEqual([
      "by (le): rate(gitops_broker_git_push_duration_seconds_count[5m]) has no label le",
    ]);
    expect(problemsOf("histogram_quantile(0.5, sum by (store) (rate(gitops_broker_git_push_duration_seconds_bucket[5m])))")).toEqual([
      "histogram_quantile of series without le: sum by (store) (rate(gitops_broker_git_push_duration_seconds_bucket[5m]))",
    ]);
    // Labels in a matcher, in by (...), in the legend.
    expect(problemsOf('gitops_broker_operations_total{store="control"}')).toEqual(["gitops_broker_operations_total has no label store"]);
    expect(problemsOf("sum by (cluster) (gitops_broker_git_queued_operations)")).toEqual([
      "by (cluster): gitops_broker_git_queued_operations has no label cluster",
    ]);
    expect(problemsOf("sum by (store) (gitops_broker_git_queued_operations)", "{{cluster}}")).toEqual([
      "the legend names {{cluster}}, which the query's result does not carry",
    ]);
    // Two sides that could never match.
    expect(problemsOf("sum by (store) (gitops_broker_git_queued_operations) / sum by (kind) (gitops_broker_operations_total)")).toHaveLength(1);
    // Syntax errors and constructs the check does not follow are problems, not passes.
    expect(problemsOf("sum by (store) (gitops_broker_git_queued_operations")[0]).toMatch(/^syntax error/);
    expect(problemsOf('label_replace(gitops_broker_leader, "a", "$1", "identity", "(.*)")')[0]).toMatch(/^FunctionCall is not followed/);
    expect(problemsOf("sum without (store) (gitops_broker_git_queued_operations)")[0]).toMatch(/^AggregateModifier is not followed/);
  });

  it("is laid out on Grafana's 24-column grid with unique ids, every panel on the chosen data source", () => {
    expect(dashboard.uid).toBe("gitops-broker");
    expect(new Set(panels.map((p) => p.id)).size).toBe(panels.length);
    for (const p of panels) {
      expect(p.gridPos.x + p.gridPos.w, p.title).toBeLessThanOrEqual(24);
      if (p.type === "row") continue;
      expect(p.datasource, p.title).toEqual({ type: "prometheus", uid: "${datasource}" });
      const refIds = (p.targets ?? []).map((t) => t.refId);
      expect(new Set(refIds).size, p.title).toBe(refIds.length);
    }
    // No two panels cover the same cell.
    const cells = new Map<string, string>();
    for (const p of panels) {
      for (let y = p.gridPos.y; y < p.gridPos.y + p.gridPos.h; y++) {
        for (let x = p.gridPos.x; x < p.gridPos.x + p.gridPos.w; x++) {
          expect(cells.get(`${x},${y}`), `${p.title} at ${x},${y}`).toBeUndefined();
          cells.set(`${x},${y}`, p.title);
        }
      }
    }
    expect(dashboard.templating.list[0]).toMatchObject({ name: "datasource", type: "datasource", query: "prometheus" });
  });

  it("is kept as JSON.stringify prints it, two spaces, so that a change is one reviewable diff", () => {
    expect(dashboardText).toBe(`${JSON.stringify(dashboard, null, 2)}\n`);
  });
});
