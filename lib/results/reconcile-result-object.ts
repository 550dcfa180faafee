import type { S3Client } from '@aws-sdk/client-s3';
import type { Store } from '../db/store.js';
import { takeOverRecoveryOperation } from '../recovery/take-over-recovery-operation.js';
import { compensateResultObject } from './compensate-result-object.js';
import { loadResultObjectPlan } from './result-object-plan.js';

/** Input of {@link reconcileResultObject}. */
export interface ReconcileResultObjectInput {
  readonly s3: S3Client;
  readonly store: Store;
  /** The `results.s3` recovery operation to reconcile. */
  readonly operationId: string;
  /** The reconciling runtime, e.g. `recovery-cli:<host>:<pid>`. */
  readonly leaseOwner: string;
  /** Lease of the reconciliation in **milliseconds**. @default 60000 */
  readonly leaseMs?: number;
}

/**
 * The `results.s3` module's reconciliation action: takes over a result-object write whose runtime disappeared (after
 * its lease expired; a stale `running` write becomes `recovery_required`, docs/design.md §8) and compensates it —
 * deleting the object if it is still this write's — to `verified_recovered`. It never re-runs the write.
 * @throws {ValidationError} not a `results.s3` operation (nothing was taken over).
 * @throws {import('../recovery/recovery-errors.js').NothingToTakeOverError} still leased, terminal, or taken by a racer.
 * @throws as {@link compensateResultObject}.
 */
export async function reconcileResultObject(input: ReconcileResultObjectInput): Promise<void> {
  const { s3, store, operationId, leaseOwner, leaseMs = 60_000 } = input;
  await loadResultObjectPlan(store, operationId);
  const handle = await takeOverRecoveryOperation(store, { operationId, leaseOwner, leaseMs });
  await compensateResultObject({ s3, store, handle, reason: 'taken_over' });
}
