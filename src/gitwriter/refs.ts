import { randomBytes } from "node:crypto";
import { promises as fsp } from "node:fs";
import path from "node:path";
import { GitRepositoryError, InvalidArgumentError } from "../errors/index.js";

/**
 * The two refs the writer keeps (its branch, and the remote-tracking ref `git fetch` updates),
 * read and written as git stores them: a loose file `<gitdir>/<ref>` holding the object id, else
 * a line `<oid> <ref>` of `packed-refs` (where `git gc` or a clone puts them). Writes replace the
 * file atomically (temp file in the same directory, then rename), so a kill -9 never leaves a
 * truncated ref. Temp names end in `.lock`, which git never reads as a ref.
 */

const OID = /^[0-9a-f]{40}$/;

function isMissing(error: unknown): boolean {
  return (error as NodeJS.ErrnoException).code === "ENOENT";
}

async function readOrNull(file: string): Promise<string | null> {
  try {
    return await fsp.readFile(file, "utf8");
  } catch (error) {
    if (isMissing(error)) return null;
    throw error;
  }
}

async function writeAtomically(file: string, content: string): Promise<void> {
  await fsp.mkdir(path.dirname(file), { recursive: true });
  const tmp = path.join(path.dirname(file), `tmp_ref_${randomBytes(8).toString("hex")}.lock`);
  try {
    await fsp.writeFile(tmp, content);
    await fsp.rename(tmp, file);
  } catch (error) {
    await fsp.rm(tmp, { force: true });
    throw error;
  }
}

/** The packed-refs lines naming `ref` (its line and the `^<peeled>` line after it). */
function packedLines(lines: string[], ref: string): number[] {
  const i = lines.findIndex((l) => l.slice(41) === ref && OID.test(l.slice(0, 40)));
  if (i === -1) return [];
  return lines[i + 1]?.startsWith("^") ? [i, i + 1] : [i];
}

/** The object id `ref` (a full name, `refs/...`) points at; null when there is no such ref. */
export async function readRef(gitdir: string, ref: string): Promise<string | null> {
  const loose = await readOrNull(path.join(gitdir, ref));
  if (loose !== null) {
    const oid = loose.trim();
    if (!OID.test(oid)) throw new GitRepositoryError(`ref ${ref} holds ${JSON.stringify(oid.slice(0, 80))}, not an object id`);
    return oid;
  }
  const packed = await readOrNull(path.join(gitdir, "packed-refs"));
  if (packed === null) return null;
  const lines = packed.split("\n");
  const [at] = packedLines(lines, ref);
  return at === undefined ? null : lines[at]!.slice(0, 40);
}

/** Points `ref` at `oid`, or deletes it (loose and packed) for null. */
export async function writeRef(gitdir: string, ref: string, oid: string | null): Promise<void> {
  if (oid !== null) {
    if (!OID.test(oid)) throw new InvalidArgumentError(`not an object id: ${JSON.stringify(oid)}`);
    await writeAtomically(path.join(gitdir, ref), `${oid}\n`);
    return;
  }
  await fsp.rm(path.join(gitdir, ref), { force: true });
  const file = path.join(gitdir, "packed-refs");
  const packed = await readOrNull(file);
  if (packed === null) return;
  const lines = packed.split("\n");
  const drop = new Set(packedLines(lines, ref));
  if (drop.size > 0) await writeAtomically(file, lines.filter((_, i) => !drop.has(i)).join("\n"));
}
