/**
 * Kubernetes access (ADR 0030): the one place that talks to a cluster's API server, for the status
 * watcher, leader election, the Service Fabrik import and the nudges. @kubernetes/client-node is
 * loaded on first use (client-node.ts); requests are JSON of our own through its HTTP library and
 * the KubeConfig's authentication, every failure a KubeApiError (request.ts); a list follows
 * `continue` to its last page (list.ts); discovery finds a kind's collection (discovery.ts); a
 * watch cache's list and watch (list-watch.ts); kubeconfigs and Secrets the registry refers to
 * (kubeconfig.ts).
 */
export { clientNodeLoader, loadClientNode } from "./client-node.js";
export type { ClientNode } from "./client-node.js";
export { createKubeApi, statusError } from "./request.js";
export type { KubeApi, KubeApiOptions, KubeMethod, KubeRequest, KubeResponse, KubeStatus } from "./request.js";
export { DEFAULT_PAGE_SIZE, listAll } from "./list.js";
export type { KeepOption, ListOptions, ObjectList } from "./list.js";
export { collectionPath, createDiscovery, createResourceFinder, objectPath } from "./discovery.js";
export type { Discover, FindResource, ResourceInfo } from "./discovery.js";
export { clientNodeListWatch } from "./list-watch.js";
export type { ClientNodeListWatchOptions, ListResult, ListWatchTransport, WatchHandle } from "./list-watch.js";
export { brokerNamespace, createKubeConfigResolver, createSecretKeyReader } from "./kubeconfig.js";
export type { KubeConfigFor, KubeConfigResolverOptions, SecretKeyReader, SecretKeyRef } from "./kubeconfig.js";
