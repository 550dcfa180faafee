import type { DbContext } from '../db/database.js';
import type { TaskDefinition } from '../tasks/task-definition.js';
import { isEntitled, loadOwnerSettings, type OwnerSettings } from './owner-settings.js';
import { stricterPrivacy, type PrivacyMode } from './privacy-mode.js';

/** What {@link recheckOwner} found: the live entitlement, the plan for the limits, the privacy mode work may use. */
export interface OwnerRecheck {
  /** Whether the owner's live settings allow the task type (its `entitlement` rule). */
  readonly entitled: boolean;
  readonly plan: OwnerSettings['plan'];
  /**
   * The privacy mode new work may use: the live mode for a new admission; for an admitted operation, the stricter of
   * its snapshot and the live mode — withdrawing consent (`local_only`) stops further external calls at once, and
   * granting it later never widens work admitted without it.
   */
  readonly privacyMode: PrivacyMode;
}

/**
 * The one live entitlement and privacy recheck (docs/design.md §4, §5): admission (no snapshot), an owner's retry and every run
 * of a claimed operation (with the snapshot taken at admission) read the owner's current settings through it, and fail
 * closed when `entitled` is false. One read of `owner_settings` (defaults for an owner without a row).
 * @param snapshot the privacy mode stored on the operation, for work already admitted.
 */
export async function recheckOwner(ctx: DbContext, ownerUserId: string, task: Pick<TaskDefinition, 'entitlement'>, snapshot?: PrivacyMode): Promise<OwnerRecheck> {
  return recheckOf(await loadOwnerSettings(ctx, ownerUserId), task, snapshot);
}

/**
 * The decision of {@link recheckOwner} from settings already read live (a claim's read after its commit,
 * `ClaimedOperation.afterClaim`): the same rule, no read.
 */
export function recheckOf(settings: OwnerSettings, task: Pick<TaskDefinition, 'entitlement'>, snapshot?: PrivacyMode): OwnerRecheck {
  return {
    entitled: isEntitled(task, settings),
    plan: settings.plan,
    privacyMode: snapshot === undefined ? settings.privacyMode : stricterPrivacy(snapshot, settings.privacyMode),
  };
}
