import type { ClaimableRoutes } from '../operations/lease/claim-operation.js';
import type { PrivacyMode } from '../owners/privacy-mode.js';
import type { TaskDefinition } from '../tasks/task-definition.js';
import type { BreakerPermit } from './circuit-breaker.js';
import type { ModelRouteName } from './model-provenance.js';
import type { ModelRoutes } from './model-routes.js';

/** Breaker permits a claimer holds for each model route; `null`: the route is absent or its breaker refused. */
export interface RoutePermits {
  readonly local: BreakerPermit | null;
  readonly external: BreakerPermit | null;
}

/**
 * Asks each configured route's circuit breaker for a permit before a claim (docs/design.md §5: while a breaker is open, that
 * route's operations wait instead of failing). Every permit taken must end in {@link releaseRoutePermits} or be handed
 * to the model session of the claimed run.
 */
export function acquireRoutePermits(models: ModelRoutes | undefined): RoutePermits {
  return { local: models?.local?.breaker.tryAcquire() ?? null, external: models?.external?.breaker.tryAcquire() ?? null };
}

/** The claim filter the permits allow. */
export function claimableRoutes(permits: RoutePermits): ClaimableRoutes {
  return { local: permits.local !== null, external: permits.external !== null };
}

/** Gives back every permit except the one of `keep` (the route of the run that goes ahead). */
export function releaseRoutePermits(models: ModelRoutes | undefined, permits: RoutePermits, keep?: ModelRouteName): void {
  if (keep !== 'local' && permits.local) models?.local?.breaker.release(permits.local);
  if (keep !== 'external' && permits.external) models?.external?.breaker.release(permits.external);
}

/**
 * Whether an operation may use the external route (docs/design.md §5): the task type is on the external allowlist
 * (`model.externalAllowed`), the owner's privacy snapshot is `external_allowed`, and an external route is configured.
 * `local_only` owners never reach an external provider, whatever the local route does.
 */
export function externalAllowed(task: TaskDefinition, privacyMode: PrivacyMode, models: ModelRoutes | undefined): boolean {
  return task.model?.externalAllowed === true && privacyMode === 'external_allowed' && models?.external !== undefined;
}
