/** The broker's version, reported by --version and in commit trailers. */
export const VERSION = "0.1.0";
