import { pino, type Logger, type LoggerOptions, type DestinationStream } from "pino";

export type { Logger };

/** Paths redacted from every log line: credentials and auth headers never reach the logs. */
export const REDACT_PATHS = [
  "req.headers.authorization",
  "headers.authorization",
  "authorization",
  "password",
  "auth.password",
  "credentials",
  "*.credentials",
  "*.password",
  "token",
  "*.token",
];

/** The root logger; components get `logger.child({ component })`. */
export function createLogger(options: { level: string; destination?: DestinationStream } = { level: "info" }): Logger {
  const opts: LoggerOptions = {
    level: options.level,
    base: { service: "gitops-broker" },
    redact: { paths: REDACT_PATHS, censor: "[redacted]" },
    timestamp: pino.stdTimeFunctions.isoTime,
  };
  return options.destination ? pino(opts, options.destination) : pino(opts);
}

/** A logger that drops everything (tests that do not assert on logs). */
export function silentLogger(): Logger {
  return pino({ level: "silent" });
}

/** Every how long long work says how far it got, by default. */
export const PROGRESS_EVERY_MS = 5_000;

/**
 * Progress of long work (a clone, a cold start, a mass re-render) as log lines with counts:
 * `report({ loaded: 12000, total: 20000 })` writes `{"loaded":12000,"total":20000,"msg":"cold start"}`
 * at most once every `everyMs` (by the injected clock `now`, in ms), the first only once `everyMs`
 * has passed since the work began, so work that ends sooner logs no progress at all.
 */
export function progressReporter(
  log: Pick<Logger, "info">,
  msg: string,
  options: { everyMs?: number; now?: () => number } = {},
): (counts: Readonly<Record<string, number>>) => void {
  const everyMs = options.everyMs ?? PROGRESS_EVERY_MS;
  const now = options.now ?? (() => performance.now());
  let last = now();
  return (counts) => {
    const t = now();
    if (t - last < everyMs) return;
    last = t;
    log.info({ ...counts }, msg);
  };
}
