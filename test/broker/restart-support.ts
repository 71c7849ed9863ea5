import { rm } from "node:fs/promises";
import path from "node:path";
import { Writable } from "node:stream";
import { startBroker, type RunningBroker } from "../../src/cli/serve.js";
import type { Config } from "../../src/config/index.js";
import { createLogger } from "../../src/log/index.js";
import { CREDENTIALS, testConfig } from "../support/broker-harness.js";
import { createBareRemote, createTempDir } from "../support/git-fixtures.js";
import { startGitHttpServer, type GitHttpServer } from "../support/git-http-server.js";
import { osbClient, type OsbClient } from "../support/osb-client.js";
import { remoteHead } from "./helpers.js";

/**
 * One broker that is stopped and started again on the same data directory and the same remote
 * (a bare repository served over smart HTTP on loopback): a real restart, with the log of every
 * start captured as parsed JSON lines.
 */
export interface Restartable {
  root: string;
  remoteDir: string;
  /** The commit that seeded the remote. */
  seeded: string;
  /** The running broker, if any. */
  broker: RunningBroker | undefined;
  /** Log lines of all starts so far. */
  logLines: Record<string, unknown>[];
  start(configure?: (config: Config) => void): Promise<{ broker: RunningBroker; osb: OsbClient }>;
  stop(): Promise<void>;
  /** Stop the broker and the remote, remove the files. */
  close(): Promise<void>;
}

export async function restartable(files: Record<string, string>): Promise<Restartable> {
  const root = await createTempDir("gitops-broker-restart-");
  const remotes = path.join(root, "remotes");
  const remoteDir = await createBareRemote(remotes, "remote.git", files);
  const seeded = await remoteHead(remoteDir);
  let git: GitHttpServer | undefined;
  try {
    git = await startGitHttpServer({ root: remotes });
  } catch (e) {
    await rm(root, { recursive: true, force: true });
    throw e;
  }
  const server = git;
  const r: Restartable = {
    root,
    remoteDir,
    seeded,
    broker: undefined,
    logLines: [],
    async start(configure) {
      const config = testConfig(root, "broker-1", server.url("remote.git"));
      configure?.(config);
      const sink = new Writable({
        write(chunk: Buffer, _encoding, done) {
          for (const line of chunk.toString("utf8").split("\n")) if (line) r.logLines.push(JSON.parse(line) as Record<string, unknown>);
          done();
        },
      });
      const broker = await startBroker(config, { version: "test", logger: createLogger({ level: "info", destination: sink }) });
      r.broker = broker;
      return { broker, osb: osbClient(broker.url, CREDENTIALS) };
    },
    async stop() {
      const broker = r.broker;
      r.broker = undefined;
      await broker?.close();
    },
    async close() {
      try {
        await r.stop();
      } finally {
        await server.close();
        await rm(root, { recursive: true, force: true });
      }
    },
  };
  return r;
}
