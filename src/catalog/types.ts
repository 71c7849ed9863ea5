import type { ChartInput } from "../charts/index.js";

/**
 * Catalog model. The catalog is read from `catalog/` in the GitOps repo: Service Fabrik
 * `SFService` / `SFPlan` documents (apiVersion osb.servicefabrik.io/v1alpha1) as is, or the same
 * shape under our own apiVersion `gitops-broker.io/v1alpha1` (kinds `Service` / `Plan`).
 */

/** One template of a plan, resolved: `content` is always filled (inline or read from `path`). */
export interface PlanTemplate {
  /** OSB action or helper action: provision, update, bind, unbind, deprovision, sources, status, clusterSelector, ... */
  action: string;
  /** Engine, by render's registry: `handlebars`, `gotemplate` (Service Fabrik's Go templates); anything else is rejected at render time. */
  type: string;
  content: string;
  /** Where the template text came from, for error messages: `catalog/plans/x.yaml#spec.templates[2]` or `catalog/templates/pg.hbs`. */
  source: string;
  /**
   * Service Fabrik's `url` (helm: the chart): a repository path under `catalog/` (a chart
   * directory or a .tgz), or an http(s) URL pinned by `digest`.
   */
  url?: string;
  /** `sha256:<hex>` of a remote chart archive. */
  digest?: string;
  /** The chart `url` names, read when the catalog loaded (helm); absent when it could not be. */
  chart?: ChartInput;
}

export interface MaintenanceInfo {
  version: string;
  description?: string;
}

/** A plan as the broker uses it. `raw` is the document as written (SFPlan-shaped), exposed to templates as `plan`. */
export interface Plan {
  id: string;
  name: string;
  description: string;
  serviceId: string;
  metadata?: Record<string, unknown>;
  free?: boolean;
  /** Undefined: inherits the service's `bindable`. */
  bindable?: boolean;
  /** Undefined: inherits the service's `planUpdateable`. */
  planUpdateable?: boolean;
  /** OSB `schemas` object (service_instance.create/update.parameters, service_binding.create.parameters). */
  schemas?: Record<string, unknown>;
  maintenanceInfo?: MaintenanceInfo;
  maximumPollingDuration?: number;
  /** Service Fabrik `manager.async`: provision/update/deprovision are asynchronous. */
  async: boolean;
  /** Service Fabrik `manager.asyncBinding`: bind/unbind are asynchronous. */
  asyncBinding: boolean;
  /** Service Fabrik `manager.settings.dashboard_url_template` (base64 lodash-style template). */
  dashboardUrlTemplate?: string;
  /**
   * Service Fabrik `manager.settings.update_predecessors`: the plan ids an instance may move to this
   * plan from. Undefined: from any plan (a `Plan` without the setting); an `SFPlan` without it has
   * `[]`, as Service Fabrik refused every plan change to such a plan.
   */
  updatePredecessors?: string[];
  /** Service Fabrik `supported_platform`: the platforms whose catalog lists the plan (undefined: cf and sm). */
  supportedPlatforms?: string[];
  /**
   * OSB `binding_rotatable` (2.17): `spec.bindingRotatable` / `binding_rotatable`, or, for an SFPlan
   * that must stay valid for Service Fabrik's CRD, `manager.settings.binding_rotatable`.
   * Undefined: not declared (false).
   */
  bindingRotatable?: boolean;
  /** `manager.settings.binding_expires_after_seconds`: a binding's `expires_at` is its bind time plus this. */
  bindingExpiresAfterSeconds?: number;
  /** `manager.settings.binding_renew_after_seconds`: a binding's `renew_before` is its bind time plus this. */
  bindingRenewAfterSeconds?: number;
  /** Service Fabrik `context` (free-form, for templates). */
  context: Record<string, unknown>;
  templates: PlanTemplate[];
  /** Repo-relative file the plan was loaded from. */
  file: string;
  /** The whole document (apiVersion, kind, metadata, spec), for templates. */
  raw: Record<string, unknown>;
}

export interface Service {
  id: string;
  name: string;
  description: string;
  tags?: string[];
  requires?: string[];
  bindable: boolean;
  instancesRetrievable: boolean;
  bindingsRetrievable: boolean;
  allowContextUpdates?: boolean;
  planUpdateable: boolean;
  metadata?: Record<string, unknown>;
  dashboardClient?: { id: string; secret: string; redirect_uri?: string };
  /** Service Fabrik `supported_platform`: the platforms whose catalog lists the service (undefined: cf and sm). */
  supportedPlatforms?: string[];
  plans: Plan[];
  file: string;
  raw: Record<string, unknown>;
}

export interface Catalog {
  services: Service[];
  serviceById(id: string): Service | undefined;
  planById(id: string): Plan | undefined;
}

/** OSB API version of a request, e.g. {major: 2, minor: 17}. */
export interface ApiVersion {
  major: number;
  minor: number;
}
