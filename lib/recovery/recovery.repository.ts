import type { Insertable, Selectable } from 'kysely';
import type { DbContext, RecoveryCheckpointsTable, RecoveryOperationsTable } from '../db/database.js';
import type { RecoveryState } from './recovery-model.js';

/** SQL for the recovery ledger: one statement per function. */

/** A row of `recovery_operations`. */
export type RecoveryOperationRow = Selectable<RecoveryOperationsTable>;
/** A row of `recovery_checkpoints`. */
export type RecoveryCheckpointRow = Selectable<RecoveryCheckpointsTable>;

/** Inserts a recovery operation (times from the database clock). Duplicate (module, key) → driver duplicate-key error. */
export async function insertRecoveryOperation(
  ctx: DbContext,
  row: Omit<Insertable<RecoveryOperationsTable>, 'created_at' | 'updated_at' | 'lease_expires_at'>,
  leaseMs: number,
): Promise<void> {
  const now = ctx.timeAt();
  await ctx.db
    .insertInto('recovery_operations')
    .values({ ...row, lease_expires_at: ctx.timeAt(leaseMs), created_at: now, updated_at: now })
    .execute();
}

/** Inserts one checkpoint. Its primary key (operation_id, seq) refuses a second write of the same chain position. */
export async function insertCheckpoint(ctx: DbContext, row: Omit<Insertable<RecoveryCheckpointsTable>, 'created_at'>): Promise<void> {
  await ctx.db.insertInto('recovery_checkpoints').values({ ...row, created_at: ctx.timeAt() }).execute();
}

/** One recovery operation by id. */
export async function findRecoveryOperation(ctx: DbContext, id: string): Promise<RecoveryOperationRow | undefined> {
  return ctx.db.selectFrom('recovery_operations').selectAll().where('id', '=', id).executeTakeFirst();
}

/** The operation that used this module's idempotency key. */
export async function findRecoveryByKey(ctx: DbContext, module: string, key: string): Promise<RecoveryOperationRow | undefined> {
  return ctx.db.selectFrom('recovery_operations').selectAll().where('module', '=', module).where('idempotency_key', '=', key).executeTakeFirst();
}

/** Every checkpoint of an operation, in sequence order. */
export async function listCheckpoints(ctx: DbContext, operationId: string): Promise<RecoveryCheckpointRow[]> {
  return ctx.db.selectFrom('recovery_checkpoints').selectAll().where('operation_id', '=', operationId).orderBy('seq').execute();
}

/** The guard and the new head of a fenced chain append. */
export interface ChainAdvance {
  readonly operationId: string;
  readonly fence: number;
  readonly leaseOwner: string;
  readonly fromStates: readonly RecoveryState[];
  /** The checkpoint count the writer last saw: a racing append makes it stale. */
  readonly expectedCount: number;
  readonly state: RecoveryState;
  readonly headHash: string;
  /** Lease after this write: extended by `leaseMs` from the database clock, or released (terminal states). */
  readonly lease: { readonly extendMs: number } | 'release';
}

/**
 * Moves the operation's chain head one checkpoint on, only while the writer still holds it: same fence and lease
 * owner, the lease unexpired on the database clock, an allowed state, and no append since the writer's last one.
 * Returns rows changed: 0 means the fence is stale and nothing may be written.
 */
export async function advanceChain(ctx: DbContext, advance: ChainAdvance): Promise<number> {
  const now = ctx.timeAt();
  const result = await ctx.db
    .updateTable('recovery_operations')
    .set({
      state: advance.state,
      chain_head_hash: advance.headHash,
      checkpoint_count: advance.expectedCount + 1,
      lease_owner: advance.lease === 'release' ? null : advance.leaseOwner,
      lease_expires_at: advance.lease === 'release' ? null : ctx.timeAt(advance.lease.extendMs),
      updated_at: now,
    })
    .where('id', '=', advance.operationId)
    .where('fence', '=', advance.fence)
    .where('lease_owner', '=', advance.leaseOwner)
    .where('lease_expires_at', '>', now)
    .where('state', 'in', advance.fromStates)
    .where('checkpoint_count', '=', advance.expectedCount)
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}

