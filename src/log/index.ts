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
