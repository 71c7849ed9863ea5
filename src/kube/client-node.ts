import type * as ClientNodeModule from "@kubernetes/client-node";
import { KubeApiError } from "../errors/index.js";

/**
 * @kubernetes/client-node, loaded on first use. Importing it costs ~0.8 s of CPU, more than half
 * of a CLI command's start, and only live status, registry kubeconfig / Secret references and
 * annotation nudges need it: every value import of it goes through here (`import type` is free),
 * so a broker that never talks to a cluster never loads it.
 */
export type ClientNode = typeof ClientNodeModule;

/**
 * A loader of the module that imports it once (`importModule`: the dynamic import; tests pass one
 * that fails, as a broken install would). A failed import rejects with a KubeApiError, the error
 * of every other failure to talk to a cluster, where the module was first needed; the failure is
 * kept, so every later call rejects the same way.
 */
export function clientNodeLoader(importModule: () => Promise<ClientNode>): () => Promise<ClientNode> {
  let loading: Promise<ClientNode> | undefined;
  return () => {
    loading ??= importModule().catch((error: unknown) => {
      throw new KubeApiError(`cannot load @kubernetes/client-node: ${error instanceof Error ? error.message : String(error)}`, {}, { cause: error });
    });
    return loading;
  };
}

/** The broker's loader of @kubernetes/client-node. */
export const loadClientNode = clientNodeLoader(() => import("@kubernetes/client-node"));
