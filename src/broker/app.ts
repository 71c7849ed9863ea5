import { randomUUID } from "node:crypto";
import express, { type ErrorRequestHandler, type Request, type RequestHandler, type Response } from "express";
import { toOsbCatalog, type ReadinessCheck } from "../catalog/index.js";
import { createInstanceSummaryCache, createQuotaReader } from "../repo/index.js";
import { noopInstruments } from "../metrics/index.js";
import { routedWriter } from "../stores/index.js";
import { NotFoundError } from "../errors/index.js";
import { adminRoutes } from "./admin-routes.js";
import { brokerAuth } from "./auth.js";
import * as bindings from "./bindings.js";
import type { BrokerDeps, Ctx, OsbResponse } from "./context.js";
import { echoRequestIdentity, osbHeaders, platformPath, type OsbRequestInfo } from "./headers.js";
import { historyResponse } from "./history.js";
import * as instances from "./instances.js";
import { checkId, OSB_BODY_LIMIT, verifyJsonDepth } from "./hostile-input.js";
import { osbAnswer } from "./osb-answers.js";
import { queryHints } from "./platform-ids.js";
import { reconcileRoutes } from "./reconcile-routes.js";
import {
  acceptsIncomplete,
  optionalQueryString,
  parseBindBody,
  parseProvisionBody,
  parseUpdateBody,
  requiredQueryIds,
} from "./request-body.js";

function pathId(req: Request, name: "instance_id" | "binding_id"): string {
  return checkId(name, req.params[name]);
}

const WRITE_KINDS: Record<string, string> = {
  "PUT /service_instances/:instance_id": "provision",
  "PATCH /service_instances/:instance_id": "update",
  "DELETE /service_instances/:instance_id": "deprovision",
  "PUT /service_instances/:instance_id/service_bindings/:binding_id": "bind",
  "DELETE /service_instances/:instance_id/service_bindings/:binding_id": "unbind",
};

/** The OSB write a request is, by method and route pattern within the OSB router. */
function writeKind(method: string, route: string): string | undefined {
  return WRITE_KINDS[`${method} ${route}`];
}

/**
 * Where the OSB API is served: `/v2`, and Service Fabrik's `/<platform>/v2` and
 * `/<platform>/region/<region>/v2` (platforms cf, k8s, sm), so that a platform registered at
 * Service Fabrik moves by a change of host (ADR 0025).
 */
const OSB_MOUNTS = ["/v2", "/:platform/v2", "/:platform/region/:region/v2"] as const;

function osbInfo(res: Response): OsbRequestInfo {
  return res.locals.osb as OsbRequestInfo;
}

function send(res: Response, out: OsbResponse): void {
  if (out.retryAfter !== undefined) res.setHeader("Retry-After", String(out.retryAfter));
  res.status(out.status).json(out.body);
}

/** Wrap an async handler so its rejection reaches the error middleware (express 5 does too; explicit for clarity). */
function route(fn: (req: Request, res: Response) => Promise<OsbResponse> | OsbResponse): RequestHandler {
  return (req, res, next) => {
    Promise.resolve()
      .then(() => fn(req, res))
      .then((out) => send(res, out))
      .catch(next);
  };
}

/**
 * One log line per request, written when the answer is sent: the full path (as the client
 * sent it, without the query), and for an error its code and description. Expected 4xx at
 * info without a stack; 5xx at error with the cause. 401 lines name the client's address (and
 * the subject of its client certificate, if it sent one).
 */
function requestLog(ctx: Ctx): RequestHandler {
  const log = ctx.deps.logger;
  return (req, res, next) => {
    const started = process.hrtime.bigint();
    res.on("finish", () => {
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      // The route pattern, never the path: ids would make a series per instance. An OSB route is
      // named by its mount pattern (the base path is gone once an error left the router).
      const path = req.route ? String((req.route as { path: unknown }).path) : undefined;
      const mount = res.locals.osbMount as string | undefined;
      const route = path === undefined ? "unmatched" : `${mount ?? req.baseUrl}${path}`;
      ctx.deps.metrics.requests.inc({ method: req.method, route, status: String(res.statusCode) });
      ctx.deps.metrics.requestSeconds.observe(seconds, { method: req.method, route });
      const kind = mount !== undefined && path !== undefined ? writeKind(req.method, path) : undefined;
      if (kind) {
        const status = res.statusCode;
        const outcome = status < 400 ? "acknowledged" : status < 500 ? "rejected" : "failed";
        ctx.deps.metrics.operations.inc({ kind, outcome });
        // An OSB write is acknowledged once its commit is on the remote: this is that latency.
        if (outcome === "acknowledged") ctx.deps.metrics.ackSeconds.observe(seconds, { kind });
      }
      const failure = res.locals.failure as RequestFailure | undefined;
      const fields = {
        method: req.method,
        path: req.originalUrl.split("?", 1)[0],
        status: res.statusCode,
        ms: seconds * 1e3,
        requestIdentity: req.get("x-broker-api-request-identity"),
        ...(failure ? { code: failure.code } : {}),
        ...(res.statusCode === 401 ? { client: req.socket.remoteAddress, ...(res.locals.clientSubject ? { subject: res.locals.clientSubject as string } : {}) } : {}),
        ...(failure?.cause !== undefined ? { err: failure.cause } : {}),
      };
      if (res.statusCode >= 500) log.error(fields, failure?.message ?? "request");
      else log.info(fields, failure?.message ?? "request");
    });
    // No answer reached the client (its timeout, say): no "finish", so no line above. ADR 0034.
    res.on("close", () => {
      if (res.writableFinished) return;
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      log.warn({ method: req.method, path: req.originalUrl.split("?", 1)[0], ms, requestIdentity: req.get("x-broker-api-request-identity") }, "the client closed the connection before the answer");
    });
    next();
  };
}

