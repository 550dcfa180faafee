import { z } from 'zod';
import type { DbContext } from '../db/database.js';
import { parseDbTime, toIsoOrNull } from '../db/db-time.js';
import { loadVerifiedChain } from './chain-verification.js';
import type { RecoveryModuleRegistry } from './recovery-modules.js';
import { findRecoveryByKey, findRecoveryOperation, listCheckpoints } from './recovery.repository.js';

const isoDateTime = z.string().datetime();

/**
 * One checkpoint as `npm run recovery -- show` prints it: its chain position (`seq`, from 0), `kind`, the `state` it
 * moved the operation to, the `fence` it was written under (`previousFence`: the fence it replaced, takeovers only),
 * its `evidence` (opaque references, digests, counts and result codes by construction — or, when the stored text is
 * not JSON at all, that text as a string), its `hash` and `createdAt` (ISO-8601 UTC).
 */
export const RecoveryCheckpointDetailsSchema = z.strictObject({
  seq: z.number().int().min(0),
  kind: z.string(),
  state: z.string(),
  fence: z.number().int(),
  previousFence: z.number().int().nullable(),
  evidence: z.unknown(),
  hash: z.string(),
  createdAt: isoDateTime,
});

/**
 * A recovery operation as an operator inspects it (`npm run recovery -- show <id>`): the operation, its
 * reconciliation action, the verdict of its hash chain and every checkpoint. It shows the lease owner, the request
 * hash, the recovery plan and the precondition evidence — all opaque by construction (docs/design.md §8) — but not the
 * idempotency key, which no reconciliation needs. Operator-only: the HTTP list shows far less
 * (`UnresolvedRecoveryDtoSchema`).
 */
export const RecoveryDetailsSchema = z.strictObject({
  id: z.string(),
  module: z.string(),
  kind: z.string(),
  state: z.string(),
  effectClass: z.string(),
  fence: z.number().int(),
  leaseOwner: z.string().nullable(),
  leaseExpiresAt: isoDateTime.nullable(),
  requestHash: z.string(),
  recoveryPlan: z.unknown(),
  preconditionEvidence: z.unknown(),
  checkpointCount: z.number().int(),
  createdAt: isoDateTime,
  updatedAt: isoDateTime,
  reconciliation: z.string(),
  chain: z.union([z.strictObject({ ok: z.literal(true) }), z.strictObject({ ok: z.literal(false), seq: z.number().int(), reason: z.string() })]),
  checkpoints: z.array(RecoveryCheckpointDetailsSchema),
});

/** See {@link RecoveryDetailsSchema}. */
export type RecoveryDetails = z.infer<typeof RecoveryDetailsSchema>;

/** Stored canonical JSON as a value; text that is not JSON (a damaged row) is shown as it is. */
function storedJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

/**
 * The operation `id` with its checkpoints and the verdict of `loadVerifiedChain`, or `undefined` when there is none.
 * Reads only; takes no lease.
 */
export async function describeRecoveryOperation(ctx: DbContext, modules: RecoveryModuleRegistry, id: string): Promise<RecoveryDetails | undefined> {
  const row = await findRecoveryOperation(ctx, id);
  if (!row) return undefined;
  const checkpoints = await listCheckpoints(ctx, id);
  return {
    id: row.id,
    module: row.module,
    kind: row.kind,
    state: row.state,
    effectClass: row.effect_class,
    fence: row.fence,
    leaseOwner: row.lease_owner,
    leaseExpiresAt: toIsoOrNull(row.lease_expires_at),
    requestHash: row.request_hash,
    recoveryPlan: storedJson(row.recovery_plan),
    preconditionEvidence: storedJson(row.precondition_evidence),
    checkpointCount: row.checkpoint_count,
    createdAt: parseDbTime(row.created_at).toISOString(),
    updatedAt: parseDbTime(row.updated_at).toISOString(),
    reconciliation: modules.reconciliationOf(row.module),
    chain: await loadVerifiedChain(ctx, id),
    checkpoints: checkpoints.map((c) => ({
      seq: c.seq,
      kind: c.kind,
      state: c.state,
      fence: c.fence,
      previousFence: c.previous_fence,
      evidence: storedJson(c.evidence),
      hash: c.hash,
      createdAt: parseDbTime(c.created_at).toISOString(),
    })),
  };
}

/**
 * The operation `module` began under `idempotencyKey` (`beginDurableRecoveryOperation`), described as by
 * {@link describeRecoveryOperation}, or `undefined` when the module never used that key. How a module learns what an
 * earlier attempt of its effect recorded before it acts again (e.g. a delivery whose 2xx was recorded is not sent
 * twice). Reads only; takes no lease.
 */
export async function describeRecoveryOperationByKey(
  ctx: DbContext,
  modules: RecoveryModuleRegistry,
  module: string,
  idempotencyKey: string,
): Promise<RecoveryDetails | undefined> {
  const row = await findRecoveryByKey(ctx, module, idempotencyKey);
  return row ? describeRecoveryOperation(ctx, modules, row.id) : undefined;
}