/** The guard and the new holder of a takeover. */
export interface Takeover {
  readonly operationId: string;
  readonly oldFence: number;
  readonly oldState: RecoveryState;
  readonly expectedCount: number;
  readonly newOwner: string;
  readonly newState: RecoveryState;
  readonly headHash: string;
  readonly lease: { readonly extendMs: number } | 'release';
}

/**
 * Takes an operation whose lease has expired (or was released) under a new, larger fence. Guarded by the old fence,
 * state and count: of two racing takers exactly one changes the row; the other gets 0 and must write nothing.
 */
export async function takeOverOperation(ctx: DbContext, takeover: Takeover): Promise<number> {
  const now = ctx.timeAt();
  const result = await ctx.db
    .updateTable('recovery_operations')
    .set({
      fence: takeover.oldFence + 1,
      lease_owner: takeover.lease === 'release' ? null : takeover.newOwner,
      lease_expires_at: takeover.lease === 'release' ? null : ctx.timeAt(takeover.lease.extendMs),
      state: takeover.newState,
      chain_head_hash: takeover.headHash,
      checkpoint_count: takeover.expectedCount + 1,
      updated_at: now,
    })
    .where('id', '=', takeover.operationId)
    .where('fence', '=', takeover.oldFence)
    .where('state', '=', takeover.oldState)
    .where('checkpoint_count', '=', takeover.expectedCount)
    .where((eb) => eb.or([eb('lease_expires_at', 'is', null), eb('lease_expires_at', '<=', now)]))
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}

/** Filters of {@link listUnresolvedOperations}. */
export interface UnresolvedQuery {
  readonly states: readonly RecoveryState[];
  /** Also list `running` operations whose lease expired (stale: nobody is acting on them). */
  readonly includeStaleRunning: boolean;
  readonly limit: number;
}

/** Unresolved recovery operations, oldest first. */
export async function listUnresolvedOperations(ctx: DbContext, query: UnresolvedQuery): Promise<RecoveryOperationRow[]> {
  const now = ctx.timeAt();
  return ctx.db
    .selectFrom('recovery_operations')
    .selectAll()
    .where((eb) => {
      const conditions = query.states.length > 0 ? [eb('state', 'in', query.states)] : [];
      if (query.includeStaleRunning) conditions.push(eb.and([eb('state', '=', 'running'), eb('lease_expires_at', '<=', now)]));
      return conditions.length > 0 ? eb.or(conditions) : eb.val(false);
    })
    .orderBy('created_at')
    .orderBy('id')
    .limit(query.limit)
    .execute();
}

/** A page of recovery operation ids after `afterId`, for verifying every chain in bounded batches. */
export async function listRecoveryIds(ctx: DbContext, afterId: string, limit: number): Promise<string[]> {
  const rows = await ctx.db.selectFrom('recovery_operations').select('id').where('id', '>', afterId).orderBy('id').limit(limit).execute();
  return rows.map((r) => r.id);
}

/**
 * Of `ids`, those whose lease is live on the database clock (unexpired and not released): someone holds them and a
 * takeover would be refused. The operator list marks the others stale.
 */
export async function listLeasedIds(ctx: DbContext, ids: readonly string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const rows = await ctx.db.selectFrom('recovery_operations').select('id').where('id', 'in', ids).where('lease_expires_at', '>', ctx.timeAt()).execute();
  return new Set(rows.map((r) => r.id));
}

/** Extends a held lease by `extendMs` from the database clock; fenced like {@link advanceChain}. Returns rows changed. */
export async function renewRecoveryLease(
  ctx: DbContext,
  lease: { operationId: string; fence: number; leaseOwner: string; expectedCount: number; extendMs: number },
): Promise<number> {
  const now = ctx.timeAt();
  const result = await ctx.db
    .updateTable('recovery_operations')
    .set({ lease_expires_at: ctx.timeAt(lease.extendMs), updated_at: now })
    .where('id', '=', lease.operationId)
    .where('fence', '=', lease.fence)
    .where('lease_owner', '=', lease.leaseOwner)
    .where('checkpoint_count', '=', lease.expectedCount)
    .where('lease_expires_at', '>', now)
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}
