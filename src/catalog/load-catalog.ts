import { chartFromTree, digestHex, type RemoteCharts } from "../charts/index.js";
import type { Problem } from "../errors/index.js";
import type { TreeReader } from "../gitwriter/index.js";
import { CATALOG_DIR } from "../repo/index.js";
import { isRecord, listYamlFiles, parseYamlFile, schemaProblems, trimDot, type YamlDocument } from "./documents.js";
import { compileParametersSchema, parametersSchemaOf, PARAMETERS_SCHEMA_KEYS } from "./parameters.js";
import { documentValidators } from "./repo-schemas.js";
import type { Catalog, MaintenanceInfo, Plan, PlanTemplate, Service } from "./types.js";

const SERVICE_KINDS = new Set(["SFService", "Service"]);
const PLAN_KINDS = new Set(["SFPlan", "Plan"]);

/** A service or plan with where it was declared, for cross-file problems. */
interface Located<T> {
  value: T;
  file: string;
  /** Path prefix of its document (see YamlDocument.at). */
  at: string;
}

interface LoadedFile {
  file: string;
  services: Located<Omit<Service, "plans">>[];
  plans: Located<Plan>[];
  problems: Problem[];
  /** Template files that plans of this file name in `path` (whether or not the plans are valid). */
  templatePaths: string[];
  /** Repository directories that plans of this file name as a chart `url`. */
  chartDirs: string[];
}

export interface LoadCatalogOptions {
  /**
   * Remote charts (http(s) `url` with `digest`): fetched into this cache when missing. Without
   * it a remote chart is left unread (no problem): its plans fail to render until a loader
   * with a cache reads it.
   */
  remoteCharts?: RemoteCharts;
}

/**
 * Reads the catalog from `catalog/**\/*.{yaml,yml}`. A file with any problem is left out as a
 * whole; the problems say why. Cross-file rules (unique ids and names, every plan's service
 * present, every service with a plan) are applied to the files that are otherwise fine, and
 * repeated until no file is left out any more, since leaving one out can break another.
 */
export async function loadCatalog(tree: TreeReader, options: LoadCatalogOptions = {}): Promise<{ catalog: Catalog; problems: Problem[] }> {
  const files = await listYamlFiles(tree, CATALOG_DIR, true);
  const loaded = await Promise.all(files.map((file) => loadFile(tree, file, options)));

  // A template given by `path` may well end in .yaml: what fails to load as catalog documents
  // there is a template, not a problem.
  const templates = new Set(loaded.flatMap((l) => l.templatePaths));
  // The files of a chart directory a helm template names in `url` are the chart's, not catalog
  // documents.
  const chartDirs = loaded.flatMap((l) => l.chartDirs).map((d) => `${d}/`);
  const inChart = (file: string) => chartDirs.some((d) => file.startsWith(d));
  const candidates = loaded.filter((l) => !(templates.has(l.file) && l.problems.length > 0) && !inChart(l.file));

  const problems = candidates.flatMap((l) => l.problems);
  let live = candidates.filter((l) => l.problems.length === 0);
  for (;;) {
    const found = crossFileProblems(live);
    if (found.length === 0) break;
    problems.push(...found);
    const bad = new Set(found.map((p) => p.file));
    live = live.filter((l) => !bad.has(l.file));
  }
  return { catalog: assemble(live), problems };
}

