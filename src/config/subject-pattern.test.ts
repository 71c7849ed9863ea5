import { describe, expect, it } from "vitest";
import { parseSubjectPattern, subjectMatcher, type SubjectPattern } from "./subject-pattern.js";

function pattern(text: string): SubjectPattern {
  const p = parseSubjectPattern(text);
  if (typeof p === "string") throw new Error(p);
  return p;
}

describe("client-certificate subject patterns", () => {
  it("reads Service Fabrik's slash form and the RFC 4514 comma form to the same attributes", () => {
    expect(pattern("/C=DE/O=SAP SE/OU=Clients/OU=Staging/CN=service-manager")).toEqual([
      ["C", "DE"], ["O", "SAP SE"], ["OU", "Clients"], ["OU", "Staging"], ["CN", "service-manager"],
    ]);
    expect(pattern("CN=service-manager, OU=Staging,OU=Clients, O=SAP SE,C=DE")).toEqual([
      ["CN", "service-manager"], ["OU", "Staging"], ["OU", "Clients"], ["O", "SAP SE"], ["C", "DE"],
    ]);
    // Escaped separators stay in the value; long type names and any case name the short type.
    expect(pattern("/O=A\\/B/commonName=x")).toEqual([["O", "A/B"], ["CN", "x"]]);
    expect(pattern("cn=a\\,b")).toEqual([["CN", "a,b"]]);
    expect(parseSubjectPattern("/C=DE/O")).toBe('"O" is not TYPE=value (expected /C=DE/O=Org/CN=name)');
    expect(parseSubjectPattern("C D=x")).toBe('"C D" is not an attribute type');
  });

  it("matches a subject with exactly the pattern's attributes, in any order, * for any value", () => {
    const allows = subjectMatcher([pattern("/C=DE/O=SAP SE/OU=Clients/OU=Staging/CN=service-manager"), pattern("CN=*,O=Acme")]);
    expect(allows({ C: "DE", O: "SAP SE", OU: ["Staging", "Clients"], CN: "service-manager" })).toBe(true);
    expect(allows({ CN: "anything", O: "Acme" })).toBe(true);
    expect(allows({ C: "DE", O: "SAP SE", OU: ["Staging"], CN: "service-manager" })).toBe(false); // one OU missing
    expect(allows({ C: "DE", O: "SAP SE", OU: ["Staging", "Clients"], CN: "service-manager", L: "x" })).toBe(false); // one more
    expect(allows({ CN: "a", O: "Acme", OU: "x" })).toBe(false);
    expect(allows({ O: "Acme" })).toBe(false);
    expect(allows({ C: "de", O: "SAP SE", OU: ["Staging", "Clients"], CN: "service-manager" })).toBe(false); // values are exact
    expect(subjectMatcher([])({ CN: "whoever" })).toBe(true);
  });
});
