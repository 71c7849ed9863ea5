import type { RequestHandler, Response } from "express";
import { BadRequestError, NotFoundError, PreconditionFailedError } from "../errors/index.js";
import { PLATFORMS, type ApiVersion, type Platform } from "../catalog/index.js";
import { jsonDepthExceeds, MAX_JSON_DEPTH } from "./hostile-input.js";
import type { OriginatingIdentity } from "../repo/index.js";

export const MIN_API_VERSION: ApiVersion = { major: 2, minor: 13 };
export const MAX_API_VERSION: ApiVersion = { major: 2, minor: 17 };

const VERSION_HEADER = "x-broker-api-version";
const REQUEST_IDENTITY = "x-broker-api-request-identity";
const ORIGINATING_IDENTITY = "x-broker-api-originating-identity";

/** Per-request OSB header values, set on res.locals by `osbHeaders`. */
export interface OsbRequestInfo {
  apiVersion: ApiVersion;
  requestIdentity: string | undefined;
  originatingIdentity: OriginatingIdentity | undefined;
  /** From Service Fabrik's routes `/<platform>[/region/<region>]/v2`; undefined on `/v2`. */
  platform?: Platform;
  region?: string;
  /**
   * Fires when the connection closes before the answer was sent: the platform gave up (its
   * timeout). A provision or bind not committed by then commits nothing (ADR 0034).
   */
  abandoned?: AbortSignal;
}

/** A Kubernetes label value, as Service Fabrik checked the region it put in one. */
const LABEL_VALUE = /^(?:[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)$/;

/**
 * The `:platform` and `:region` of Service Fabrik's routes: an unknown platform is a route that
 * does not exist (404); a region that is not a label value is refused (400), as Service Fabrik did.
 */
export const platformPath: RequestHandler = (req, res, next) => {
  const { platform, region } = req.params as { platform?: string; region?: string };
  if (platform !== undefined && !(PLATFORMS as readonly string[]).includes(platform)) {
    next(
      new NotFoundError(
        `no platform ${JSON.stringify(platform)} in ${req.baseUrl}: the OSB API is served at /v2 and at /<platform>/v2 and ` +
          `/<platform>/region/<region>/v2 for the platforms ${PLATFORMS.join(", ")}`,
      ),
    );
    return;
  }
  if (region !== undefined && !LABEL_VALUE.test(region)) {
    next(new BadRequestError(`region ${JSON.stringify(region)} in ${req.baseUrl} must be a valid label value (at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit)`));
    return;
  }
  res.locals.platform = platform;
  res.locals.region = region;
  next();
};

/** Echo X-Broker-API-Request-Identity on every response, errors included (runs before auth). */
export const echoRequestIdentity: RequestHandler = (req, res, next) => {
  const id = req.get(REQUEST_IDENTITY);
  if (id) res.setHeader("X-Broker-API-Request-Identity", id);
  next();
};

function parseVersion(value: string | undefined): ApiVersion | null {
  const m = /^\s*(\d+)\.(\d+)\s*$/.exec(value ?? "");
  return m ? { major: Number(m[1]), minor: Number(m[2]) } : null;
}

export function decodeOriginatingIdentity(header: string): OriginatingIdentity {
  const m = /^\s*(\S+)\s+(\S+)\s*$/.exec(header);
  if (!m?.[1] || !m[2]) {
    throw new BadRequestError("X-Broker-API-Originating-Identity must be \"<platform> <base64 JSON object>\"");
  }
  let value: unknown;
  const text = Buffer.from(m[2], "base64").toString("utf8");
  if (jsonDepthExceeds(text)) {
    throw new BadRequestError(`X-Broker-API-Originating-Identity value is nested deeper than ${MAX_JSON_DEPTH} levels`);
  }
  try {
    value = JSON.parse(text);
  } catch (e) {
    throw new BadRequestError("X-Broker-API-Originating-Identity value is not base64-encoded JSON", { cause: e });
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new BadRequestError("X-Broker-API-Originating-Identity value must encode a JSON object");
  }
  return { platform: m[1], value: value as Record<string, unknown> };
}

/** 412 unless X-Broker-API-Version is 2.13 or newer (2.x); decodes the identity headers. */
export const osbHeaders: RequestHandler = (req, res, next) => {
  const raw = req.get(VERSION_HEADER);
  const version = parseVersion(raw);
  // Every refusal names the range, so a platform operator sees what to configure.
  const supported = `supported: ${fmt(MIN_API_VERSION)} to ${fmt(MAX_API_VERSION)}, and newer 2.x as ${fmt(MAX_API_VERSION)}`;
  if (!version) {
    next(
      new PreconditionFailedError(
        raw === undefined
          ? `X-Broker-API-Version header is required (${supported})`
          : `X-Broker-API-Version ${JSON.stringify(raw)} is not MAJOR.MINOR (${supported})`,
      ),
    );
    return;
  }
  if (version.major !== MIN_API_VERSION.major || version.minor < MIN_API_VERSION.minor) {
    next(new PreconditionFailedError(`X-Broker-API-Version ${fmt(version)} is not supported (${supported})`));
    return;
  }
  const originating = req.get(ORIGINATING_IDENTITY);
  try {
    const info: OsbRequestInfo = {
      // A newer 2.x platform gets the newest behaviour we know.
      apiVersion: version.minor > MAX_API_VERSION.minor ? MAX_API_VERSION : version,
      requestIdentity: req.get(REQUEST_IDENTITY) || undefined,
      originatingIdentity: originating ? decodeOriginatingIdentity(originating) : undefined,
      ...(res.locals.platform ? { platform: res.locals.platform as Platform } : {}),
      ...(res.locals.region ? { region: res.locals.region as string } : {}),
      abandoned: abandonSignal(res),
    };
    res.locals.osb = info;
    next();
  } catch (e) {
    next(e);
  }
};

/** An AbortSignal that fires when `res`'s connection closes before the answer was sent. */
function abandonSignal(res: Response): AbortSignal {
  const controller = new AbortController();
  res.on("close", () => {
    if (!res.writableFinished) controller.abort();
  });
  return controller.signal;
}

function fmt(v: ApiVersion): string {
  return `${v.major}.${v.minor}`;
}
