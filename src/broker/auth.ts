import { createHash, timingSafeEqual } from "node:crypto";
import type { TLSSocket } from "node:tls";
import type { Request, RequestHandler } from "express";
import { UnauthorizedError } from "../errors/index.js";

export interface BasicCredentials {
  username: string;
  password: string;
}

function digest(s: string): Buffer {
  return createHash("sha256").update(s, "utf8").digest();
}

/** Constant-time comparison: both sides are hashed to equal length first. */
export function safeEqual(a: string, b: string): boolean {
  return timingSafeEqual(digest(a), digest(b));
}

export function parseBasicAuth(header: string | undefined): BasicCredentials | null {
  if (!header) return null;
  const match = /^Basic\s+([A-Za-z0-9+/=._~-]+)\s*$/i.exec(header);
  if (!match?.[1]) return null;
  const decoded = Buffer.from(match[1], "base64").toString("utf8");
  const colon = decoded.indexOf(":");
  if (colon < 0) return null;
  return { username: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
}

/** HTTP basic auth on every route it guards: 401 with a Basic challenge otherwise. */
export function basicAuth(expected: BasicCredentials): RequestHandler {
  return (req, res, next) => {
    const given = parseBasicAuth(req.headers.authorization);
    // Evaluate both comparisons always, so timing does not reveal which one failed.
    const userOk = safeEqual(given?.username ?? "", expected.username);
    const passOk = safeEqual(given?.password ?? "", expected.password);
    if (given && userOk && passOk) {
      next();
      return;
    }
    res.setHeader("WWW-Authenticate", 'Basic realm="gitops-broker", charset="UTF-8"');
    next(new UnauthorizedError(given ? "invalid credentials" : "missing basic authentication"));
  };
}

/** A client certificate's subject, as Node's `getPeerCertificate().subject` gives it. */
export type PeerSubject = Readonly<Record<string, string | readonly string[] | undefined>>;

/**
 * Client-certificate authentication (TLS with `tls.clientCa`), and how it combines with basic
 * auth: `certificate` alone (Service Fabrik's secureIncomingConnections), `both`, or `either`.
 */
export interface ClientCertificateAuth {
  mode: "certificate" | "both" | "either";
  /** Whether a verified certificate's subject is allowed (tls.clientSubjects). */
  allows(subject: PeerSubject): boolean;
}

/** What the client certificate of a request proves: ok, or why not, and its subject for the log. */
function checkCertificate(req: Request, policy: ClientCertificateAuth): { ok: boolean; reason: string; subject?: string } {
  const socket = req.socket as Partial<TLSSocket>;
  const cert = typeof socket.getPeerCertificate === "function" ? socket.getPeerCertificate() : undefined;
  if (!cert || Object.keys(cert).length === 0) return { ok: false, reason: "no client certificate" };
  const subject = formatSubject(cert.subject);
  if (socket.authorized !== true) {
    const why = socket.authorizationError === undefined ? "" : ` (${String(socket.authorizationError)})`;
    return { ok: false, reason: `the client certificate is not issued by a trusted CA${why}`, subject };
  }
  if (!policy.allows(cert.subject ?? {})) return { ok: false, reason: "the client certificate's subject is not allowed", subject };
  return { ok: true, reason: "", subject };
}

/** `/C=DE/O=SAP SE/CN=x`: the form tls.clientSubjects takes, so a refused subject can be copied there. */
function formatSubject(subject: PeerSubject | undefined): string {
  const parts: string[] = [];
  for (const [type, value] of Object.entries(subject ?? {})) {
    if (value === undefined) continue;
    for (const v of typeof value === "string" ? [value] : value) parts.push(`/${type}=${v.replace(/[\\/]/g, "\\$&")}`);
  }
  return parts.join("");
}

/**
 * Authentication of the OSB API and the admin endpoints: basic auth, or, with client
 * certificates, what `clientCertificates.mode` says. A refusal is a 401 with the OSB error body;
 * the client certificate's subject is left in `res.locals.clientSubject` for the request's log line.
 */
export function brokerAuth(credentials: BasicCredentials, clientCertificates?: ClientCertificateAuth): RequestHandler {
  const basic = basicAuth(credentials);
  if (!clientCertificates) return basic;
  return (req, res, next) => {
    const cert = checkCertificate(req, clientCertificates);
    if (cert.subject !== undefined) res.locals.clientSubject = cert.subject;
    switch (clientCertificates.mode) {
      case "certificate":
        if (cert.ok) next();
        else next(new UnauthorizedError(cert.reason));
        return;
      case "both":
        if (cert.ok) basic(req, res, next);
        else next(new UnauthorizedError(cert.reason));
        return;
      case "either":
        if (cert.ok) {
          next();
          return;
        }
        basic(req, res, (err?: unknown) => {
          if (err instanceof UnauthorizedError) {
            next(new UnauthorizedError(`neither a valid client certificate (${cert.reason}) nor valid basic credentials (${err.message})`));
          } else next(err);
        });
        return;
    }
  };
}
