import { InvalidArgumentError } from "../errors/index.js";

/**
 * Repo-relative paths: `/`-separated segments, no leading `/`, no empty, `.` or `..` segment,
 * no NUL, and no `.git` segment (git refuses such trees: `git fsck --strict` flags them).
 */
export function parsePath(path: string): string[] {
  if (path === "") throw new InvalidArgumentError("path must not be empty");
  return segmentsOf(path);
}

/** Like parsePath, but "" names the root directory (no segments). */
export function parseDirPath(path: string): string[] {
  return path === "" ? [] : segmentsOf(path);
}

function segmentsOf(path: string): string[] {
  if (typeof path !== "string") throw new InvalidArgumentError(`path must be a string, got ${typeof path}`);
  if (path.startsWith("/")) throw new InvalidArgumentError(`path ${JSON.stringify(path)} must not start with "/"`);
  if (path.includes("\0")) throw new InvalidArgumentError(`path ${JSON.stringify(path)} must not contain NUL`);
  const segments = path.split("/");
  for (const segment of segments) {
    if (segment === "" || segment === "." || segment === ".." || segment.toLowerCase() === ".git") {
      throw new InvalidArgumentError(`path ${JSON.stringify(path)} has an invalid segment ${JSON.stringify(segment)}`);
    }
  }
  return segments;
}
