import { LRUCache } from "lru-cache";
import { parse } from "yaml";
import type { Plan, Service } from "../catalog/index.js";
import { RenderError } from "../errors/index.js";
import { hasTemplate, renderText, renderTextNow } from "../render/index.js";
import type { BindingRecord, InstanceRecord } from "../repo/index.js";

/**
 * OSB Service Instance Metadata (2.16 labels, 2.17 attributes; ADR 0033): what the plan's
 * `metadata` template renders for an instance, at provision and update, kept in its record
 * (`status.labels`, `status.attributes`) and answered from there. The template sees what the
 * manifest templates see (service, plan, the instance's record as it is being written, its live
 * bindings) and renders YAML:
 *
 *   labels:        # strings: what platform users see, no behaviour
 *     gitops-broker.io/cluster: eu-1
 *   attributes:    # any JSON: broker-generated values a platform MAY act on
 *     postgresql-version: "16"
 *
 * A plan without the template gives none; the template's own failures (and output of another
 * shape) are the request's 400, like any template's.
 */

export interface InstanceMetadata {
  labels?: Record<string, string>;
  attributes?: Record<string, unknown>;
}

const isMap = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** The problems of a rendered metadata document, each with its path. */
function problemsOf(doc: unknown): string[] {
  if (doc === null || doc === undefined) return [];
  if (!isMap(doc)) return ["must be a mapping with `labels` and `attributes`"];
  const problems: string[] = [];
  for (const key of Object.keys(doc)) if (key !== "labels" && key !== "attributes") problems.push(`${key}: unknown key (only labels and attributes)`);
  const { labels, attributes } = doc;
  if (labels !== undefined && labels !== null) {
    if (!isMap(labels)) problems.push("labels: must be a mapping");
    else for (const [k, v] of Object.entries(labels)) if (typeof v !== "string") problems.push(`labels.${k}: must be a string (quote it)`);
  }
  if (attributes !== undefined && attributes !== null && !isMap(attributes)) problems.push("attributes: must be a mapping");
  return problems;
}

/** What the `metadata` template sees: the values of the manifest templates. */
interface MetadataInput {
  service: Service;
  plan: Plan;
  instance: InstanceRecord;
  bindings: readonly BindingRecord[];
}

function metadataRequest(p: MetadataInput) {
  const values = {
    service: p.service.raw,
    plan: p.plan.raw,
    instance: p.instance as unknown as Record<string, unknown>,
    bindings: p.bindings as unknown as Record<string, unknown>[],
  };
  return { action: "metadata", templates: p.plan.templates, values, planName: p.plan.name };
}

/** The instance's metadata from its plan's `metadata` template; {} when the plan has none. */
export async function renderInstanceMetadata(p: MetadataInput): Promise<InstanceMetadata> {
  if (!hasTemplate(p.plan.templates, "metadata")) return {};
  return metadataOf(await renderText(metadataRequest(p)), p.plan.name);
}

/** `renderInstanceMetadata` for synchronous callers (engines that render on this thread; see renderTextNow). */
export function renderInstanceMetadataNow(p: MetadataInput): InstanceMetadata {
  if (!hasTemplate(p.plan.templates, "metadata")) return {};
  return metadataOf(renderTextNow(metadataRequest(p)), p.plan.name);
}

/**
 * Metadata by the text it was parsed from. A plan's metadata template renders the same text for
 * most of its instances (one per cluster, region and version), and parsing it was about 5 % of a
 * provision's CPU with 200 clients at 10k instances (profile of 2026-11-29). Only valid metadata
 * is kept; every caller gets its own copy.
 */
const parsedMetadata = new LRUCache<string, InstanceMetadata>({ max: 512 });

/** The metadata a rendered `metadata` template says; RenderError for output of another shape. */
function metadataOf(text: string, planName: string): InstanceMetadata {
  const hit = parsedMetadata.get(text);
  if (hit !== undefined) return structuredClone(hit);
  const metadata = parseMetadata(text, planName);
  parsedMetadata.set(text, structuredClone(metadata));
  return metadata;
}

function parseMetadata(text: string, planName: string): InstanceMetadata {
  const where = `plan ${planName}: template metadata`;
  let doc: unknown;
  try {
    doc = parse(text);
  } catch (e) {
    throw new RenderError(`${where} renders no YAML: ${e instanceof Error ? e.message : String(e)}`, { cause: e, data: { plan: planName, action: "metadata" } });
  }
  const problems = problemsOf(doc);
  if (problems.length > 0) {
    throw new RenderError(`${where} renders invalid metadata:\n${problems.map((x) => `- ${x}`).join("\n")}`, { data: { plan: planName, action: "metadata" } });
  }
  const { labels, attributes } = (doc ?? {}) as { labels?: Record<string, string> | null; attributes?: Record<string, unknown> | null };
  return {
    ...(labels && Object.keys(labels).length > 0 ? { labels } : {}),
    ...(attributes && Object.keys(attributes).length > 0 ? { attributes } : {}),
  };
}

/** The record with `metadata` as its labels and attributes (none when empty). */
export function withInstanceMetadata(record: InstanceRecord, metadata: InstanceMetadata): InstanceRecord {
  const { labels: _labels, attributes: _attributes, ...status } = record.status;
  return { ...record, status: { ...status, ...metadata } };
}
