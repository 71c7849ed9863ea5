/**
 * A src/kube KubeApi that records its requests and runs `after(n)` once the n-th one (from 1) was
 * answered: where a test injects a fault between two pages of a list (a write, a compaction).
 */
import type { KubeApi, KubeRequest } from "../../src/kube/index.js";

export function tappedKubeApi(api: KubeApi, after: (n: number) => void | Promise<void> = () => undefined): KubeApi & { requests: KubeRequest[] } {
  const requests: KubeRequest[] = [];
  return {
    server: api.server,
    requests,
    async request<T>(request: KubeRequest) {
      requests.push(request);
      const response = await api.request<T>(request);
      await after(requests.length);
      return response;
    },
  };
}
