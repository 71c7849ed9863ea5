/** Adler-32 of the UTF-8 bytes of `s` (RFC 1950), as Go's hash/adler32. */
export function adler32(s: string): number {
  let a = 1;
  let b = 0;
  for (const byte of Buffer.from(s, "utf8")) {
    a = (a + byte) % 65521;
    b = (b + a) % 65521;
  }
  return ((b << 16) | a) >>> 0;
}

/** Service Fabrik's Helm release name for an instance (or binding) id: `in-<adler32 in decimal>`. */
export function releaseName(id: string): string {
  return `in-${adler32(id)}`;
}