async function loadFile(tree: TreeReader, file: string, options: LoadCatalogOptions): Promise<LoadedFile> {
  const out: LoadedFile = { file, services: [], plans: [], problems: [], templatePaths: [], chartDirs: [] };
  const text = await tree.readText(file);
  if (text === null) {
    out.problems.push({ file, path: "", message: "cannot be read" });
    return out;
  }
  const { docs, problems } = parseYamlFile(file, text);
  out.problems.push(...problems);
  for (const doc of docs) {
    if (!isRecord(doc.value)) {
      out.problems.push({ file, path: trimDot(doc.at), message: "must be a mapping (a Service or Plan document)" });
      continue;
    }
    const kind = typeof doc.value.kind === "string" ? doc.value.kind : undefined;
    if (kind !== undefined && SERVICE_KINDS.has(kind)) {
      const found = schemaProblems(documentValidators.service, doc, file);
      out.problems.push(...found);
      if (found.length === 0) out.services.push(toService(doc, file, out.problems));
    } else if (kind !== undefined && PLAN_KINDS.has(kind)) {
      out.templatePaths.push(...templatePathsOf(doc.value));
      out.chartDirs.push(...chartDirsOf(doc.value));
      const found = schemaProblems(documentValidators.plan, doc, file);
      out.problems.push(...found);
      if (found.length === 0) out.plans.push(await toPlan(tree, doc, file, out.problems, options));
    } else {
      out.problems.push({
        file,
        path: `${doc.at}kind`,
        message: `${JSON.stringify(doc.value.kind ?? null)} is not a catalog document (expected SFService, Service, SFPlan or Plan)`,
      });
    }
  }
  return out;
}

/** `spec` of a document that passed its schema. */
function specOf(doc: YamlDocument): Record<string, unknown> {
  return (doc.value as { spec: Record<string, unknown> }).spec;
}

/**
 * The value of the first present spelling of a field (camelCase, Service Fabrik's, OSB's) of
 * `obj`, which sits at `at` (e.g. `spec.`). Two spellings at once are a problem: which one wins
 * would be a guess.
 */
// eslint-disable-next-line @typescript-eslint/no-unnecessary-type-parameters -- a typed read of untyped YAML
function pick<T>(obj: Record<string, unknown>, names: string[], at: string, file: string, problems: Problem[]): T | undefined {
  const present = names.filter((n) => obj[n] !== undefined);
  for (const other of present.slice(1)) {
    problems.push({ file, path: `${at}${other}`, message: `same field as ${at}${present[0]}: use one spelling` });
  }
  return present[0] === undefined ? undefined : (obj[present[0]] as T);
}

function toService(doc: YamlDocument, file: string, problems: Problem[]): Located<Omit<Service, "plans">> {
  const spec = specOf(doc);
  // eslint-disable-next-line @typescript-eslint/no-unnecessary-type-parameters -- as pick
  const get = <T>(...names: string[]) => pick<T>(spec, names, `${doc.at}spec.`, file, problems);
  const dashboardAt = `${doc.at}spec.${spec.dashboardClient === undefined ? "dashboard_client" : "dashboardClient"}.`;
  const dashboard = get<Record<string, unknown>>("dashboardClient", "dashboard_client");
  const value: Omit<Service, "plans"> = {
    id: spec.id as string,
    name: spec.name as string,
    description: spec.description as string,
    tags: spec.tags as string[] | undefined,
    requires: spec.requires as string[] | undefined,
    bindable: spec.bindable as boolean,
    instancesRetrievable: get<boolean>("instancesRetrievable", "instanceRetrievable", "instances_retrievable") ?? false,
    bindingsRetrievable: get<boolean>("bindingsRetrievable", "bindingRetrievable", "bindings_retrievable") ?? false,
    allowContextUpdates: get<boolean>("allowContextUpdates", "allow_context_updates"),
    planUpdateable: get<boolean>("planUpdatable", "planUpdateable", "plan_updateable") ?? false,
    metadata: spec.metadata as Record<string, unknown> | undefined,
    supportedPlatforms: get<string[]>("supportedPlatform", "supported_platform"),
    dashboardClient: dashboard && {
      id: dashboard.id as string,
      secret: dashboard.secret as string,
      redirect_uri: pick<string>(dashboard, ["redirectUri", "redirect_uri"], dashboardAt, file, problems),
    },
    file,
    raw: doc.value as Record<string, unknown>,
  };
  return { value, file, at: doc.at };
}

