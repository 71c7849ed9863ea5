/**
 * A stand-in for Flux's notification-controller Receiver, the one Flux part the tests cannot run
 * for real: github.com/fluxcd/notification-controller is refused by the Go module proxy (403 "This
 * module version is not available", ADR 0035), and with it the Receiver CRD. It serves one
 * Receiver as written (examples/flux/receiver.yaml, `spec` read from the file) on 127.0.0.1 and
 * does what notification-controller v1's receiver server does (internal/server/receiver_handlers.go):
 *
 * - the path is /hook/<hex sha256 of token + name + namespace> (status.webhookPath); any other
 *   path is 404;
 * - type `github`: the X-Hub-Signature-256 (or X-Hub-Signature) HMAC of the body with the token
 *   must match, X-GitHub-Event must be one of `spec.events` (when set); a `ping` is answered 200
 *   and requests nothing; `generic-hmac`: X-Signature `sha256=<HMAC>`; `generic`: no check;
 * - then every resource of `spec.resources` gets `reconcile.fluxcd.io/requestedAt: <now>` by a
 *   merge patch on the REAL kube-apiserver, which makes the REAL source-controller fetch.
 *
 * Compared with the real behaviour: not here (its module is not served); test/e2e/nudge.test.ts
 * runs the broker's webhook nudge against the sync-agent double's Receiver, which checks the same
 * signatures, and test/real-agents/flux.test.ts shows the annotation it makes driving real Flux.
 */
import { createHash, createHmac, timingSafeEqual } from "node:crypto";
import { once } from "node:events";
import http from "node:http";
import type { AddressInfo } from "node:net";
import type { RealKube } from "./real-kube.js";

export interface ReceiverSpec {
  type: "github" | "generic" | "generic-hmac";
  events?: string[];
  resources: { apiVersion: string; kind: string; name: string; namespace?: string }[];
}

export interface FluxReceiver {
  /** http://127.0.0.1:<port>/hook/<digest>: what a Git host (or the broker's nudge) POSTs to. */
  readonly url: string;
  /** Every request: its status and, when refused, why. */
  readonly requests: readonly { status: number; reason?: string }[];
  close(): Promise<void>;
}

const PLURALS: Record<string, string> = { GitRepository: "gitrepositories", OCIRepository: "ocirepositories", Bucket: "buckets", Kustomization: "kustomizations" };

function verified(spec: ReceiverSpec, token: string, headers: http.IncomingHttpHeaders, body: Buffer): { ok: true; ping: boolean } | { ok: false; reason: string } {
  const hmac = (algorithm: "sha1" | "sha256") => createHmac(algorithm, token).update(body).digest("hex");
  const same = (given: string | undefined, want: string) => given !== undefined && given.length === want.length && timingSafeEqual(Buffer.from(given), Buffer.from(want));
  if (spec.type === "generic") return { ok: true, ping: false };
  if (spec.type === "generic-hmac") {
    return same(headers["x-signature"] as string | undefined, `sha256=${hmac("sha256")}`) ? { ok: true, ping: false } : { ok: false, reason: "unable to validate HMAC signature" };
  }
  const signature256 = headers["x-hub-signature-256"] as string | undefined;
  const signature = signature256 !== undefined ? same(signature256, `sha256=${hmac("sha256")}`) : same(headers["x-hub-signature"] as string | undefined, `sha1=${hmac("sha1")}`);
  if (!signature) return { ok: false, reason: "unable to validate GitHub signature" };
  const event = String(headers["x-github-event"] ?? "");
  if (spec.events !== undefined && spec.events.length > 0 && !spec.events.includes(event)) return { ok: false, reason: `GitHub event '${event}' is not allowed` };
  return { ok: true, ping: event === "ping" };
}

/** Serves the Receiver `name` in `namespace` with `spec` and the token of its Secret. */
export async function startFluxReceiver(kube: RealKube, { name, namespace, spec, token }: { name: string; namespace: string; spec: ReceiverSpec; token: string }): Promise<FluxReceiver> {
  const digest = createHash("sha256").update(`${token}${name}${namespace}`).digest("hex");
  const requests: { status: number; reason?: string }[] = [];
  const answer = (res: http.ServerResponse, status: number, reason?: string) => {
    requests.push(reason === undefined ? { status } : { status, reason });
    res.writeHead(status).end(reason ?? "");
  };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      void (async () => {
        if (req.method !== "POST" || req.url !== `/hook/${digest}`) {
          answer(res, 404, "receiver not found");
          return;
        }
        const check = verified(spec, token, req.headers, Buffer.concat(chunks));
        if (!check.ok || check.ping) {
          answer(res, check.ok ? 200 : 400, check.ok ? undefined : check.reason);
          return;
        }
        const at = new Date().toISOString();
        for (const r of spec.resources) {
          const ns = r.namespace ?? namespace;
          const patched = await kube.request("PATCH", `/apis/${r.apiVersion}/namespaces/${ns}/${PLURALS[r.kind]}/${r.name}`, { metadata: { annotations: { "reconcile.fluxcd.io/requestedAt": at } } }, { contentType: "application/merge-patch+json" });
          if (patched.status !== 200) {
            answer(res, 500, `unable to annotate ${r.kind} ${ns}/${r.name}: ${patched.status}`);
            return;
          }
        }
        answer(res, 200);
      })().catch((error: unknown) => answer(res, 500, String(error)));
    });
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hook/${digest}`,
    requests,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
