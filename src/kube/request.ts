import type { KubeConfig } from "@kubernetes/client-node";
import { InvalidArgumentError, KubeApiError } from "../errors/index.js";
import { loadClientNode, type ClientNode } from "./client-node.js";

/**
 * One request to a Kubernetes API server, as JSON of our own through client-node's HTTP library and
 * the KubeConfig's authentication (token, client certificate, exec plugin, proxy): the one place
 * where an answer becomes a value or a KubeApiError. client-node's generated clients are not used
 * for this: their deserializers drop what they do not model (a custom resource list's
 * `metadata.continue`, a MicroTime's precision), and each maps failures in its own way.
 */

export type KubeMethod = "GET" | "POST" | "PUT" | "PATCH" | "DELETE";

export interface KubeRequest {
  method: KubeMethod;
  /** An absolute path without query, e.g. `/api/v1/namespaces/ns/secrets`. */
  path: string;
  /** Query parameters; undefined ones are left out. */
  query?: Readonly<Record<string, string | number | boolean | undefined>>;
  /** Sent as JSON. */
  body?: unknown;
  /** Content-Type of the body (default application/json; a PATCH names its patch type). */
  contentType?: string;
  /**
   * Statuses besides 2xx that are answers, not failures (e.g. 404 for "there is none", 409 for
   * "someone else wrote first"): the request resolves with them.
   */
  answers?: readonly number[];
  /** Ends the request early (the caller's deadline); it then rejects with a KubeApiError. */
  signal?: AbortSignal;
  /** No answer (head and body) within this long fails (default: the API's timeout). */
  timeoutMs?: number;
  /** What the request is, for messages (default `METHOD path`). */
  what?: string;
}

export interface KubeResponse<T = unknown> {
  status: number;
  /** The JSON answer; undefined when the answer had no body. */
  body: T;
  headers: Readonly<Record<string, string>>;
}

/** A Kubernetes Status, as a failed request's body or an ERROR watch event carries it. */
export interface KubeStatus {
  code?: number;
  reason?: string;
  message?: string;
  details?: { retryAfterSeconds?: number; [key: string]: unknown };
}

export interface KubeApi {
  /** The API server's URL, for messages. */
  readonly server: string;
  /**
   * Sends one request. Resolves with a 2xx or an `answers` status; rejects with a KubeApiError for
   * every other outcome: an HTTP status (with the Status's reason and message, and Retry-After),
   * no connection, no answer within the timeout, an abort, an answer that is not JSON.
   */
  request<T = unknown>(request: KubeRequest): Promise<KubeResponse<T>>;
}

export interface KubeApiOptions {
  kubeConfig: KubeConfig;
  /** Prefixes every message, e.g. `cluster east`. */
  label?: string;
  /** Default timeout of a request (30 s): a hung API server must not hold its caller for ever. */
  timeoutMs?: number;
  /** Loads @kubernetes/client-node (default: once per process, on the first request). */
  clientNode?: () => Promise<ClientNode>;
}

const DEFAULT_TIMEOUT_MS = 30_000;

