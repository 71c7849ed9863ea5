import { createHmac } from "node:crypto";
import { repositoryNames } from "../nudge/index.js";
import express, { type Request, type Router } from "express";
import { BadRequestError, NotFoundError, OsbError, PayloadTooLargeError, UnauthorizedError } from "../errors/index.js";
import { brokerAuth, safeEqual } from "./auth.js";
import type { Ctx, ReconcileEndpoints } from "./context.js";
import { verifyJsonDepth } from "./hostile-input.js";
import { isObject } from "./request-body.js";

/**
 * POST /admin/webhook: a GitHub or GitLab push event for the broker's branch makes it fetch the
 * remote now rather than at the next poll (the fetch reloads the catalog, registry and overrides
 * and reconciles, as polling does). Authenticated by the shared secret, not by basic auth.
 * POST /admin/rerender: re-render one instance or every instance of a plan (basic auth).
 */

/**
 * Unauthenticated bytes read before the signature check. Only `ref` is read; a push event carries
 * at most 20 commits and is tens of kB. A larger one is refused (413) and the next poll fetches.
 */
export const WEBHOOK_BODY_LIMIT_BYTES = 1024 * 1024;

/**
 * Before any body byte is read: a request without a signature or token header, a wrong GitLab
 * token (a header, checked here), or an announced body over the limit is answered at once, and
 * the connection closed so that the body is never read.
 */
function webhookPrecheck(secret: string): express.RequestHandler {
  return (req, res, next) => {
    const signature = req.get("x-hub-signature-256");
    const token = req.get("x-gitlab-token");
    let refusal: OsbError | undefined;
    if (signature === undefined && (token === undefined || !safeEqual(token, secret))) {
      refusal = new UnauthorizedError("the webhook needs a valid X-Hub-Signature-256 (GitHub) or X-Gitlab-Token (GitLab)");
    } else if (Number(req.get("content-length") ?? 0) > WEBHOOK_BODY_LIMIT_BYTES) {
      refusal = new PayloadTooLargeError(`a webhook body is at most ${WEBHOOK_BODY_LIMIT_BYTES} bytes; the next poll fetches the remote`);
    }
    if (refusal === undefined) {
      next();
      return;
    }
    res.setHeader("Connection", "close");
    next(refusal);
  };
}

function authenticWebhook(req: Request, secret: string, body: Buffer): boolean {
  const signature = req.get("x-hub-signature-256");
  if (signature !== undefined) {
    return safeEqual(signature, `sha256=${createHmac("sha256", secret).update(body).digest("hex")}`);
  }
  const token = req.get("x-gitlab-token");
  return token !== undefined && safeEqual(token, secret);
}

/** The push's ref and the web URLs it gives of its repository (GitHub's repository, GitLab's project). */
function pushed(req: Request, body: Buffer): { ref: unknown; repositories: string[] } {
  const payload = pushPayload(req, body);
  if (!isObject(payload)) return { ref: undefined, repositories: [] };
  const urls: unknown[] = [];
  for (const holder of [payload.repository, payload.project]) {
    if (!isObject(holder)) continue;
    urls.push(holder.html_url, holder.clone_url, holder.ssh_url, holder.web_url, holder.git_http_url, holder.git_ssh_url, holder.homepage);
  }
  return { ref: payload.ref, repositories: urls.filter((u): u is string => typeof u === "string" && u !== "").map(webUrl) };
}

/** A repository's web URL, lower case, for comparing the URLs a push event and a remote give. */
function webUrl(remote: string): string {
  return repositoryNames(remote).htmlUrl.toLowerCase();
}

/** The payload, from a JSON body or GitHub's form-encoded `payload=`. */
function pushPayload(req: Request, body: Buffer): unknown {
  let text = body.toString("utf8");
  if (req.is("application/x-www-form-urlencoded")) text = new URLSearchParams(text).get("payload") ?? "";
  let payload: unknown;
  try {
    payload = JSON.parse(text);
  } catch (e) {
    throw new BadRequestError("the webhook payload is not JSON", { cause: e });
  }
  return payload;
}

function webhook(ctx: Ctx, endpoints: ReconcileEndpoints, secret: string): express.RequestHandler {
  const log = ctx.deps.logger;
  return (req, res) => {
    const body = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
    if (!authenticWebhook(req, secret, body)) {
      throw new UnauthorizedError("the webhook needs a valid X-Hub-Signature-256 (GitHub) or X-Gitlab-Token (GitLab)");
    }
    const event = req.get("x-github-event") ?? req.get("x-gitlab-event");
    if (event === "ping") {
      res.status(200).json({ refresh: false, reason: "ping" });
      return;
    }
    const { ref, repositories } = pushed(req, body);
    // With stores (ADR 0027): a push to a store's repository fetches that store only.
    const store = endpoints.stores?.find((st) => repositories.includes(webUrl(st.remote)));
    const wanted = `refs/heads/${store?.branch ?? endpoints.branch}`;
    if ((event !== "push" && event !== "Push Hook") || ref !== wanted) {
      res.status(200).json({ refresh: false, reason: `not a push to ${wanted}` });
      return;
    }
    const writer = store && ctx.deps.stores ? ctx.deps.stores.writer(store.name) : ctx.deps.writer;
    // Answer at once; the fetch and what it triggers run in the background.
    writer.refresh().then(
      (tip) => log.info({ tip, event, store: store?.name }, "webhook: fetched the remote"),
      (e: unknown) => log.warn({ err: e, store: store?.name }, "webhook: fetching the Git remote failed"),
    );
    res.status(202).json({ refresh: true, ...(store ? { store: store.name } : {}) });
  };
}

function rerender(ctx: Ctx, endpoints: ReconcileEndpoints): express.RequestHandler {
  return async (req, res) => {
    const body: unknown = req.body;
    const planId = isObject(body) ? body.plan_id : undefined;
    const instanceId = isObject(body) ? body.instance_id : undefined;
    if ((planId === undefined) === (instanceId === undefined)) {
      throw new BadRequestError("rerender: give exactly one of plan_id and instance_id");
    }
    const id = planId ?? instanceId;
    if (typeof id !== "string" || id === "") throw new BadRequestError("rerender: plan_id / instance_id must be a non-empty string");
    const { reconciler } = endpoints;
    if (planId !== undefined) {
      const instances = await reconciler.rerenderPlan(id, "manual");
      if (instances === 0 && !ctx.deps.view.catalog().planById(id)) throw new NotFoundError(`plan ${id} is not in the catalog`);
      res.status(202).json({ plan_id: id, instances });
      return;
    }
    if (!(await reconciler.rerenderInstance(id, "manual"))) throw new NotFoundError(`instance ${id} does not exist`);
    res.status(202).json({ instance_id: id, instances: 1 });
  };
}

export function reconcileRoutes(ctx: Ctx, endpoints: ReconcileEndpoints): Router {
  const router = express.Router();
  if (endpoints.webhookSecret !== null) {
    router.post(
      "/admin/webhook",
      webhookPrecheck(endpoints.webhookSecret),
      express.raw({ type: () => true, limit: WEBHOOK_BODY_LIMIT_BYTES }),
      webhook(ctx, endpoints, endpoints.webhookSecret),
    );
  }
  router.post(
    "/admin/rerender",
    brokerAuth(ctx.deps.credentials, ctx.deps.clientCertificates),
    express.json({ type: () => true, limit: "64kb", verify: verifyJsonDepth }),
    rerender(ctx, endpoints),
  );
  return router;
}
