/**
 * The one error hierarchy of gitops-broker, one file per group of errors (ADR 0037).
 *
 * Every failure is a BaseError subclass with a static `code` of its own, which is also the
 * `code` and the `name` of its instances: a log reader or a test matches on `NotFoundError.code`
 * without constructing one. The broker's own answers (osb.ts) carry their HTTP status and OSB
 * body; the errors of the rooms below (rendering, scheduling, stores, the git writer) carry a code
 * and data, and src/broker maps their codes to OSB answers in one table. The single error
 * middleware in src/broker writes every error body. This folder imports no other folder of src/.
 */
export { BaseError, InvalidArgumentError, type ErrorOptions } from "./base.js";
export {
  AbandonedRequestError,
  AsyncRequiredError,
  BadRequestError,
  ConcurrencyError,
  ConflictError,
  ForbiddenError,
  GoneError,
  InternalError,
  isOsbError,
  MaintenanceInfoConflictError,
  NotFoundError,
  OsbError,
  PayloadTooLargeError,
  PreconditionFailedError,
  RequiresAppError,
  ServiceUnavailableError,
  toError,
  toOsbBody,
  UnauthorizedError,
  UnprocessableEntityError,
  UnsupportedMediaTypeError,
  type OsbErrorBody,
  type OsbErrorOptions,
} from "./osb.js";
export { CatalogError, ConfigError, DataDirLockedError, formatProblem, type Problem } from "./problems.js";
export { GitRemoteError, GitRepositoryError, GitWriterClosedError, type GitRemoteErrorDetails } from "./git.js";
export { ChartError, RenderError, RenderPending, TemplateFailure, WasmCallError } from "./render.js";
export { SchedulingError } from "./scheduler.js";
export {
  ClusterMovedError,
  ClusterMoveConflictError,
  ClusterMoveRefusedError,
  ClusterMovingError,
  InstanceMoveAcrossStoresError,
  StoreMismatchError,
  StoreUnavailableError,
} from "./stores.js";
export { KubeApiError, NudgeError } from "./kube.js";
export { ImportAccountingError } from "./import.js";
export { formatAjvErrors } from "./schema-errors.js";