/** The OSB API, behind `auth`: mounted at each of OSB_MOUNTS. */
function osbRouter(ctx: Ctx, auth: RequestHandler): express.Router {
  const v2 = express.Router({ mergeParams: true });
  v2.use(auth);
  v2.use(osbHeaders);
  // OSB bodies are JSON; a missing Content-Type is still parsed (spec: brokers MAY process it).
  // GET and DELETE carry no body: skip parsing on the polling path.
  // The depth check runs on the raw bytes, before the parser (see hostile-input.ts).
  v2.use(
    express.json({
      type: (req) => req.method === "PUT" || req.method === "PATCH",
      limit: OSB_BODY_LIMIT,
      strict: false,
      verify: verifyJsonDepth,
    }),
  );
  // body-parser turns an empty body into {}; OSB bodies are required where they are read.
  v2.use((req, _res, next) => {
    if (!req.get("transfer-encoding") && Number(req.get("content-length") ?? 0) === 0) req.body = undefined;
    next();
  });

  v2.get(
    "/catalog",
    route((_req, res) => ({ status: 200, body: toOsbCatalog(ctx.deps.view.catalog(), osbInfo(res).apiVersion, osbInfo(res).platform) })),
  );

  v2.put(
    "/service_instances/:instance_id",
    route((req, res) =>
      instances.provision(ctx, pathId(req, "instance_id"), parseProvisionBody(req.body, osbInfo(res).apiVersion), acceptsIncomplete(req.query), osbInfo(res)),
    ),
  );
  v2.patch(
    "/service_instances/:instance_id",
    route((req, res) =>
      instances.update(ctx, pathId(req, "instance_id"), parseUpdateBody(req.body, osbInfo(res).apiVersion), acceptsIncomplete(req.query), osbInfo(res)),
    ),
  );
  v2.delete(
    "/service_instances/:instance_id",
    route((req, res) =>
      instances.deprovision(
        ctx,
        pathId(req, "instance_id"),
        requiredQueryIds(req.query, "deprovision"),
        acceptsIncomplete(req.query),
        osbInfo(res),
      ),
    ),
  );
  v2.get(
    "/service_instances/:instance_id/last_operation",
    route((req, res) =>
      instances.instanceLastOperation(ctx, pathId(req, "instance_id"), optionalQueryString(req.query, "operation"), osbInfo(res).apiVersion),
    ),
  );
  v2.get(
    "/service_instances/:instance_id",
    route((req, res) =>
      instances.fetchInstance(ctx, pathId(req, "instance_id"), osbInfo(res).apiVersion, queryHints(req.query, "fetch instance", osbInfo(res).apiVersion)),
    ),
  );

  v2.put(
    "/service_instances/:instance_id/service_bindings/:binding_id",
    route((req, res) =>
      bindings.bind(
        ctx,
        pathId(req, "instance_id"),
        pathId(req, "binding_id"),
        parseBindBody(req.body, osbInfo(res).apiVersion),
        acceptsIncomplete(req.query),
        osbInfo(res),
      ),
    ),
  );
  v2.delete(
    "/service_instances/:instance_id/service_bindings/:binding_id",
    route((req, res) =>
      bindings.unbind(
        ctx,
        pathId(req, "instance_id"),
        pathId(req, "binding_id"),
        requiredQueryIds(req.query, "unbind"),
        acceptsIncomplete(req.query),
        osbInfo(res),
      ),
    ),
  );
  v2.get(
    "/service_instances/:instance_id/service_bindings/:binding_id/last_operation",
    route((req, res) =>
      bindings.bindingLastOperation(
        ctx,
        pathId(req, "instance_id"),
        pathId(req, "binding_id"),
        optionalQueryString(req.query, "operation"),
        osbInfo(res).apiVersion,
      ),
    ),
  );
  v2.get(
    "/service_instances/:instance_id/service_bindings/:binding_id",
    route((req, res) =>
      bindings.fetchBinding(
        ctx,
        pathId(req, "instance_id"),
        pathId(req, "binding_id"),
        osbInfo(res).apiVersion,
        queryHints(req.query, "fetch binding", osbInfo(res).apiVersion),
      ),
    ),
  );
  return v2;
}

