import { z } from 'zod';
import type { DbContext } from '../db/database.js';
import type { Store } from '../db/store.js';
import { PlanNameSchema } from '../capacity/capacity-policy.js';
import { assertOwnerScope, type OwnerScope } from '../operations/scopes.js';
import { parseOrThrow } from '../validation/parse-or-throw.js';
import type { TaskDefinition } from '../tasks/task-definition.js';
import { findOwnerSettings, insertOwnerSettings, updateOwnerSettings, type OwnerSettingsRow } from './owner-settings.repository.js';
import { PrivacyModeSchema, type PrivacyMode } from './privacy-mode.js';
import { OwnerUserIdSchema } from './owner-user-id.js';

/** An owner's settings as the API shows them (`GET /api/me/settings`). */
export const OwnerSettingsDtoSchema = z.strictObject({
  plan: PlanNameSchema,
  aiEnabled: z.boolean(),
  privacyMode: PrivacyModeSchema,
}).meta({ id: 'OwnerSettingsDto' });

/** See {@link OwnerSettingsDtoSchema}. */
export type OwnerSettings = z.infer<typeof OwnerSettingsDtoSchema>;

/** What an owner may change about themselves (`PATCH /api/me/settings`): not the plan, which is an entitlement. */
export const OwnerSettingsPatchSchema = z
  .strictObject({ aiEnabled: z.boolean().optional(), privacyMode: PrivacyModeSchema.optional() })
  .refine((patch) => patch.aiEnabled !== undefined || patch.privacyMode !== undefined, 'must change aiEnabled or privacyMode')
  .meta({ id: 'OwnerSettingsPatch', minProperties: 1 });

/** The settings of an owner who has no row: plan `free`, AI enabled, `local_only`. */
export const DEFAULT_OWNER_SETTINGS: OwnerSettings = Object.freeze({ plan: 'free', aiEnabled: true, privacyMode: 'local_only' as PrivacyMode });

function fromRow(row: OwnerSettingsRow | undefined): OwnerSettings {
  if (!row) return DEFAULT_OWNER_SETTINGS;
  return { plan: row.plan, aiEnabled: row.ai_enabled === 1, privacyMode: row.privacy_mode };
}

/** The owner's live settings (defaults when they have no row). Read at every admission and before every run. */
export async function loadOwnerSettings(ctx: DbContext, ownerUserId: string): Promise<OwnerSettings> {
  return fromRow(await findOwnerSettings(ctx, ownerUserId));
}

/** The authenticated owner's settings. */
export async function getOwnSettings(scope: OwnerScope): Promise<OwnerSettings> {
  assertOwnerScope(scope);
  return loadOwnerSettings(scope.store, scope.ownerUserId);
}

async function writeSettings(store: Store, ownerUserId: string, changes: Partial<OwnerSettings>): Promise<OwnerSettings> {
  const columns = {
    ...(changes.plan !== undefined ? { plan: changes.plan } : {}),
    ...(changes.aiEnabled !== undefined ? { ai_enabled: changes.aiEnabled ? 1 : 0 } : {}),
    ...(changes.privacyMode !== undefined ? { privacy_mode: changes.privacyMode } : {}),
  };
  // Update first; with no row, insert defaults + changes; a concurrent first write makes the insert a duplicate, so
  // update again. No read-then-insert race can lose a change.
  if ((await updateOwnerSettings(store, ownerUserId, columns)) === 0) {
    const next = { ...DEFAULT_OWNER_SETTINGS, ...changes };
    try {
      await insertOwnerSettings(store, { owner_user_id: ownerUserId, plan: next.plan, ai_enabled: next.aiEnabled ? 1 : 0, privacy_mode: next.privacyMode });
    } catch (error) {
      if (!store.caps.isDuplicateKey(error)) throw error;
      await updateOwnerSettings(store, ownerUserId, columns);
    }
  }
  return loadOwnerSettings(store, ownerUserId);
}

/**
 * Changes the authenticated owner's `aiEnabled` and/or `privacyMode`. Later admissions see the change at once;
 * operations already admitted keep the privacy mode they were admitted with.
 * @throws {ValidationError} for anything but `{aiEnabled?: boolean, privacyMode?: 'local_only'|'external_allowed'}` with at least one field.
 */
export async function updateOwnSettings(scope: OwnerScope, patch: unknown): Promise<OwnerSettings> {
  assertOwnerScope(scope);
  const changes = parseOrThrow(OwnerSettingsPatchSchema, patch, 'body');
  return writeSettings(scope.store, scope.ownerUserId, changes);
}

/**
 * Sets an owner's plan: an operator action (the `owner` CLI), never the owner's own.
 * @throws {ValidationError} for an invalid owner id or plan name.
 */
export async function setOwnerPlan(store: Store, ownerUserId: string, plan: string): Promise<OwnerSettings> {
  const owner = parseOrThrow(OwnerUserIdSchema, ownerUserId, 'owner');
  return writeSettings(store, owner, { plan: parseOrThrow(PlanNameSchema, plan, 'plan') });
}

/**
 * Whether settings entitle an owner to run `task` (docs/design.md §4): a task that requires AI needs `aiEnabled`; a task
 * limited to plans needs one of them.
 */
export function isEntitled(task: Pick<TaskDefinition, 'entitlement'>, settings: OwnerSettings): boolean {
  const rule = task.entitlement;
  if (!rule) return true;
  if (rule.aiEnabled && !settings.aiEnabled) return false;
  if (rule.plans && !rule.plans.includes(settings.plan)) return false;
  return true;
}
