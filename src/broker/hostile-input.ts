import {
  BadRequestError,
  BaseError,
  OsbError,
  PayloadTooLargeError,
  UnsupportedMediaTypeError,
} from "../errors/index.js";

/**
 * Limits on what a client sends, checked before anything recursive (JSON parser, YAML writer,
 * canonical comparison) sees it, and the mapping of body-reading failures to OSB errors. The
 * limits are documented in README.md (Operating it) and ADR 0013.
 */

/** Objects and arrays nested deeper than this are refused (the body itself is level 1). */
export const MAX_JSON_DEPTH = 32;

/** OSB bodies: a provision with a large `parameters` object fits many times over. */
export const OSB_BODY_LIMIT = "1mb";

export const MAX_ID_LENGTH = 255;

/**
 * The id grammar of instance_id and binding_id: 1 to 255 visible ASCII characters (`!` to `~`).
 * GUIDs (what platforms send) and every id Service Fabrik accepted in practice fit; spaces,
 * control characters and non-ASCII do not.
 */
const ID_GRAMMAR = /^[\x21-\x7e]+$/;

/** Checks an OSB id (decoded path segment); throws a 400 naming the rule it breaks. */
export function checkId(name: string, id: unknown): string {
  if (typeof id !== "string" || id.length === 0) throw new BadRequestError(`${name} is required`);
  if (id.length > MAX_ID_LENGTH) throw new BadRequestError(`${name} is longer than ${MAX_ID_LENGTH} characters`);
  if (!ID_GRAMMAR.test(id)) {
    throw new BadRequestError(
      `${name} must consist of visible ASCII characters (! to ~): no spaces, control characters or non-ASCII`,
    );
  }
  return id;
}

/**
 * Depth of the deepest object/array of a JSON text, counted on the bytes without parsing (so a
 * hostile body never reaches a recursive consumer); stops counting once `limit` is exceeded.
 * Brackets inside strings do not count. Not a validator: the JSON parser runs afterwards.
 */
export function jsonDepthExceeds(text: Uint8Array | string, limit: number = MAX_JSON_DEPTH): boolean {
  const bytes = typeof text === "string" ? Buffer.from(text, "utf8") : text;
  let depth = 0;
  let inString = false;
  for (let i = 0; i < bytes.length; i++) {
    const c = bytes[i];
    if (inString) {
      if (c === 0x5c) i++; // backslash: skip the escaped byte
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) {
      if (++depth > limit) return true;
    } else if (c === 0x7d || c === 0x5d) depth--;
  }
  return false;
}

/** body-parser `verify` hook: refuses a body nested deeper than MAX_JSON_DEPTH before it is parsed. */
export function verifyJsonDepth(_req: unknown, _res: unknown, body: Buffer): void {
  // body-parser hands the error on as it is (it keeps the status an error has).
  if (jsonDepthExceeds(body)) throw new BadRequestError(`the request body is nested deeper than ${MAX_JSON_DEPTH} levels of objects and arrays`);
}

const ENCODINGS = "identity, gzip, deflate and br";

/**
 * Maps what the request's transport layer throws (body-parser / http-errors objects, the
 * router's URIError, zlib errors of a corrupt compressed body) to an OSB error; undefined when
 * `err` is none of those, or an error of our hierarchy (even with a status field of its own).
 */
export function requestError(err: unknown): OsbError | undefined {
  if (typeof err !== "object" || err === null || err instanceof BaseError) return undefined;
  const e = err as { type?: unknown; status?: unknown; code?: unknown; message?: unknown; name?: unknown; encoding?: unknown };
  const message = typeof e.message === "string" ? e.message : "";
  if (e.type === "encoding.unsupported") {
    const encoding = typeof e.encoding === "string" ? e.encoding : "this";
    return new UnsupportedMediaTypeError(`Content-Encoding ${JSON.stringify(encoding)} is not supported (${ENCODINGS} are)`, { cause: err });
  }
  if (e.type === "charset.unsupported") return new UnsupportedMediaTypeError(`${message}: the body must be UTF-8 JSON`, { cause: err });
  if (e.type === "entity.too.large") return new PayloadTooLargeError(`the request body is larger than the limit (${message})`, { cause: err });
  if (e.type === "entity.parse.failed") return new BadRequestError(`the request body is not valid JSON: ${message}`, { cause: err });
  if (typeof e.code === "string" && e.code.startsWith("Z_")) {
    return new BadRequestError(`the request body does not decode with its Content-Encoding: ${message}`, { cause: err });
  }
  if (e.name === "URIError" || err instanceof URIError) {
    return new BadRequestError(`the request path is not valid percent-encoded UTF-8: ${message}`, { cause: err });
  }
  const status = typeof e.status === "number" ? e.status : undefined;
  if (status === 413) return new PayloadTooLargeError(`the request body is too large: ${message}`, { cause: err });
  if (status === 415) return new UnsupportedMediaTypeError(message, { cause: err });
  if (status !== undefined && status >= 400 && status < 500) {
    return new BadRequestError(`invalid request: ${message}`, { cause: err });
  }
  return undefined;
}