export function createApp(deps: BrokerDeps): express.Express {
  const ctx: Ctx = {
    deps: {
      now: () => new Date(),
      newId: () => randomUUID(),
      brokerVersion: "gitops-broker",
      metrics: noopInstruments.broker,
      ...deps,
    },
    summaries: deps.summaries ?? createInstanceSummaryCache(),
    quotas: createQuotaReader(),
    routed: routedWriter(deps.writer, deps.stores),
  };
  const app = express();
  app.disable("x-powered-by");
  app.set("query parser", "simple");

  app.use(echoRequestIdentity);
  app.use(requestLog(ctx));

  app.get("/healthz", (_req, res) => {
    res.json({ status: "ok" });
  });
  app.get("/readyz", (_req, res, next) => {
    readiness(ctx)
      .then((checks) => {
        const ok = checks.every((c) => c.ok || c.severity === "warning");
        res.status(ok ? 200 : 503).json({ status: ok ? "ready" : "not ready", checks });
      })
      .catch(next);
  });

  const auth = brokerAuth(deps.credentials, deps.clientCertificates);
  const v2 = osbRouter(ctx, auth);
  for (const mount of OSB_MOUNTS) {
    app.use(
      mount,
      (_req, res, next) => {
        res.locals.osbMount = mount;
        next();
      },
      platformPath,
      v2,
    );
  }
  app.get(
    "/admin/instances/:instance_id/history",
    auth,
    route((req) => historyResponse(ctx, pathId(req, "instance_id"))),
  );
  app.use(adminRoutes(ctx));
  if (deps.reconcile) app.use(reconcileRoutes(ctx, deps.reconcile));
  app.use((req, _res, next) => next(new NotFoundError(`no route for ${req.method} ${req.path}`)));
  app.use(errorHandler());
  return app;
}

/** What the error handler leaves for the request's log line. */
interface RequestFailure {
  code: string;
  message: string;
  cause?: unknown;
}

/** The one place where errors become responses: the OSB error body, from the error hierarchy (osb-answers.ts). */
function errorHandler(): ErrorRequestHandler {
  return (err, req, res, next) => {
    if (res.headersSent) {
      next(err);
      return;
    }
    const answer = osbAnswer(err, req.method === "GET" || req.method === "HEAD");
    // Logged with the request line (see createApp); a 5xx keeps its cause and stack.
    const failure: RequestFailure = { code: answer.code, message: answer.body.description, ...(answer.status >= 500 ? { cause: err as unknown } : {}) };
    res.locals.failure = failure;
    if (answer.retryAfter !== undefined) res.setHeader("Retry-After", String(answer.retryAfter));
    res.status(answer.status).json(answer.body);
  };
}

async function readiness(ctx: Ctx): Promise<ReadinessCheck[]> {
  const checks: ReadinessCheck[] = [];
  const catalog = ctx.deps.view.catalog();
  checks.push({
    name: "catalog",
    ok: catalog.services.length > 0,
    ...(catalog.services.length > 0 ? {} : { message: "no service in the catalog" }),
  });
  const reachable = ctx.deps.writer.remoteReachable;
  const trouble = ctx.deps.writer.remoteTrouble ?? "last contact with the Git remote failed";
  checks.push({ name: "git-remote", ok: reachable, ...(reachable ? {} : { message: trouble }) });
  const rewrite = ctx.deps.writer.historyRewrite;
  if (rewrite) {
    // Answers keep coming from the remote's truth, so the broker stays ready; operators see it here.
    checks.push({
      name: "git-history",
      ok: false,
      severity: "warning",
      message:
        `the remote branch was rewritten at ${rewrite.noticedAt}: ${rewrite.lostCommits.length} commit(s) erased` +
        (rewrite.lostInstances.length > 0 ? `, operations of instance(s) ${rewrite.lostInstances.slice(0, 20).join(", ")}` : "") +
        ` (was ${rewrite.previousTip}, now ${rewrite.tip})`,
    });
  }
  if (ctx.deps.readiness) checks.push(...(await ctx.deps.readiness()));
  return checks;
}