/** The API of the KubeConfig's current cluster. Throws KubeApiError when it has none. */
export function createKubeApi(options: KubeApiOptions): KubeApi {
  const { kubeConfig } = options;
  const server = kubeConfig.getCurrentCluster()?.server;
  const prefix = options.label === undefined ? "" : `${options.label}: `;
  if (server === undefined) throw new KubeApiError(`${prefix}the kubeconfig has no current cluster`);
  const load = options.clientNode ?? loadClientNode;
  const defaultTimeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  let http: InstanceType<ClientNode["IsomorphicFetchHttpLibrary"]> | undefined;

  async function request<T>(req: KubeRequest): Promise<KubeResponse<T>> {
    if (!req.path.startsWith("/") || req.path.includes("?")) throw new InvalidArgumentError(`a Kubernetes API path must be absolute and without query: ${req.path}`);
    const what = `${prefix}${req.what ?? `${req.method} ${req.path}`}`;
    const timeoutMs = req.timeoutMs ?? defaultTimeoutMs;
    const timeout = AbortSignal.timeout(timeoutMs);
    const signal = req.signal === undefined ? timeout : AbortSignal.any([req.signal, timeout]);
    const k8s = await load();
    http ??= new k8s.IsomorphicFetchHttpLibrary();
    const context = new k8s.RequestContext(`${server}${req.path}`, k8s.HttpMethod[req.method]);
    context.setHeaderParam("Accept", "application/json");
    for (const [key, value] of Object.entries(req.query ?? {})) if (value !== undefined) context.setQueryParam(key, String(value));
    if (req.body !== undefined) {
      context.setHeaderParam("Content-Type", req.contentType ?? "application/json");
      context.setBody(JSON.stringify(req.body));
    }
    context.setSignal(signal);
    let status: number;
    let headers: Record<string, string>;
    let text: string;
    try {
      await kubeConfig.applySecurityAuthentication(context);
    } catch (error) {
      throw new KubeApiError(`${what}: cannot authenticate with the kubeconfig: ${messageOf(error)}`, {}, { cause: error });
    }
    try {
      const response = await http.send(context).toPromise();
      status = response.httpStatusCode;
      headers = response.headers;
      text = await response.body.text();
    } catch (error) {
      if (timeout.aborted) throw new KubeApiError(`${what}: no answer within ${timeoutMs / 1000} s`, {}, { cause: error });
      if (req.signal?.aborted) throw new KubeApiError(`${what}: aborted`, {}, { cause: req.signal.reason ?? error });
      throw new KubeApiError(`${what}: no answer from the API server (${server}): ${messageOf(error)}`, {}, { cause: error });
    }
    const answered = (status >= 200 && status < 300) || req.answers?.includes(status) === true;
    if (!answered) throw statusError(what, status, text, headers["retry-after"]);
    if (text === "") return { status, headers, body: undefined as T };
    try {
      return { status, headers, body: JSON.parse(text) as T };
    } catch (error) {
      throw new KubeApiError(`${what}: HTTP ${status}, but the answer is not JSON`, { status }, { cause: error });
    }
  }

  return { server, request };
}

/**
 * A failed request's error: `<what>: HTTP <code>: <the Status's message>`, its reason, and the
 * wait the server asked for (Retry-After, else the Status's details.retryAfterSeconds).
 */
export function statusError(what: string, code: number, body: string, retryAfter: string | undefined): KubeApiError {
  let parsed: KubeStatus = {};
  try {
    const json = JSON.parse(body) as unknown;
    if (typeof json === "object" && json !== null) parsed = json;
  } catch {
    // Not a Status (e.g. a proxy's HTML page): the HTTP status says enough.
  }
  const retryAfterMs = retryAfterMsOf(retryAfter) ?? secondsToMs(parsed.details?.retryAfterSeconds);
  const message = typeof parsed.message === "string" && parsed.message !== "" ? `: ${parsed.message}` : "";
  return new KubeApiError(`${what}: HTTP ${code}${message}`, {
    status: code,
    ...(typeof parsed.reason === "string" && parsed.reason !== "" ? { reason: parsed.reason } : {}),
    ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
  });
}

/** Retry-After in seconds (what kube-apiserver sends) or as an HTTP date. */
function retryAfterMsOf(header: string | undefined): number | undefined {
  if (header === undefined || header.trim() === "") return undefined;
  const seconds = secondsToMs(Number(header));
  if (seconds !== undefined) return seconds;
  const at = Date.parse(header);
  return Number.isFinite(at) ? Math.max(0, at - Date.now()) : undefined;
}

function secondsToMs(seconds: unknown): number | undefined {
  return typeof seconds === "number" && Number.isFinite(seconds) && seconds >= 0 ? seconds * 1000 : undefined;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
