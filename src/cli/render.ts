import { stat } from "node:fs/promises";
import path from "node:path";
import { Command } from "commander";
import type { Done } from "./args.js";
import { DEFAULT_INSTANCE_NAMESPACE, loadCatalog, loadClusters } from "../catalog/index.js";
import { ConfigError, RenderError, TemplateFailure } from "../errors/index.js";
import { engineFor, hasTemplate, render, renderGoTemplateRequest, renderText, type RenderValues } from "../render/index.js";
import {
  dirTreeReader,
  keyOf,
  LABEL_BINDING,
  LABEL_INSTANCE,
  LABEL_MANAGED_BY,
  MANAGED_BY,
  readBinding,
  readInstance,
  readLiveBindings,
  RECORD_API_VERSION,
  type BindingRecord,
  type InstanceRecord,
} from "../repo/index.js";

/**
 * Debugging a plan's templates without a broker: `render-template` renders one template text,
 * `render` the manifests (or text) a plan's action gives for an instance
 * (cloudfoundry/service-fabrik-broker#1496 asked for this dump). Nothing is committed.
 */

interface Io {
  stdin: () => Promise<Buffer>;
  stdout: (text: string) => void;
  stderr: (text: string) => void;
}

const processIo: Io = {
  stdin: async () => {
    const chunks: Buffer[] = [];
    for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks);
  },
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
};

/**
 * `gitops-broker render-template --engine gotemplate|handlebars`: `{"name","template","values"}`
 * on stdin, the rendered text on stdout byte for byte; exit 1 with the engine's error on stderr.
 * For gotemplate the stdin bytes reach Go untouched (numbers keep their text); `values` keys
 * service, plan, instance and binding are Service Fabrik's objects (numbers float64), every
 * other key a live object (integral numbers int64).
 */
export async function runRenderTemplate(options: { engine: string }, io: Io = processIo): Promise<number> {
  const type = options.engine;
  const engine = engineFor(type);
  if (engine === undefined) throw new ConfigError([{ file: "flags", path: "--engine", message: `unknown engine ${JSON.stringify(type)}` }]);
  const input = (await io.stdin()).toString("utf8");
  let request: { name?: unknown; template?: unknown; values?: unknown };
  try {
    request = JSON.parse(input) as typeof request;
  } catch (e) {
    io.stderr(`render-template: stdin is not JSON: ${(e as Error).message}\n`);
    return 1;
  }
  if (typeof request !== "object" || request === null || typeof request.template !== "string") {
    io.stderr('render-template: stdin must be {"name": string, "template": string, "values": object}\n');
    return 1;
  }
  const name = typeof request.name === "string" ? request.name : "template";
  try {
    const text =
      engine.type === "gotemplate"
        ? await renderGoTemplateRequest(input, name)
        : await engine.render({ action: "template", type, content: request.template, source: name }, (request.values ?? {}) as RenderValues, { name });
    io.stdout(text);
    return 0;
  } catch (e) {
    if (e instanceof TemplateFailure || e instanceof RenderError) {
      io.stderr(`${e.message}\n`);
      return 1;
    }
    throw e;
  }
}

const MANIFEST_ACTIONS = new Set(["provision", "update", "bind", "unbind"]);

/**
 * `gitops-broker render [repo-dir] --plan ID --action A --instance ID [--binding ID] [--parameters JSON]`:
 * what the plan renders for the instance (its record when the repository has one, else a new
 * instance on the first cluster), without committing. Manifest actions print the objects as the
 * broker would write them (`---` between), other actions the template's text.
 */
export interface RenderOptions {
  plan: string;
  action: string;
  instance: string;
  binding?: string;
  parameters?: string;
}

