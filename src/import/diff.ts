/**
 * The differences between an object as the import renders it and as it is live, field by field.
 * What only the API server or Service Fabrik's provisioner set is left out (status, uid,
 * resourceVersion, owner references, finalizers ...: the hand-over removes Service Fabrik's); what
 * is left is what the first sync does to the object:
 * - `added`: rendered, not live: the sync adds it (the broker's own labels, for one);
 * - `changed`: both, with other values: the sync sets the rendered value;
 * - `live-only`: live, not rendered: Service Fabrik's merge never removed a field, so a live object
 *   may carry fields the templates no longer render. An apply leaves a field it never set; a
 *   replace (Argo CD's `Replace=true`) would drop it.
 */

export interface Difference {
  change: "added" | "changed" | "live-only";
  /** Dotted path; keys with dots or slashes in brackets: metadata.labels["app.kubernetes.io/name"]. */
  path: string;
  rendered?: unknown;
  live?: unknown;
}

const SERVER_METADATA = new Set([
  "uid",
  "resourceVersion",
  "generation",
  "creationTimestamp",
  "managedFields",
  "selfLink",
  "deletionTimestamp",
  "deletionGracePeriodSeconds",
  "ownerReferences",
  "finalizers",
  "generateName",
]);
const SERVER_ANNOTATIONS = new Set(["kubectl.kubernetes.io/last-applied-configuration"]);

const isMap = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

function join(path: string, key: string): string {
  const plain = /^[A-Za-z_][A-Za-z0-9_-]*$/.test(key);
  return plain ? (path === "" ? key : `${path}.${key}`) : `${path}[${JSON.stringify(key)}]`;
}

function same(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((x, i) => same(x, b[i]));
  if (isMap(a) && isMap(b)) {
    const ka = Object.keys(a).filter((k) => a[k] !== undefined);
    const kb = Object.keys(b).filter((k) => b[k] !== undefined);
    return ka.length === kb.length && ka.every((k) => same(a[k], b[k]));
  }
  return false;
}

function walk(rendered: unknown, live: unknown, path: string, out: Difference[]): void {
  if (isMap(rendered) && isMap(live)) {
    const keys = [...new Set([...Object.keys(rendered), ...Object.keys(live)])].sort();
    for (const key of keys) {
      const r = rendered[key];
      const l = live[key];
      const at = join(path, key);
      if (r === undefined && l === undefined) continue;
      if (r === undefined) out.push({ change: "live-only", path: at, live: l });
      else if (l === undefined) out.push({ change: "added", path: at, rendered: r });
      else walk(r, l, at, out);
    }
    return;
  }
  if (!same(rendered, live)) out.push({ change: "changed", path, rendered, live });
}

/** An object without what the comparison leaves out (status, the server's metadata), but for the metadata fields `keep` names. */
function compared(o: Record<string, unknown>, keep: ReadonlySet<string> = new Set()): Record<string, unknown> {
  const { status: _status, metadata, ...rest } = o;
  const meta = isMap(metadata) ? Object.fromEntries(Object.entries(metadata).filter(([k]) => keep.has(k) || !SERVER_METADATA.has(k))) : {};
  if (isMap(meta.annotations)) {
    const annotations = Object.fromEntries(Object.entries(meta.annotations).filter(([k]) => !SERVER_ANNOTATIONS.has(k)));
    if (Object.keys(annotations).length > 0) meta.annotations = annotations;
    else delete meta.annotations;
  }
  return { ...rest, metadata: meta };
}

const OWNER_REFERENCES = new Set(["ownerReferences"]);

/**
 * A live object as far as the import reads it once listed: what diffObject compares, and its owner
 * references (the hand-over's). Its differences are those of the object in full.
 */
export function comparedLive<T extends Record<string, unknown>>(o: T): T {
  return compared(o, OWNER_REFERENCES) as T;
}

/** The differences, sorted by path; [] when the sync changes nothing. */
export function diffObject(rendered: Record<string, unknown>, live: Record<string, unknown>): Difference[] {
  const strip = (o: Record<string, unknown>) => compared(o);
  const out: Difference[] = [];
  walk(strip(rendered), strip(live), "", out);
  return out;
}

/** One line per difference, as the plan prints it. */
export function differenceText(d: Difference): string {
  const v = (x: unknown) => JSON.stringify(x);
  switch (d.change) {
    case "added":
      return `+ ${d.path}: ${v(d.rendered)} (rendered, not live: the sync adds it)`;
    case "live-only":
      return `- ${d.path}: ${v(d.live)} (live only: not rendered; an apply keeps it)`;
    case "changed":
      return `~ ${d.path}: ${v(d.live)} -> ${v(d.rendered)} (the sync sets the rendered value)`;
  }
}
