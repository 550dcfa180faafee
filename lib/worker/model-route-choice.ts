import type { ModelRoute, ModelRoutes } from '../ai/model-routes.js';
import { externalAllowed } from '../ai/route-permits.js';
import type { ClaimedOperation } from '../operations/lease/claim-operation.js';
import type { PrivacyMode } from '../owners/privacy-mode.js';
import type { TaskDefinition } from '../tasks/task-definition.js';

/**
 * The model route of one run (docs/design.md §5): none for a task without `model`; the external route for a claim from
 * `waiting_for_external_fallback`, else the local route; `unavailable` (the run fails retryably, closed) when that route
 * is not configured here, or is external and the operation may no longer leave the local route (`externalAllowed`
 * with the run's privacy mode).
 */
export type ModelRouteChoice =
  | { readonly route: ModelRoute | undefined }
  | { readonly unavailable: string; readonly route: ModelRoute | undefined };

/** Chooses the run's model route (see {@link ModelRouteChoice}). */
export function chooseModelRoute(task: TaskDefinition, claim: ClaimedOperation, privacyMode: PrivacyMode, models: ModelRoutes | undefined): ModelRouteChoice {
  if (!task.model) return { route: undefined };
  const route = claim.claimedFrom === 'waiting_for_external_fallback' ? models?.external : models?.local;
  if (!route || (route.name === 'external' && !externalAllowed(task, privacyMode, models))) {
    return { unavailable: `model route ${route?.name ?? 'local'} is not available to this operation`, route };
  }
  return { route };
}
