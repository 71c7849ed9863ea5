import { describe, expect, it } from "vitest";
import { addressMatcher, parseAddressRange } from "./address-range.js";

describe("address ranges (http.trustedProxies)", () => {
  it("reads an address as its own block and a CIDR block with its prefix", () => {
    expect(parseAddressRange("10.0.0.0/8")).toEqual({ address: "10.0.0.0", prefix: 8, family: "ipv4" });
    expect(parseAddressRange("192.168.1.7")).toEqual({ address: "192.168.1.7", prefix: 32, family: "ipv4" });
    expect(parseAddressRange("fd00::/8")).toEqual({ address: "fd00::", prefix: 8, family: "ipv6" });
    expect(parseAddressRange("::1")).toEqual({ address: "::1", prefix: 128, family: "ipv6" });
  });

  it("refuses what is no address, a prefix too long for its family, a zone index, spaces", () => {
    for (const bad of ["", "x", "10.0.0.0/", "10.0.0/8", "10.0.0.0/33", "::/129", "1.2.3.4/-1", "fe80::1%eth0", " 10.0.0.1", "10.0.0.1 ", "10.0.0.0/8/8", "localhost"]) {
      expect(typeof parseAddressRange(bad), bad).toBe("string");
    }
  });

  it("matches the addresses inside the blocks, IPv4 ones also in their IPv4-mapped IPv6 form", () => {
    const trusted = addressMatcher(["10.0.0.0/8", "127.0.0.2", "fd00::/8"]);
    expect(["10.0.0.1", "10.255.255.255", "127.0.0.2", "::ffff:10.1.2.3", "::ffff:127.0.0.2", "fd12::1"].filter((a) => !trusted(a))).toEqual([]);
    expect(["11.0.0.1", "9.255.255.255", "127.0.0.1", "127.0.0.3", "::ffff:127.0.0.1", "fe80::1", "::1", "unknown", undefined].filter((a) => trusted(a))).toEqual([]);
    expect(addressMatcher([])("10.0.0.1")).toBe(false);
  });

  it("throws on a range loadConfig would have refused", () => {
    expect(() => addressMatcher(["10.0.0.0/33"])).toThrow(/prefix length/);
  });
});
