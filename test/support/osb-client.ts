/**
 * A small OSB client for tests: real HTTP against a running broker, basic auth and the
 * X-Broker-API-Version header set unless a test overrides them.
 */

export interface OsbReply {
  status: number;
  body: Record<string, unknown>;
  headers: Headers;
}

export interface OsbCallOptions {
  query?: Record<string, string>;
  headers?: Record<string, string>;
  /** Raw body text (skips JSON encoding). */
  raw?: string;
  /** false: send no Authorization header. */
  auth?: boolean;
  /** Override X-Broker-API-Version (null: omit). */
  version?: string | null;
  /** Aborts the request (a platform that gives up: its timeout); the call then rejects with an AbortError. */
  signal?: AbortSignal;
}

export interface OsbClient {
  /** Where the client sends OSB requests: `/v2` by default, or e.g. `/cf/region/eu10/v2`. */
  base: string;
  call(method: string, path: string, body?: unknown, options?: OsbCallOptions): Promise<OsbReply>;
  catalog(options?: OsbCallOptions): Promise<OsbReply>;
  provision(instanceId: string, body: unknown, options?: OsbCallOptions): Promise<OsbReply>;
  update(instanceId: string, body: unknown, options?: OsbCallOptions): Promise<OsbReply>;
  deprovision(instanceId: string, query: Record<string, string>, options?: OsbCallOptions): Promise<OsbReply>;
  lastOperation(instanceId: string, query?: Record<string, string>): Promise<OsbReply>;
  getInstance(instanceId: string, options?: OsbCallOptions): Promise<OsbReply>;
  bind(instanceId: string, bindingId: string, body: unknown, options?: OsbCallOptions): Promise<OsbReply>;
  unbind(instanceId: string, bindingId: string, query: Record<string, string>, options?: OsbCallOptions): Promise<OsbReply>;
  bindingLastOperation(instanceId: string, bindingId: string, query?: Record<string, string>): Promise<OsbReply>;
  getBinding(instanceId: string, bindingId: string, options?: OsbCallOptions): Promise<OsbReply>;
}

/** The OSB bases the broker serves (Service Fabrik's platform routes beside /v2), for tests run over each. */
export const OSB_BASES = ["/v2", "/cf/v2", "/k8s/v2", "/sm/v2", "/cf/region/eu10/v2", "/k8s/region/eu10/v2", "/sm/region/eu10/v2"];

export function osbClient(baseUrl: string, credentials: { username: string; password: string }, base = "/v2"): OsbClient {
  const authHeader = `Basic ${Buffer.from(`${credentials.username}:${credentials.password}`).toString("base64")}`;

  async function call(method: string, path: string, body?: unknown, options: OsbCallOptions = {}): Promise<OsbReply> {
    const url = new URL(path, baseUrl);
    for (const [k, v] of Object.entries(options.query ?? {})) url.searchParams.set(k, v);
    const headers: Record<string, string> = { ...options.headers };
    if (options.auth !== false) headers.authorization = authHeader;
    if (options.version !== null) headers["x-broker-api-version"] = options.version ?? "2.17";
    let payload: string | undefined;
    if (options.raw !== undefined) payload = options.raw;
    else if (body !== undefined) payload = JSON.stringify(body);
    if (payload !== undefined && headers["content-type"] === undefined) headers["content-type"] = "application/json";
    const res = await fetch(url, { method, headers, ...(payload !== undefined ? { body: payload } : {}), ...(options.signal ? { signal: options.signal } : {}) });
    const text = await res.text();
    let parsed: Record<string, unknown> = {};
    if (text) {
      try {
        parsed = JSON.parse(text) as Record<string, unknown>;
      } catch {
        parsed = { __text: text };
      }
    }
    return { status: res.status, body: parsed, headers: res.headers };
  }

  const inst = (id: string) => `${base}/service_instances/${encodeURIComponent(id)}`;
  const bnd = (id: string, b: string) => `${inst(id)}/service_bindings/${encodeURIComponent(b)}`;
  return {
    base,
    call,
    catalog: (o) => call("GET", `${base}/catalog`, undefined, o),
    provision: (id, body, o) => call("PUT", inst(id), body, o),
    update: (id, body, o) => call("PATCH", inst(id), body, o),
    deprovision: (id, query, o) => call("DELETE", inst(id), undefined, { ...o, query: { ...query, ...o?.query } }),
    lastOperation: (id, query) => call("GET", `${inst(id)}/last_operation`, undefined, query ? { query } : {}),
    getInstance: (id, o) => call("GET", inst(id), undefined, o),
    bind: (id, b, body, o) => call("PUT", bnd(id, b), body, o),
    unbind: (id, b, query, o) => call("DELETE", bnd(id, b), undefined, { ...o, query: { ...query, ...o?.query } }),
    bindingLastOperation: (id, b, query) => call("GET", `${bnd(id, b)}/last_operation`, undefined, query ? { query } : {}),
    getBinding: (id, b, o) => call("GET", bnd(id, b), undefined, o),
  };
}
