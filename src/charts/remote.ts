import { createHash, randomBytes } from "node:crypto";
import { mkdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { ChartError } from "../errors/index.js";

/** Downloads `url`; rejects on a transport error or a non-2xx answer. */
export type ChartDownloader = (url: string, signal: AbortSignal) => Promise<Uint8Array>;

const DIGEST = /^sha256:([0-9a-f]{64})$/;

/** The cache's directory inside the broker's data directory. */
export const CHART_CACHE_DIR = "charts";

/** The hex of a `sha256:<64 hex>` digest, or undefined when it is not one. */
export function digestHex(digest: string): string | undefined {
  return DIGEST.exec(digest)?.[1];
}

export function sha256Hex(data: Uint8Array): string {
  return createHash("sha256").update(data).digest("hex");
}

/** Refuses a download past this size (Helm refuses charts that unpack past 100 MiB). */
const MAX_DOWNLOAD = 100 * 1024 * 1024;

export const fetchDownloader: ChartDownloader = async (url, signal) => {
  const res = await fetch(url, { signal, redirect: "follow" });
  if (!res.ok) throw new ChartError(`GET ${url}: HTTP ${res.status}`);
  const length = Number(res.headers.get("content-length") ?? "0");
  if (length > MAX_DOWNLOAD) throw new ChartError(`GET ${url}: ${length} bytes is more than ${MAX_DOWNLOAD}`);
  const data = new Uint8Array(await res.arrayBuffer());
  if (data.length > MAX_DOWNLOAD) throw new ChartError(`GET ${url}: more than ${MAX_DOWNLOAD} bytes`);
  return data;
};

export interface RemoteChartsOptions {
  /** Cache directory (inside the data directory); files are named by digest. */
  dir: string;
  download?: ChartDownloader;
  timeoutMs?: number;
}

/**
 * Remote chart archives pinned by digest, cached on disk by digest. `ensure` (catalog load) may
 * download; `get` (a render) only reads the cache, so a provision never waits on the network.
 */
export class RemoteCharts {
  readonly #dir: string;
  readonly #download: ChartDownloader;
  readonly #timeoutMs: number;
  readonly #memory = new Map<string, Uint8Array>();

  constructor(options: RemoteChartsOptions) {
    this.#dir = options.dir;
    this.#download = options.download ?? fetchDownloader;
    this.#timeoutMs = options.timeoutMs ?? 60_000;
  }

  /** The cached archive of `digest` (verified), or null. Never touches the network. */
  async get(digest: string): Promise<Uint8Array | null> {
    const hex = digestHex(digest);
    if (hex === undefined) return null;
    const hit = this.#memory.get(hex);
    if (hit !== undefined) return hit;
    const data = await readFile(this.#path(hex)).then((b) => new Uint8Array(b), () => null);
    if (data === null || sha256Hex(data) !== hex) return null;
    this.#memory.set(hex, data);
    return data;
  }

  /**
   * The archive of `digest`: from the cache, else downloaded from `url`, verified and stored.
   * Throws a ChartError whose message says what is wrong (bad digest, download failed, mismatch).
   */
  async ensure(url: string, digest: string): Promise<Uint8Array> {
    const hex = digestHex(digest);
    if (hex === undefined) throw new ChartError(`digest ${JSON.stringify(digest)} is not sha256:<64 lowercase hex digits>`);
    const cached = await this.get(digest);
    if (cached !== null) return cached;
    let data: Uint8Array;
    try {
      data = await this.#download(url, AbortSignal.timeout(this.#timeoutMs));
    } catch (e) {
      throw new ChartError(`cannot download chart ${url}: ${e instanceof Error ? e.message : String(e)}`, { cause: e });
    }
    const got = sha256Hex(data);
    if (got !== hex) throw new ChartError(`chart ${url} has digest sha256:${got}, the plan pins ${digest}`);
    await mkdir(this.#dir, { recursive: true });
    const tmp = join(this.#dir, `.${hex}.${randomBytes(6).toString("hex")}.tmp`);
    try {
      await writeFile(tmp, data);
      await rename(tmp, this.#path(hex));
    } finally {
      await rm(tmp, { force: true });
    }
    this.#memory.set(hex, data);
    return data;
  }

  #path(hex: string): string {
    return join(this.#dir, `sha256-${hex}.tgz`);
  }
}
