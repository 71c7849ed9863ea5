import { createHmac } from "node:crypto";
import type { PushedCommit } from "../gitwriter/index.js";

/** What one nudge of one cluster reports: the range pushed since its last nudge, its commits. */
export interface NudgeRange {
  /** The store pushed to (ADR 0027); undefined: the broker's git remote. */
  store?: string;
  branch: string;
  /** The remote tip before the first push folded in (null: that push created the branch). */
  previous: string | null;
  tip: string;
  /** The commits that touched the cluster's directory, oldest first, with their paths under it. */
  commits: PushedCommit[];
}

const ZERO_SHA = "0000000000000000000000000000000000000000";

/** How a repository is named in a Git host's push event. */
export interface RepositoryNames {
  /** The web address: Argo CD matches its host and path against each Application's repoURL. */
  htmlUrl: string;
  cloneUrl: string;
  fullName: string;
  name: string;
}

/**
 * The names of a Git remote as a Git host would send them. Credentials in the URL are dropped
 * (the event goes to another system); scp-like and ssh:// remotes get the https web address
 * (what GitHub sends as html_url). A local path stays as it is: no agent can match it anyway.
 */
export function repositoryNames(remote: string): RepositoryNames {
  let web: URL | undefined;
  const scp = /^(?:[^@/]+@)?([^:/]+):(?!\/)(.+)$/.exec(remote);
  if (scp && !/^[a-z][a-z0-9+.-]*:\/\//i.test(remote)) {
    web = new URL(`https://${scp[1]}/${scp[2]}`);
  } else {
    try {
      const url = new URL(remote);
      if (url.protocol === "ssh:" || url.protocol === "git:") web = new URL(`https://${url.hostname}${url.pathname}`);
      else if (url.protocol === "http:" || url.protocol === "https:") web = new URL(`${url.protocol}//${url.host}${url.pathname}`);
    } catch {
      web = undefined;
    }
  }
  if (web === undefined) {
    const name = remote.replace(/\/+$/, "").split("/").pop()!.replace(/\.git$/, "");
    return { htmlUrl: remote, cloneUrl: remote, fullName: name, name };
  }
  const path = web.pathname.replace(/\/+$/, "").replace(/\.git$/, "");
  const htmlUrl = `${web.protocol}//${web.host}${path}`;
  const fullName = path.replace(/^\//, "");
  return { htmlUrl, cloneUrl: `${htmlUrl}.git`, fullName, name: fullName.split("/").pop() ?? fullName };
}

/**
 * A GitHub `push` event (https://docs.github.com/webhooks/webhook-events-and-payloads#push) for
 * `range`. Argo CD's /api/webhook reads repository.html_url, ref, before, after,
 * repository.default_branch and commits[].added/modified/removed (changed files, for
 * `argocd.argoproj.io/manifest-generate-paths`); a Flux Receiver of type github checks the
 * signature and the event name only. Every changed path is reported under `modified`: the
 * writer knows what an operation edited, not whether each file was new, and Argo CD reads the
 * three lists alike.
 */
export function githubPushEvent(range: NudgeRange, repository: RepositoryNames, pusher: string): Record<string, unknown> {
  const commits = range.commits.map((c) => ({
    id: c.commit,
    distinct: true,
    url: `${repository.htmlUrl}/commit/${c.commit}`,
    added: [] as string[],
    removed: [] as string[],
    modified: c.paths,
  }));
  return {
    ref: `refs/heads/${range.branch}`,
    before: range.previous ?? ZERO_SHA,
    after: range.tip,
    created: range.previous === null,
    deleted: false,
    forced: false,
    compare: `${repository.htmlUrl}/compare/${(range.previous ?? ZERO_SHA).slice(0, 12)}...${range.tip.slice(0, 12)}`,
    repository: {
      name: repository.name,
      full_name: repository.fullName,
      html_url: repository.htmlUrl,
      clone_url: repository.cloneUrl,
      url: repository.htmlUrl,
      default_branch: range.branch,
      master_branch: range.branch,
    },
    pusher: { name: pusher },
    sender: { login: pusher },
    commits,
    head_commit: commits.at(-1) ?? null,
  };
}

/** `sha256=<hex HMAC-SHA256 of body>`: GitHub's X-Hub-Signature-256, Flux generic-hmac's X-Signature. */
export function sha256Signature(secret: string | Buffer, body: string | Buffer): string {
  return `sha256=${createHmac("sha256", secret).update(body).digest("hex")}`;
}