export async function runRender(repoDir: string | undefined, options: RenderOptions, io: Io = processIo): Promise<number> {
  const dir = path.resolve(repoDir ?? ".");
  if (!(await stat(dir).then((s) => s.isDirectory(), () => false))) {
    throw new ConfigError([{ file: dir, path: "", message: "is not a directory (give a checkout of the GitOps repository)" }]);
  }
  let parameters: Record<string, unknown> | undefined;
  if (options.parameters !== undefined) {
    try {
      parameters = JSON.parse(options.parameters) as Record<string, unknown>;
    } catch (e) {
      throw new ConfigError([{ file: "flags", path: "--parameters", message: `is not JSON: ${(e as Error).message}` }]);
    }
  }
  const tree = dirTreeReader(dir);
  const [{ catalog }, { clusters }] = await Promise.all([loadCatalog(tree), loadClusters(tree)]);
  const planId = options.plan;
  const plan = catalog.planById(planId) ?? catalog.services.flatMap((s) => s.plans).find((p) => p.name === planId);
  const service = plan && catalog.serviceById(plan.serviceId);
  if (!plan || !service) {
    io.stderr(`render: no plan ${JSON.stringify(planId)} in the catalog of ${dir}\n`);
    return 1;
  }
  const { action, instance: instanceId } = options;
  const cluster = clusters[0];
  const namespace = cluster?.namespace ?? DEFAULT_INSTANCE_NAMESPACE;
  const stored = await readInstance(tree, instanceId);
  const instance: InstanceRecord = stored ?? {
    apiVersion: RECORD_API_VERSION,
    kind: "ServiceInstance",
    metadata: { name: keyOf(instanceId), namespace },
    spec: { instanceId, serviceId: service.id, planId: plan.id, clusterId: cluster?.id ?? "cluster", context: { platform: "gitops-broker-render" } },
    status: { operations: [] },
  };
  if (parameters !== undefined) instance.spec.parameters = parameters;
  const bindingId = options.binding;
  let binding: BindingRecord | undefined;
  if (bindingId !== undefined) {
    binding = (await readBinding(tree, instanceId, bindingId)) ?? {
      apiVersion: RECORD_API_VERSION,
      kind: "ServiceBinding",
      metadata: { name: keyOf(bindingId), namespace: instance.metadata.namespace },
      spec: { bindingId, instanceId, serviceId: service.id, planId: plan.id },
      status: { operations: [] },
    };
  }
  const bindings = stored ? await readLiveBindings(tree, instanceId) : [];
  if (binding && !bindings.some((b) => b.spec.bindingId === binding.spec.bindingId)) bindings.push(binding);
  const values: RenderValues = {
    service: service.raw,
    plan: plan.raw,
    instance: instance as unknown as Record<string, unknown>,
    bindings: bindings as unknown as Record<string, unknown>[],
    ...(binding ? { binding: binding as unknown as Record<string, unknown> } : {}),
  };
  if (!hasTemplate(plan.templates, action)) {
    io.stderr(`render: plan ${plan.name} has no ${action} template\n`);
    return 1;
  }
  // The helm engine's .Capabilities: the registry entry of the cluster the instance is on.
  const capabilities = clusters.find((c) => c.id === instance.spec.clusterId)?.capabilities;
  const caps = capabilities === undefined ? {} : { capabilities };
  try {
    if (MANIFEST_ACTIONS.has(action)) {
      const labels: Record<string, string> = { [LABEL_MANAGED_BY]: MANAGED_BY, [LABEL_INSTANCE]: keyOf(instanceId) };
      if (binding) labels[LABEL_BINDING] = keyOf(binding.spec.bindingId);
      const manifests = await render({ action, templates: plan.templates, values, defaultNamespace: instance.metadata.namespace, labels, planName: plan.name, ...caps });
      io.stdout(manifests.map((m) => `# ${m.fileName}\n${m.yaml}`).join("---\n"));
    } else {
      io.stdout(await renderText({ action, templates: plan.templates, values, planName: plan.name, ...caps }));
    }
    return 0;
  } catch (e) {
    if (e instanceof RenderError) {
      io.stderr(`${e.message}\n`);
      return 1;
    }
    throw e;
  }
}

/** `gitops-broker render`, on commander: its options, its --help. */
export function renderCommand(done: Done, io: Io = processIo): Command {
  return new Command("render")
    .description("print the manifests a plan renders for an instance, committing nothing")
    .argument("[repo-dir]", "a checkout of the GitOps repository (default: the current directory)")
    .requiredOption("--plan <id>", "the plan, by id or name")
    .requiredOption("--action <action>", "the plan's template to render: provision, update, bind, unbind, or a helper action (status, sources, ...)")
    .requiredOption("--instance <id>", "the instance: its record when the repository has one, else a new instance on the first cluster")
    .option("--binding <id>", "the binding (bind, unbind): its record when there is one, else a new binding")
    .option("--parameters <json>", "the instance's parameters, a JSON object (replace the record's)")
    .addHelpText(
      "after",
      "\nManifest actions (provision, update, bind, unbind) print the objects as the broker would write them,\n" +
        "'---' between them; the others print the template's text. Exit 1 with the engine's error when the\n" +
        "template fails.",
    )
    .action(async (repoDir: string | undefined, options: RenderOptions) => {
      done(await runRender(repoDir, options, io));
    });
}

/** `gitops-broker render-template`, on commander. */
export function renderTemplateCommand(done: Done, io: Io = processIo): Command {
  return new Command("render-template")
    .description('render one template: {"name","template","values"} JSON on stdin, the text on stdout')
    .option("--engine <engine>", "the template engine: gotemplate or handlebars", "gotemplate")
    .addHelpText(
      "after",
      "\nFor gotemplate the stdin bytes reach Go untouched (numbers keep their text); values keys service,\n" +
        "plan, instance and binding are Service Fabrik's objects, every other key a live object. Exit 1 with\n" +
        "the engine's error on stderr.",
    )
    .action(async (options: { engine: string }) => {
      done(await runRenderTemplate(options, io));
    });
}