async function toPlan(tree: TreeReader, doc: YamlDocument, file: string, problems: Problem[], options: LoadCatalogOptions): Promise<Located<Plan>> {
  const spec = specOf(doc);
  // eslint-disable-next-line @typescript-eslint/no-unnecessary-type-parameters -- as pick
  const get = <T>(...names: string[]) => pick<T>(spec, names, `${doc.at}spec.`, file, problems);
  const manager = (spec.manager ?? {}) as {
    async?: boolean;
    asyncBinding?: boolean;
    settings?: BrokerSettings;
  };
  const dashboardUrlTemplate = manager.settings?.dashboard_url_template;
  if (dashboardUrlTemplate !== undefined && typeof dashboardUrlTemplate !== "string") {
    problems.push({ file, path: `${doc.at}spec.manager.settings.dashboard_url_template`, message: "must be a base64 string" });
  }
  const schemas = spec.schemas as Record<string, unknown> | undefined;
  for (const key of PARAMETERS_SCHEMA_KEYS) {
    const schema = parametersSchemaOf(schemas, key);
    if (schema === undefined) continue;
    const compiled = compileParametersSchema(schema);
    if ("error" in compiled) {
      problems.push({ file, path: `${doc.at}spec.schemas.${key}.parameters`, message: compiled.error });
    }
  }
  const value: Plan = {
    id: spec.id as string,
    name: spec.name as string,
    description: spec.description as string,
    serviceId: spec.serviceId as string,
    metadata: spec.metadata as Record<string, unknown> | undefined,
    free: spec.free as boolean | undefined,
    bindable: spec.bindable as boolean | undefined,
    planUpdateable: get<boolean>("planUpdatable", "planUpdateable", "plan_updateable"),
    schemas,
    maintenanceInfo: get<MaintenanceInfo>("maintenanceInfo", "maintenance_info"),
    maximumPollingDuration: get<number>("maximumPollingDuration", "maximum_polling_duration"),
    async: manager.async ?? false,
    asyncBinding: manager.asyncBinding ?? false,
    ...(typeof dashboardUrlTemplate === "string" ? { dashboardUrlTemplate } : {}),
    ...updatePredecessors(doc, manager.settings?.update_predecessors),
    supportedPlatforms: get<string[]>("supportedPlatform", "supported_platform"),
    ...bindingSettings(get<boolean>("bindingRotatable", "binding_rotatable"), manager.settings, `${doc.at}spec.`, file, problems),
    context: (spec.context ?? {}) as Record<string, unknown>,
    templates: await resolveTemplates(tree, spec.templates as RawTemplate[], doc, file, problems, options),
    file,
    raw: doc.value as Record<string, unknown>,
  };
  return { value, file, at: doc.at };
}

/** `manager.settings` as the plan schema checked it. */
interface BrokerSettings {
  dashboard_url_template?: unknown;
  update_predecessors?: string[];
  binding_rotatable?: boolean;
  binding_expires_after_seconds?: number;
  binding_renew_after_seconds?: number;
}

/**
 * Binding rotation and expiry (OSB 2.17, ADR 0033). `binding_rotatable` is an OSB plan field
 * (`spec.bindingRotatable` / `binding_rotatable`); Service Fabrik's SFPlan CRD has no such field,
 * so an SFPlan says it in its free-form `manager.settings`, where the expiry settings live for
 * both kinds. Both places at once is a problem, as two spellings of one field are.
 */
function bindingSettings(
  topLevel: boolean | undefined,
  settings: BrokerSettings | undefined,
  at: string,
  file: string,
  problems: Problem[],
): Pick<Plan, "bindingRotatable" | "bindingExpiresAfterSeconds" | "bindingRenewAfterSeconds"> {
  const inSettings = settings?.binding_rotatable;
  if (topLevel !== undefined && inSettings !== undefined) {
    problems.push({ file, path: `${at}manager.settings.binding_rotatable`, message: "binding_rotatable is declared in spec already: use one of them" });
  }
  const rotatable = topLevel ?? inSettings;
  const expires = settings?.binding_expires_after_seconds;
  const renew = settings?.binding_renew_after_seconds;
  if (expires !== undefined && renew !== undefined && renew > expires) {
    problems.push({
      file,
      path: `${at}manager.settings.binding_renew_after_seconds`,
      message: `${renew} is after binding_expires_after_seconds (${expires}): OSB's renew_before must not be after expires_at`,
    });
  }
  return {
    ...(rotatable !== undefined ? { bindingRotatable: rotatable } : {}),
    ...(expires !== undefined ? { bindingExpiresAfterSeconds: expires } : {}),
    ...(renew !== undefined ? { bindingRenewAfterSeconds: renew } : {}),
  };
}

