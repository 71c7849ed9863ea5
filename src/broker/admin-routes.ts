import express, { type Request, type Router } from "express";
import { BadRequestError, UnprocessableEntityError } from "../errors/index.js";
import { finishMove, moveCluster, planMove, type MoveStep } from "../stores/index.js";
import type { OperationState } from "../status-watcher/index.js";
import type { AdminDeps } from "./admin.js";
import { cleanupBinding, INSTANCE_STATES, listInstances, type InstanceQuery } from "./admin-views.js";
import { brokerAuth } from "./auth.js";
import type { Ctx } from "./context.js";
import { checkId, verifyJsonDepth } from "./hostile-input.js";
import { isObject } from "./request-body.js";

/**
 * The operator views of Service Fabrik's operator APIs, on the admin surface (basic auth or a
 * client certificate, as the OSB API and the other admin endpoints):
 *
 * GET  /admin/instances?cluster=&service=&plan=&state=&page_size=&page_token=
 *      live instances by cluster, service, plan and last-operation state, paged
 *      (Service Fabrik's GET /operator/deployments).
 * POST /admin/bindings/cleanup {"instance_id": …, "binding_id": …}
 *      removes the records of a binding whose instance is gone, in one commit
 *      (Service Fabrik's DELETE /operator/service_instances/{i}/service_bindings/{b}/cleanup).
 * POST /admin/clusters/{cluster}/move {"to": store, "dry_run"?: bool, "finish"?: bool}
 *      moves a cluster's instances to another store (ADR 0027, docs/stores.md) through this
 *      broker's own write queues, so that its commits never wait behind the serving stream.
 */

const LIST_PARAMETERS = ["cluster", "service", "plan", "state", "page_size", "page_token"] as const;

function adminDeps(ctx: Ctx): AdminDeps {
  const { writer, view, status, brokerVersion } = ctx.deps;
  return { writer, routed: ctx.routed, view, status, summaries: ctx.summaries, brokerVersion };
}

function parseState(value: string): OperationState {
  const state = value.replace(/_/g, " ");
  const known = INSTANCE_STATES.find((s) => s === state);
  if (!known) throw new BadRequestError(`state must be one of ${INSTANCE_STATES.map((s) => s.replace(" ", "_")).join(", ")}, not ${JSON.stringify(value)}`);
  return known;
}

/** The listing's query: each parameter at most once, none unknown. */
function instanceQuery(req: Request): InstanceQuery {
  const query = req.query as Record<string, unknown>;
  const values: Partial<Record<(typeof LIST_PARAMETERS)[number], string>> = {};
  for (const [name, value] of Object.entries(query)) {
    if (!(LIST_PARAMETERS as readonly string[]).includes(name)) {
      throw new BadRequestError(`unknown query parameter ${JSON.stringify(name)}: the parameters are ${LIST_PARAMETERS.join(", ")}`);
    }
    if (typeof value !== "string" || value === "") throw new BadRequestError(`query parameter ${name} must be given once, not empty`);
    values[name as (typeof LIST_PARAMETERS)[number]] = value;
  }
  const pageSize = values.page_size;
  if (pageSize !== undefined && !/^[0-9]{1,7}$/.test(pageSize)) throw new BadRequestError(`page_size must be an integer, not ${JSON.stringify(pageSize)}`);
  return {
    ...(values.cluster !== undefined ? { clusterId: values.cluster } : {}),
    ...(values.service !== undefined ? { serviceId: values.service } : {}),
    ...(values.plan !== undefined ? { planId: values.plan } : {}),
    ...(values.state !== undefined ? { state: parseState(values.state) } : {}),
    ...(pageSize !== undefined ? { pageSize: Number(pageSize) } : {}),
    ...(values.page_token !== undefined ? { pageToken: values.page_token } : {}),
  };
}

export function adminRoutes(ctx: Ctx): Router {
  const router = express.Router();
  const auth = brokerAuth(ctx.deps.credentials, ctx.deps.clientCertificates);
  router.get("/admin/instances", auth, async (req, res) => {
    res.status(200).json(await listInstances(adminDeps(ctx), instanceQuery(req)));
  });
  router.post(
    "/admin/bindings/cleanup",
    auth,
    express.json({ type: () => true, limit: "64kb", verify: verifyJsonDepth }),
    async (req, res) => {
      const body: unknown = req.body;
      if (!isObject(body)) throw new BadRequestError('binding cleanup: the body must be a JSON object {"instance_id": …, "binding_id": …}');
      const instanceId = checkId("instance_id", body.instance_id);
      const bindingId = checkId("binding_id", body.binding_id);
      res.status(200).json(await cleanupBinding(adminDeps(ctx), instanceId, bindingId));
    },
  );
  router.post(
    "/admin/clusters/:clusterId/move",
    auth,
    express.json({ type: () => true, limit: "4kb", verify: verifyJsonDepth }),
    async (req, res) => {
      const body: unknown = req.body;
      if (!isObject(body) || typeof body.to !== "string" || body.to === "") {
        throw new BadRequestError('cluster move: the body must be a JSON object {"to": "<store>", "dry_run"?: bool, "finish"?: bool}');
      }
      for (const flag of ["dry_run", "finish"] as const) {
        if (body[flag] !== undefined && typeof body[flag] !== "boolean") throw new BadRequestError(`cluster move: ${flag} must be true or false`);
      }
      const stores = ctx.deps.stores;
      if (!stores) throw new UnprocessableEntityError("no stores are configured (stores: in the broker configuration): every cluster is in the control repository");
      const clusterId = checkId("cluster", req.params.clusterId);
      const options = { stores, clusters: () => ctx.deps.view.clusters(), clusterId, to: body.to };
      const steps: MoveStep[] = [];
      const plan =
        body.dry_run === true ? await planMove(options) : body.finish === true ? await finishMove(options, (s) => steps.push(s)) : await moveCluster(options, (s) => steps.push(s));
      res.status(200).json({ ...plan, steps });
    },
  );
  return router;
}
