import { randomBytes } from "node:crypto";
import { promises as fsp } from "node:fs";
import path from "node:path";
import type { PromiseFsClient } from "isomorphic-git";

/**
 * The node fs for isomorphic-git (which the writer uses for refs), with one change: `writeFile` is
 * atomic (temp file in the same directory, then rename). isomorphic-git writes refs in place, so
 * a kill -9 in the middle of a write would leave a truncated ref.
 *
 * Temp names end in `.lock` (a name git never reads as a ref), so a temp file orphaned by a crash
 * is harmless.
 */
export function createAtomicFs(): PromiseFsClient {
  const promises = {
    readFile: fsp.readFile,
    async writeFile(file: string, data: string | Uint8Array, options?: Parameters<typeof fsp.writeFile>[2]) {
      const tmp = path.join(path.dirname(file), `tmp_obj_${randomBytes(8).toString("hex")}.lock`);
      try {
        await fsp.writeFile(tmp, data, options);
        await fsp.rename(tmp, file);
      } catch (error) {
        await fsp.rm(tmp, { force: true });
        throw error;
      }
    },
    unlink: fsp.unlink,
    readdir: fsp.readdir,
    mkdir: fsp.mkdir,
    rmdir: fsp.rmdir,
    rm: fsp.rm,
    stat: fsp.stat,
    lstat: fsp.lstat,
    readlink: fsp.readlink,
    symlink: fsp.symlink,
    chmod: fsp.chmod,
  };
  return { promises };
}
