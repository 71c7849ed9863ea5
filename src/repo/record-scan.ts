/**
 * The few fields of an instance record the instance summary needs, read without a YAML parser.
 * A cold fold over 100k records spent ~18 s in `yaml.parse` (180 µs a record); this scan takes a
 * few µs. It accepts only the block-style subset `recordYaml` writes (plain or simply quoted
 * scalars, `key:` lines, `- ` items) and answers undefined for anything else (comments, block or
 * multi-line scalars, anchors, tags, flow collections, odd keys, CRLF ...): the caller then parses
 * the record properly. Where it answers, it answers what the parser would (tested on generated
 * records, see record-scan.test.ts).
 */
export interface ScannedInstance {
  instanceId: string;
  clusterId: string;
  planId: string;
  deleted: boolean;
  /** spec.organizationGuid, spec.spaceGuid and spec.context.subaccount_id (SAP Service Manager), for quotas. */
  organizationGuid?: string;
  spaceGuid?: string;
  subaccountId?: string;
  /** Operations in file order, with the fields the summary reads. */
  operations: { action: string; at: string }[];
}

// indent, "- " (a sequence item), key, value (after ": "); keys with "/" are label keys (status.labels)
const KEY_LINE = /^( *)(- )?([A-Za-z0-9_$][A-Za-z0-9_$./-]*):(?: (.*))?$/;
const ITEM_LINE = /^( *)- (.*)$/;
/** A plain scalar YAML's core schema reads as this very string (not a number, bool or null). */
const SAFE_PLAIN = /^[A-Za-z0-9_][A-Za-z0-9_.:/+-]*$/;
const NOT_A_STRING = /^(?:true|false|null|~|[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|0x[0-9a-fA-F]+|0o[0-7]+|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$/i;
/** Values that make a line start something this scan does not follow. */
const UNFOLLOWED = /^(?:[|>&*!%@`#]|\{(?!\}$)|\[(?!\]$)|"(?!(?:[^"\\]|\\.)*"$)|'(?!(?:[^']|'')*'$))/;

function stringOf(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  const quoted = SAFE_PLAIN.test(value) && !NOT_A_STRING.test(value) ? value : (/^"([^"\\]*)"$/.exec(value) ?? /^'([^']*)'$/.exec(value))?.[1];
  // A copy: a substring would keep the whole record text alive in the memoized summaries.
  return quoted === undefined ? undefined : Buffer.from(quoted).toString();
}

export function scanInstanceRecord(text: string): ScannedInstance | undefined {
  const lines = text.split("\n");
  if (lines.at(-1) === "") lines.pop();
  /** Open mappings: the indent of their keys, and their key. */
  const stack: { indent: number; key: string }[] = [];
  const found = new Map<string, string>();
  const operations: { action?: string; at?: string }[] = [];
  let operationsSeen = false;
  /** Keys of the mappings the fields live in (root, spec, status): a duplicate is left to the parser. */
  const containerKeys = new Set<string>();
  let opensBlock = true; // the previous line ended with "key:" (or there was none)
  let previousIndent = 0;
  let afterScalarItem = false;
  for (const line of lines) {
    let indent: number;
    let key: string | undefined;
    let value: string | undefined;
    let item: boolean;
    const keyLine = KEY_LINE.exec(line);
    if (keyLine) {
      item = keyLine[2] !== undefined;
      indent = keyLine[1]!.length + (item ? 2 : 0);
      key = keyLine[3]!;
      value = keyLine[4];
    } else {
      const itemLine = ITEM_LINE.exec(line);
      if (!itemLine || itemLine[2]!.startsWith("- ")) return undefined;
      item = true;
      indent = itemLine[1]!.length + 2;
      value = itemLine[2];
    }
    if (value !== undefined && (value === "" || UNFOLLOWED.test(value) || / #/.test(value))) return undefined;
    // Deeper than the line before is only allowed below a "key:" line (or as an item's content);
    // after a scalar item, only another item or a shallower line.
    if (indent > previousIndent && !opensBlock && !item) return undefined;
    if (afterScalarItem && indent >= previousIndent && !item) return undefined;
    while (stack.length > 0 && stack.at(-1)!.indent >= indent) stack.pop();
    const path = stack.map((s) => s.key).join(".");
    if (path === "status.operations") {
      // Operations are mappings, items at the indent recordYaml writes.
      if (indent !== 6 || key === undefined || (!item && operations.length === 0)) return undefined;
      if (item) operations.push({});
    }
    if (key !== undefined && (path === "" || path === "spec" || path === "status" || path === "spec.context")) {
      if (containerKeys.has(`${path}.${key}`)) return undefined;
      containerKeys.add(`${path}.${key}`);
    }
    afterScalarItem = item && key === undefined;
    if (key !== undefined) {
      const field = fieldAt(path, indent, key);
      if (field !== undefined) {
        if (field === "operation") {
          const op = operations.at(-1);
          if (op === undefined || op[key as "action" | "at"] !== undefined) return undefined;
          op[key as "action" | "at"] = value;
        } else {
          found.set(field, value ?? "");
        }
      }
      if (path === "status" && key === "operations") operationsSeen = true;
      if (value === undefined) stack.push({ indent, key });
    }
    opensBlock = value === undefined;
    previousIndent = indent;
  }
  const instanceId = stringOf(found.get("spec.instanceId"));
  const clusterId = stringOf(found.get("spec.clusterId"));
  const planId = stringOf(found.get("spec.planId"));
  const deleted = found.get("status.deleted");
  if (instanceId === undefined || clusterId === undefined || planId === undefined || !operationsSeen) return undefined;
  const tenancy: Pick<ScannedInstance, "organizationGuid" | "spaceGuid" | "subaccountId"> = {};
  for (const [name, field] of TENANCY) {
    const raw = found.get(field);
    if (raw === undefined) continue;
    const value = stringOf(raw);
    if (value === undefined) return undefined; // not a string: what the parser makes of it is its business
    tenancy[name] = value;
  }
  if (deleted !== undefined && deleted !== "true" && deleted !== "false") return undefined;
  const ops: ScannedInstance["operations"] = [];
  for (const op of operations) {
    const action = stringOf(op.action);
    const at = stringOf(op.at);
    if (action === undefined || at === undefined) return undefined;
    ops.push({ action, at });
  }
  return { instanceId, clusterId, planId, deleted: deleted === "true", ...tenancy, operations: ops };
}

const TENANCY = [
  ["organizationGuid", "spec.organizationGuid"],
  ["spaceGuid", "spec.spaceGuid"],
  ["subaccountId", "spec.context.subaccount_id"],
] as const;

/** Which field a key is, by where it is: one of the summary's, an operation's, or none. */
function fieldAt(path: string, indent: number, key: string): string | undefined {
  if (indent === 2 && path === "spec" && (key === "instanceId" || key === "clusterId" || key === "planId" || key === "organizationGuid" || key === "spaceGuid")) {
    return `spec.${key}`;
  }
  if (indent === 4 && path === "spec.context" && key === "subaccount_id") return "spec.context.subaccount_id";
  if (indent === 2 && path === "status" && key === "deleted") return "status.deleted";
  if (indent === 6 && path === "status.operations" && (key === "action" || key === "at")) return "operation";
  return undefined;
}
