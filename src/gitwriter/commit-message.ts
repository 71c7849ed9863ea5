import { InvalidArgumentError } from "../errors/index.js";
import type { CommitSpec } from "./types.js";

const TRAILER_KEY = /^[A-Za-z0-9][A-Za-z0-9-]*$/;

/** `subject`, blank line, body (if any), blank line, `Key: value` trailers (if any). */
export function formatCommitMessage(spec: CommitSpec): string {
  const subject = spec.subject.trim();
  if (subject === "" || subject.includes("\n")) {
    throw new InvalidArgumentError(`commit subject must be one non-empty line, got ${JSON.stringify(spec.subject)}`);
  }
  const paragraphs = [subject];
  const body = spec.body?.trim() ?? "";
  if (body !== "") paragraphs.push(body);
  const trailers = Object.entries(spec.trailers).flatMap(([key, values]) => {
    if (!TRAILER_KEY.test(key)) throw new InvalidArgumentError(`invalid commit trailer key ${JSON.stringify(key)}`);
    // A list is the key repeated, one line per value, in order.
    return (typeof values === "string" ? [values] : values).map((value) => {
      if (/[\r\n]/.test(value)) throw new InvalidArgumentError(`commit trailer ${key} must be one line`);
      return `${key}: ${value}`;
    });
  });
  if (trailers.length > 0) paragraphs.push(trailers.join("\n"));
  return `${paragraphs.join("\n\n")}\n`;
}

/**
 * The trailers of a message's trailer block as `git log --format=%(trailers:only,unfold)` prints
 * them (one `Key: value` per line): the inverse of formatCommitMessage's last paragraph. A key
 * that occurs once maps to its value, a repeated one to its values in order.
 */
export function parseTrailers(text: string): Record<string, string | string[]> {
  const trailers: Record<string, string | string[]> = {};
  for (const line of text.split("\n")) {
    const colon = line.indexOf(": ");
    if (colon <= 0) continue;
    const key = line.slice(0, colon);
    const value = line.slice(colon + 2);
    const before = trailers[key];
    trailers[key] = before === undefined ? value : typeof before === "string" ? [before, value] : [...before, value];
  }
  return trailers;
}
