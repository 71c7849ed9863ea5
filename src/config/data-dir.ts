import { mkdir } from "node:fs/promises";

/** Create the data directory (and missing parents) with mode 0700; an existing one is left as it is. */
export async function ensureDataDir(dataDir: string): Promise<void> {
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
}
