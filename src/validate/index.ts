/**
 * `gitops-broker validate`: the checks a pull request to the GitOps repository must pass, run on a
 * plain checkout (see validateRepo for the list). Problems are `file: path: message` lines.
 */
export { notAGitOpsRepository, validateRepo } from "./validate-repo.js";
export { formatValidationProblem } from "./problems.js";
export type { ValidationProblem } from "./problems.js";
export { overlayDraft } from "./overlay-draft.js";
