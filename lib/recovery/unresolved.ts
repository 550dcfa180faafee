import { z } from 'zod';
import type { DbContext } from '../db/database.js';
import { parseDbTime, toIsoOrNull } from '../db/db-time.js';
import { parseOrThrow } from '../validation/parse-or-throw.js';
import { loadVerifiedChain } from './chain-verification.js';
import type { ChainVerdict } from './hash-chain.js';
import { EFFECT_CLASSES, UNRESOLVED_RECOVERY_STATES, type EffectClass, type RecoveryState } from './recovery-model.js';
import type { RecoveryModuleRegistry } from './recovery-modules.js';
import { listLeasedIds, listUnresolvedOperations, type RecoveryOperationRow, type UnresolvedQuery } from './recovery.repository.js';

/**
 * The states an operator list may be filtered by: the unresolved states, and `running`, which here means **stale**
 * running — intent committed, lease expired on the database clock, nobody acting on it (docs/design.md §8 "Ops surface").
 */
export const UNRESOLVED_FILTERS: readonly RecoveryState[] = [...UNRESOLVED_RECOVERY_STATES, 'running'];

const FilterSchema = z.enum(UNRESOLVED_FILTERS as [RecoveryState, ...RecoveryState[]]);

const LIMIT_MESSAGE = 'must be a whole number 1–100';

/** A page size: 1–100, as a number or as plain decimal digits (a query string or CLI flag; no `1e2`, `+5`). */
const LimitSchema = z
  .union([z.number().int(), z.string().regex(/^[1-9]\d{0,2}$/).transform(Number)], { error: LIMIT_MESSAGE })
  .pipe(z.number().min(1, LIMIT_MESSAGE).max(100, LIMIT_MESSAGE))
  .default(50)
  // What a client sends, for the OpenAPI document: an integer (in a query string, its plain decimal digits).
  .meta({ type: 'integer', minimum: 1, maximum: 100, default: 50, description: 'Page size: 1–100, plain decimal digits.' });

/**
 * What {@link listUnresolved} is asked: `state` (optional; one of {@link UNRESOLVED_FILTERS}, absent = all of them)
 * and `limit` (1–100, @default 50). Unknown keys are refused. Accepts the strings of a query string or CLI flags.
 */
export const UnresolvedListQuerySchema = z.strictObject({
  state: FilterSchema.optional(),
  limit: LimitSchema,
});

/** See {@link UnresolvedListQuerySchema}. */
export type UnresolvedListQuery = z.input<typeof UnresolvedListQuerySchema>;

const isoDateTime = z.string().datetime();

/**
 * One unresolved recovery operation as the operator surface shows it (`GET /api/ops/recovery`,
 * `npm run recovery -- list`) — exactly these fields. It deliberately omits the idempotency key, the request hash,
 * the lease owner, the recovery plan and all evidence: what the operator acts on is the module's `reconciliation`
 * action and `npm run recovery -- show <id>`.
 *
 * - `state`: `recovery_required`, `recovering`, `outcome_unknown`, or `running` (listed only when stale).
 * - `fence`: the lease fence, growing on every takeover; `checkpointCount`: length of its hash chain.
 * - `leaseExpiresAt`, `createdAt`, `updatedAt`: ISO-8601 UTC, from the database clock (`leaseExpiresAt` null when
 *   released).
 * - `stale`: nobody holds a live lease on the database clock, so a takeover (`takeOverRecoveryOperation`) would
 *   succeed now. Always true for a listed `running` operation.
 * - `reconciliation`: the owning module's registered action, or the documented fallback for an unregistered module.
 * - `chain`: the verdict of its hash chain (`loadVerifiedChain`): `{ok: true, reason: null}`, or `{ok: false, reason}`
 *   naming the first break (a fixed phrase such as `hash does not match content`) — a broken chain refuses completion and
 *   resolution, so the operator must look at it first (`npm run recovery -- show <id>`).
 */
export const UnresolvedRecoveryDtoSchema = z.strictObject({
  id: z.string(),
  module: z.string(),
  kind: z.string(),
  state: FilterSchema,
  effectClass: z.enum(EFFECT_CLASSES),
  fence: z.number().int().min(1),
  checkpointCount: z.number().int().min(1),
  leaseExpiresAt: isoDateTime.nullable(),
  createdAt: isoDateTime,
  updatedAt: isoDateTime,
  stale: z.boolean(),
  reconciliation: z.string().min(1),
  chain: z.strictObject({ ok: z.boolean(), reason: z.string().nullable() }),
}).meta({ id: 'UnresolvedRecoveryDto' });

/** See {@link UnresolvedRecoveryDtoSchema}. */
export type UnresolvedRecoveryDto = z.infer<typeof UnresolvedRecoveryDtoSchema>;

/** The repository filter for a parsed `state`. */
function filterOf(state: RecoveryState | undefined, limit: number): UnresolvedQuery {
  if (state === undefined) return { states: UNRESOLVED_RECOVERY_STATES, includeStaleRunning: true, limit };
  if (state === 'running') return { states: [], includeStaleRunning: true, limit };
  return { states: [state], includeStaleRunning: false, limit };
}

/** Maps a row to its DTO; only allow-listed fields are copied. */
function toDto(row: RecoveryOperationRow, leased: ReadonlySet<string>, modules: RecoveryModuleRegistry, chain: ChainVerdict): UnresolvedRecoveryDto {
  return {
    id: row.id,
    module: row.module,
    kind: row.kind,
    state: row.state as RecoveryState,
    effectClass: row.effect_class as EffectClass,
    fence: row.fence,
    checkpointCount: row.checkpoint_count,
    leaseExpiresAt: toIsoOrNull(row.lease_expires_at),
    createdAt: parseDbTime(row.created_at).toISOString(),
    updatedAt: parseDbTime(row.updated_at).toISOString(),
    stale: !leased.has(row.id),
    reconciliation: modules.reconciliationOf(row.module),
    chain: chain.ok ? { ok: true, reason: null } : { ok: false, reason: chain.reason },
  };
}

/**
 * The unresolved recovery operations an operator must look at (docs/design.md §8 "Ops surface"), oldest first: exactly
 * those `recovery_required`, `recovering` or `outcome_unknown`, and those `running` whose lease expired on the
 * database clock. Each carries its module's reconciliation action from `modules`. At most `limit` items; there is no
 * cursor — narrow with `state` when the list is full. Each item's hash chain is verified (two reads per item).
 * @param query see {@link UnresolvedListQuerySchema}; a query string's parameters may be passed as they are.
 * @throws {ValidationError} for an unknown key, a state outside {@link UNRESOLVED_FILTERS} or a limit outside 1–100.
 */
export async function listUnresolved(ctx: DbContext, modules: RecoveryModuleRegistry, query: unknown = {}): Promise<UnresolvedRecoveryDto[]> {
  const { state, limit } = parseOrThrow(UnresolvedListQuerySchema, query, 'query');
  const rows = await listUnresolvedOperations(ctx, filterOf(state, limit));
  const leased = await listLeasedIds(ctx, rows.map((row) => row.id));
  const chains = new Map<string, ChainVerdict>();
  for (const row of rows) chains.set(row.id, await loadVerifiedChain(ctx, row.id));
  return rows.map((row) => toDto(row, leased, modules, chains.get(row.id) as ChainVerdict));
}