const SF_OSB_API_VERSION = "osb.servicefabrik.io/v1alpha1";

/**
 * `manager.settings.update_predecessors` as the broker checks it: Service Fabrik refused a plan
 * change to an SFPlan that lists no predecessors (its isUpdatePossible), so an SFPlan without the
 * list accepts none; a `Plan` without it accepts every plan of its service.
 */
function updatePredecessors(doc: YamlDocument, listed: string[] | undefined): Pick<Plan, "updatePredecessors"> {
  if (listed !== undefined) return { updatePredecessors: [...listed] };
  const serviceFabrik = (doc.value as { apiVersion?: unknown }).apiVersion === SF_OSB_API_VERSION;
  return serviceFabrik ? { updatePredecessors: [] } : {};
}

interface RawTemplate {
  action: string;
  type: string;
  content?: string;
  contentEncoded?: string;
  path?: string;
  url?: string;
  digest?: string;
}

function chartDirsOf(doc: Record<string, unknown>): string[] {
  const templates = isRecord(doc.spec) ? doc.spec.templates : undefined;
  if (!Array.isArray(templates)) return [];
  return templates.flatMap((t: unknown) =>
    isRecord(t) && typeof t.url === "string" && !/^[a-z][a-z0-9+.-]*:/i.test(t.url) ? [t.url.replace(/^\.\//, "").replace(/\/+$/, "")] : [],
  );
}

function templatePathsOf(doc: Record<string, unknown>): string[] {
  const templates = isRecord(doc.spec) ? doc.spec.templates : undefined;
  if (!Array.isArray(templates)) return [];
  return templates.flatMap((t: unknown) => (isRecord(t) && typeof t.path === "string" ? [t.path] : []));
}

async function resolveTemplates(
  tree: TreeReader,
  templates: RawTemplate[],
  doc: YamlDocument,
  file: string,
  problems: Problem[],
  options: LoadCatalogOptions,
): Promise<PlanTemplate[]> {
  const resolved: PlanTemplate[] = [];
  for (const [i, t] of templates.entries()) {
    const at = `${doc.at}spec.templates[${i}]`;
    let content: string | null;
    let source = `${file}#${at}`;
    if (t.path !== undefined) {
      content = await tree.readText(t.path);
      source = t.path;
      if (content === null) problems.push({ file, path: `${at}.path`, message: `no file ${JSON.stringify(t.path)} in the repository` });
    } else if (t.contentEncoded !== undefined) {
      content = Buffer.from(t.contentEncoded, "base64").toString("utf8");
    } else {
      content = t.content ?? "";
    }
    if (content === null) continue;
    const template: PlanTemplate = { action: t.action, type: t.type, content, source };
    if (t.url !== undefined) {
      template.url = t.url;
      if (t.digest !== undefined) template.digest = t.digest;
      if (isChartEngine(t.type)) {
        const chart = await resolveChart(tree, t.url, t.digest, options, (path, message) => problems.push({ file, path: `${at}.${path}`, message }));
        if (chart !== undefined) template.chart = chart;
      }
    }
    resolved.push(template);
  }
  return resolved;
}

/** Service Fabrik's spellings of the helm type (its renderer factory took these three). */
function isChartEngine(type: string): boolean {
  return type === "helm" || type === "Helm" || type === "HELM";
}

const REMOTE = /^https?:\/\//i;

/**
 * The chart a helm template's `url` names: a repository path under catalog/ (directory or
 * .tgz), or an http(s) archive pinned by `digest` (ADR 0015). Problems are reported through
 * `problem`; undefined when the chart is not available.
 */
async function resolveChart(
  tree: TreeReader,
  url: string,
  digest: string | undefined,
  options: LoadCatalogOptions,
  problem: (path: string, message: string) => void,
): Promise<PlanTemplate["chart"]> {
  if (REMOTE.test(url)) {
    if (digest === undefined) {
      problem("url", "a chart fetched over http(s) must be pinned: add `digest: sha256:<hex>` (or vendor the chart under catalog/)");
      return undefined;
    }
    if (digestHex(digest) === undefined) {
      problem("digest", `${JSON.stringify(digest)} is not sha256:<64 lowercase hex digits>`);
      return undefined;
    }
    if (options.remoteCharts === undefined) return undefined;
    try {
      return { archive: await options.remoteCharts.ensure(url, digest) };
    } catch (e) {
      problem("url", e instanceof Error ? e.message : String(e));
      return undefined;
    }
  }
  if (/^[a-z][a-z0-9+.-]*:/i.test(url)) {
    problem("url", `${JSON.stringify(url)}: only repository paths (catalog/...) and http(s) URLs pinned by digest are supported`);
    return undefined;
  }
  const path = url.replace(/^\.\//, "").replace(/\/+$/, "");
  if (path.split("/").some((s) => s === ".." || s === ".") || path.startsWith("/") || !path.startsWith(`${CATALOG_DIR}/`)) {
    problem("url", `${JSON.stringify(url)}: a chart in the repository is a path under ${CATALOG_DIR}/ (a chart directory or a .tgz)`);
    return undefined;
  }
  const chart = await chartFromTree(tree, path);
  if (chart === null) problem("url", `no chart ${JSON.stringify(path)} in the repository (a directory or a .tgz)`);
  return chart ?? undefined;
}

function crossFileProblems(live: LoadedFile[]): Problem[] {
  const services = live.flatMap((l) => l.services);
  const plans = live.flatMap((l) => l.plans);
  const problems = [
    ...duplicates(services, (s) => s.id, "spec.id", "service id"),
    ...duplicates(services, (s) => s.name, "spec.name", "service name"),
    ...duplicates(plans, (p) => p.id, "spec.id", "plan id"),
    // OSB: plan names are unique within their service.
    ...duplicates(plans, (p) => JSON.stringify([p.serviceId, p.name]), "spec.name", "plan name", (p) =>
      `${JSON.stringify(p.name)} in service ${JSON.stringify(p.serviceId)}`,
    ),
  ];
  const serviceIds = new Set(services.map((s) => s.value.id));
  for (const p of plans) {
    if (!serviceIds.has(p.value.serviceId)) {
      problems.push({
        file: p.file,
        path: `${p.at}spec.serviceId`,
        message: `no service with id ${JSON.stringify(p.value.serviceId)} in the catalog`,
      });
    }
  }
  const withPlans = new Set(plans.map((p) => p.value.serviceId));
  for (const s of services) {
    if (!withPlans.has(s.value.id)) {
      problems.push({
        file: s.file,
        path: `${s.at}spec.id`,
        message: `service ${JSON.stringify(s.value.name)} has no plans (OSB requires at least one; a plan names it in spec.serviceId)`,
      });
    }
  }
  return problems;
}

function duplicates<T>(
  items: Located<T>[],
  key: (v: T) => string,
  path: string,
  what: string,
  label: (v: T) => string = (v) => JSON.stringify(key(v)),
): Problem[] {
  const groups = new Map<string, Located<T>[]>();
  for (const item of items) {
    const k = key(item.value);
    groups.set(k, [...(groups.get(k) ?? []), item]);
  }
  const problems: Problem[] = [];
  for (const group of groups.values()) {
    if (group.length < 2) continue;
    for (const item of group) {
      const others = group.filter((o) => o !== item).map((o) => (o.at ? `${o.file}#${trimDot(o.at)}` : o.file));
      problems.push({
        file: item.file,
        path: `${item.at}${path}`,
        message: `duplicate ${what} ${label(item.value)} (also in ${others.join(", ")})`,
      });
    }
  }
  return problems;
}

function assemble(live: LoadedFile[]): Catalog {
  const plans = live.flatMap((l) => l.plans.map((p) => p.value));
  const services = live.flatMap((l) =>
    l.services.map((s) => ({ ...s.value, plans: plans.filter((p) => p.serviceId === s.value.id) })),
  );
  const serviceIndex = new Map(services.map((s) => [s.id, s]));
  const planIndex = new Map(plans.map((p) => [p.id, p]));
  return { services, serviceById: (id) => serviceIndex.get(id), planById: (id) => planIndex.get(id) };
}
