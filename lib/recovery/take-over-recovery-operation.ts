import { z } from 'zod';
import type { Store } from '../db/store.js';
import { canonicalJson } from '../hashing/request-hash.js';
import { parseOrThrow } from '../validation/parse-or-throw.js';
import { checkpointHash } from './hash-chain.js';
import { RecoveryHandle } from './recovery-handle.js';
import { NothingToTakeOverError } from './recovery-errors.js';
import { writeIndependently } from './independent-write.js';
import { TAKEOVER_STATE, TERMINAL_RECOVERY_STATES, type EffectClass, type RecoveryState } from './recovery-model.js';
import { findRecoveryOperation, insertCheckpoint, takeOverOperation } from './recovery.repository.js';

const TakeOverSchema = z.strictObject({
  operationId: z.string().uuid(),
  /** When given, only an operation of this module is taken: a module's reconciler never takes another's work. */
  module: z.string().min(1).max(64).optional(),
  leaseOwner: z.string().min(1).max(128),
  /** Lease length in **milliseconds**. */
  leaseMs: z.number().int().min(1_000).max(3_600_000),
});

/**
 * Takes over a recovery operation whose lease expired (or was released), under a new fence, and classifies it
 * (docs/design.md §8): a stale `running` operation becomes `failed` (database_atomic: its transaction rolled back),
 * `recovery_required` (compensatable) or `outcome_unknown` (forward-only, irreversible); an unresolved one keeps its
 * state and gets a new holder for reconciliation. A `takeover` checkpoint records the old and the new fence.
 * **Never re-executes the request**: the returned handle only records what the owning module proves.
 *
 * Of two runtimes racing for one operation exactly one wins; the loser gets {@link NothingToTakeOverError} and wrote
 * nothing (the update is guarded by the old fence and chain position).
 * @throws {NothingToTakeOverError} unknown, terminal, another module's (when `module` is given), still leased, or taken
 * by a racer.
 */
export async function takeOverRecoveryOperation(
  store: Store,
  input: { operationId: string; leaseOwner: string; leaseMs: number; module?: string },
): Promise<RecoveryHandle> {
  const { operationId, leaseOwner, leaseMs, module } = parseOrThrow(TakeOverSchema, input, 'input');
  const independent = store.independent();
  const row = await findRecoveryOperation(independent, operationId);
  if (!row || TERMINAL_RECOVERY_STATES.includes(row.state as RecoveryState)) throw new NothingToTakeOverError(operationId);
  if (module !== undefined && row.module !== module) throw new NothingToTakeOverError(operationId);
  const effectClass = row.effect_class as EffectClass;
  const oldState = row.state as RecoveryState;
  const newState: RecoveryState = oldState === 'running' ? TAKEOVER_STATE[effectClass] : oldState;
  const newFence = row.fence + 1;
  const evidenceJson = canonicalJson({ previousFence: row.fence, fence: newFence, fromState: oldState, toState: newState, effectClass, reexecuted: false });
  const hash = checkpointHash({
    operationId,
    seq: row.checkpoint_count,
    kind: 'takeover',
    state: newState,
    fence: newFence,
    previousFence: row.fence,
    evidenceJson,
    prevHash: row.chain_head_hash,
  });
  const terminal = TERMINAL_RECOVERY_STATES.includes(newState);
  await writeIndependently(store, 'the takeover', async (tx) => {
    const changed = await takeOverOperation(tx, {
      operationId,
      oldFence: row.fence,
      oldState,
      expectedCount: row.checkpoint_count,
      newOwner: leaseOwner,
      newState,
      headHash: hash,
      lease: terminal ? 'release' : { extendMs: leaseMs },
    });
    if (changed !== 1) throw new NothingToTakeOverError(operationId);
    await insertCheckpoint(tx, {
      operation_id: operationId,
      seq: row.checkpoint_count,
      kind: 'takeover',
      state: newState,
      fence: newFence,
      previous_fence: row.fence,
      evidence: evidenceJson,
      prev_hash: row.chain_head_hash,
      hash,
    });
  });
  return new RecoveryHandle(store, {
    operationId,
    module: row.module,
    effectClass,
    leaseOwner,
    leaseMs,
    fence: newFence,
    state: newState,
    count: row.checkpoint_count + 1,
    headHash: hash,
  });
}
