import { BaseError, type ErrorOptions } from "./base.js";

/** Kubernetes API failures, and a nudge of a cluster's agent that failed. */

/**
 * Telling a cluster's Argo CD / Flux about a push failed (webhook answer, annotation patch, secret).
 * Logged and counted only: it never fails an OSB request (polling stays the fallback).
 */
export class NudgeError extends BaseError {
  static override readonly code: string = "NudgeError";
  readonly clusterId: string;
  /** HTTP status of the webhook or Kubernetes API answer, when there was one. */
  readonly status: number | undefined;
  constructor(clusterId: string, message: string, details: { status?: number } = {}, options: ErrorOptions = {}) {
    super(`cluster ${clusterId}: ${message}`, options);
    this.clusterId = clusterId;
    this.status = details.status;
  }
}

/** A Kubernetes API request failed (HTTP error with a Status, or no answer). */
export class KubeApiError extends BaseError {
  static override readonly code: string = "KubeApiError";
  /** HTTP status or Status code; undefined for network failures. */
  readonly status: number | undefined;
  /** Status `reason` (e.g. `Expired`, `TooManyRequests`) when the server sent one. */
  readonly reason: string | undefined;
  /** From Retry-After on a 429/503 list response. */
  readonly retryAfterMs: number | undefined;
  constructor(
    message: string,
    details: { status?: number; reason?: string; retryAfterMs?: number } = {},
    options: ErrorOptions = {},
  ) {
    super(message, options);
    this.status = details.status;
    this.reason = details.reason;
    this.retryAfterMs = details.retryAfterMs;
  }
}
