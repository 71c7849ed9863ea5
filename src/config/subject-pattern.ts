/**
 * Allowed client-certificate subjects (`tls.clientSubjects`), as Service Fabrik's
 * `sm_certificate_subject_pattern`: OpenSSL's one-line form `/C=DE/O=SAP SE/OU=.../CN=service-manager`
 * (what SAP Service Manager publishes as `service_manager_certificate_subject`), or the RFC 4514
 * form `CN=service-manager,OU=...,O=SAP SE,C=DE`. A subject matches when it has exactly these
 * attributes, in any order (SF compared them as sets); a value `*` matches any one value of its
 * attribute. A `/` or `,` inside a value is escaped with a backslash.
 */

/** Attribute type (upper-case short name) and value; value `*` is a wildcard. */
export type SubjectAttribute = readonly [type: string, value: string];
export type SubjectPattern = readonly SubjectAttribute[];

/** Long attribute names (RFC 4519) to the short ones Node reports. */
const SHORT: Record<string, string> = {
  COMMONNAME: "CN",
  ORGANIZATIONNAME: "O",
  ORGANIZATIONALUNITNAME: "OU",
  COUNTRYNAME: "C",
  LOCALITYNAME: "L",
  STATEORPROVINCENAME: "ST",
  DOMAINCOMPONENT: "DC",
  EMAILADDRESS: "EMAILADDRESS",
};

/** The upper-case short name of an attribute type, for comparison. */
export function attributeType(type: string): string {
  const upper = type.trim().toUpperCase();
  return SHORT[upper] ?? upper;
}

/** Split on unescaped `sep`, removing the escapes. */
function splitEscaped(s: string, sep: string): string[] {
  const parts: string[] = [];
  let current = "";
  for (let i = 0; i < s.length; i++) {
    const c = s[i]!;
    if (c === "\\" && i + 1 < s.length) current += s[++i]!;
    else if (c === sep) {
      parts.push(current);
      current = "";
    } else current += c;
  }
  parts.push(current);
  return parts;
}

/** The pattern, or a message saying what is wrong with it. */
export function parseSubjectPattern(text: string): SubjectPattern | string {
  const slashForm = text.startsWith("/");
  const items = slashForm ? splitEscaped(text.slice(1), "/") : splitEscaped(text, ",").map((s) => s.trim());
  const out: SubjectAttribute[] = [];
  for (const item of items) {
    const eq = item.indexOf("=");
    if (eq <= 0) return `${JSON.stringify(item)} is not TYPE=value (expected ${slashForm ? "/C=DE/O=Org/CN=name" : "CN=name,O=Org,C=DE"})`;
    const type = item.slice(0, eq).trim();
    if (!/^[A-Za-z][A-Za-z0-9-]*$|^[0-9]+(\.[0-9]+)+$/.test(type)) return `${JSON.stringify(type)} is not an attribute type`;
    out.push([attributeType(type), item.slice(eq + 1)]);
  }
  return out;
}

/** A certificate's subject as Node's `getPeerCertificate().subject` gives it (repeated attributes as arrays). */
export type CertificateSubject = Readonly<Record<string, string | readonly string[] | undefined>>;

function attributesOf(subject: CertificateSubject): SubjectAttribute[] {
  const out: SubjectAttribute[] = [];
  for (const [type, value] of Object.entries(subject)) {
    if (value === undefined) continue;
    for (const v of typeof value === "string" ? [value] : value) out.push([attributeType(type), v]);
  }
  return out;
}

function matches(pattern: SubjectPattern, subject: CertificateSubject): boolean {
  const left = attributesOf(subject);
  if (left.length !== pattern.length) return false;
  // Exact values first, then each wildcard takes any remaining value of its type.
  const ordered = [...pattern.filter(([, v]) => v !== "*"), ...pattern.filter(([, v]) => v === "*")];
  for (const [type, value] of ordered) {
    const i = left.findIndex(([t, v]) => t === type && (value === "*" || v === value));
    if (i < 0) return false;
    left.splice(i, 1);
  }
  return true;
}

/** Whether a subject is allowed: it matches one of `patterns` (none given: every subject is). */
export function subjectMatcher(patterns: readonly SubjectPattern[]): (subject: CertificateSubject) => boolean {
  return (subject) => patterns.length === 0 || patterns.some((p) => matches(p, subject));
}
