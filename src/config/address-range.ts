/**
 * Address ranges (`http.trustedProxies`): an IPv4 or IPv6 address, or a CIDR block
 * (`10.0.0.0/8`, `fd00::/8`), matched with Node's own `net.BlockList`. An IPv4 range also
 * matches the IPv4-mapped IPv6 form (`::ffff:10.1.2.3`) that a server listening on `::` sees.
 */
import net from "node:net";
import { InvalidArgumentError } from "../errors/index.js";

export interface AddressRange {
  address: string;
  prefix: number;
  family: "ipv4" | "ipv6";
}

/** The range `text` names, or why it names none. */
export function parseAddressRange(text: string): AddressRange | string {
  const match = /^([^/\s]+)(?:\/(\d{1,3}))?$/.exec(text);
  const address = match?.[1] ?? "";
  const version = net.isIP(address);
  if (match === null || version === 0 || address.includes("%")) {
    return `${JSON.stringify(text)} is not an IP address or CIDR block (e.g. 10.0.0.0/8, 192.168.1.7, fd00::/8)`;
  }
  const family = version === 4 ? "ipv4" : "ipv6";
  const bits = version === 4 ? 32 : 128;
  const prefix = match[2] === undefined ? bits : Number(match[2]);
  if (prefix > bits) return `${JSON.stringify(text)}: the prefix length of an ${family === "ipv4" ? "IPv4" : "IPv6"} block is at most ${bits}`;
  return { address, prefix, family };
}

/**
 * Whether an address (a socket's `remoteAddress`) lies in one of `ranges`. The ranges were
 * checked by loadConfig; one that does not parse throws here.
 */
export function addressMatcher(ranges: readonly string[]): (address: string | undefined) => boolean {
  if (ranges.length === 0) return () => false;
  const list = new net.BlockList();
  for (const text of ranges) {
    const range = parseAddressRange(text);
    if (typeof range === "string") throw new InvalidArgumentError(range);
    list.addSubnet(range.address, range.prefix, range.family);
  }
  return (address) => {
    if (address === undefined) return false;
    const version = net.isIP(address);
    return version !== 0 && list.check(address, version === 4 ? "ipv4" : "ipv6");
  };
}
