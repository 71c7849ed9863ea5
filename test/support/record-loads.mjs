// node --import <this file> ...: appends the URL of every module the process loads (ESM and
// CommonJS loaded through import) to the file named by RECORD_LOADS_FILE, one per line, before it
// is loaded. The same file is both the --import entry (main thread: registers the hooks) and the
// hooks module (the loader thread: records).
import { appendFileSync } from "node:fs";
import { register } from "node:module";
import { isMainThread } from "node:worker_threads";

let file;

export function initialize(data) {
  file = data.file;
}

export async function load(url, context, nextLoad) {
  appendFileSync(file, `${url}\n`);
  return nextLoad(url, context);
}

if (isMainThread) {
  if (!process.env.RECORD_LOADS_FILE) throw new Error("record-loads.mjs: RECORD_LOADS_FILE is not set");
  register(import.meta.url, { data: { file: process.env.RECORD_LOADS_FILE } });
}
