/**
 * Child process of crash.test.ts: a writer submitting operations until it is killed.
 * Operation n writes `crash/<run>-<n>.txt`; `ack <n> <commit>` is printed once it is acknowledged.
 * Usage: crash-child.ts <gitdir> <remoteUrl> <run>
 */
import { createGitWriter } from "../index.js";

const [gitdir = "", remoteUrl = "", run = ""] = process.argv.slice(2);
const noop = (): void => {};
const writer = createGitWriter({
  gitdir,
  remoteUrl,
  branch: "main",
  author: { name: "crash", email: "crash@example.com" },
  logger: { debug: noop, info: noop, warn: noop, error: noop },
});
await writer.start();

let next = 0;
async function submitForever(): Promise<never> {
  for (;;) {
    const n = next++;
    const { commit } = await writer.submit(async (draft) => {
      draft.write(`crash/${run}-${n}.txt`, `${n}\n`);
      return { commit: { subject: `op ${n}`, trailers: {} }, result: n };
    });
    process.stdout.write(`ack ${n} ${commit}\n`);
  }
}
// Several in flight, so a kill lands with operations at every stage.
await Promise.all([submitForever(), submitForever(), submitForever(), submitForever()]);
