import { createHash, timingSafeEqual } from "node:crypto";
import type { RequestHandler } from "express";
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
