import { DeleteObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import type { Store } from '../db/store.js';
import { InvalidRecoveryMoveError } from '../recovery/recovery-errors.js';
import type { RecoveryHandle } from '../recovery/recovery-handle.js';
import type { RecoveryState } from '../recovery/recovery-model.js';
import { headResultObject } from './head-result-object.js';
import { ResultObjectStillPresentError } from './result-errors.js';
import { loadResultObjectPlan } from './result-object-plan.js';

/** The states compensation starts from; anything else is refused before S3 is touched. */
const COMPENSABLE: readonly RecoveryState[] = ['running', 'recovery_required', 'recovering'];

/** Input of {@link compensateResultObject}. */
export interface CompensateResultObjectInput {
  readonly s3: S3Client;
  readonly store: Store;
  /** The claimed `results.s3` operation: from `writeResultObject`, or from a takeover. */
  readonly handle: RecoveryHandle;
  /** Why, as an opaque code recorded in the `recovery_required` checkpoint, e.g. `run_cancelled`. */
  readonly reason: string;
}

/**
 * Undoes a result-object write through the ledger (docs/design.md §8 compensation), from wherever it stopped:
 *
 * ```
 *  running ──requireRecovery {reason}──▶ recovery_required ──startRecovery──▶ recovering
 *    ──▶ HeadObject: ours? DeleteObject ──▶ HeadObject ──▶ verifyRecovered {object_absent | object_replaced}
 * ```
 *
 * The object is read from the operation's committed recovery plan. It is deleted only while its
 * `x-amz-meta-recovery-operation` still names this operation: an object a later attempt wrote at the same key is left
 * alone and the check records `object_replaced` (this write's effect is gone either way). Deleting an absent object
 * is not needed, so an interrupted put that never landed verifies as `object_absent`. Re-running after any failure
 * continues from the recorded state. Sources: AWS S3 API reference, DeleteObject and HeadObject (404 when absent).
 * @throws {ResultObjectStillPresentError} the object this operation wrote is still there after DeleteObject (state
 *   stays `recovering`).
 * @throws {InvalidRecoveryMoveError} the operation is terminal or `outcome_unknown`; S3 was not touched.
 * @throws {import('../recovery/recovery-errors.js').StaleFenceError} another runtime took the operation over.
 * @throws {ValidationError} the handle is not a `results.s3` operation.
 */
export async function compensateResultObject(input: CompensateResultObjectInput): Promise<void> {
  const { s3, store, handle, reason } = input;
  if (!COMPENSABLE.includes(handle.state)) throw new InvalidRecoveryMoveError(handle.operationId, handle.state, 'compensate');
  const { objectRef, bucket, key } = await loadResultObjectPlan(store, handle.operationId);
  if (handle.state === 'running') await handle.requireRecovery({ reason });
  if (handle.state === 'recovery_required') await handle.startRecovery({ action: 'delete_object', objectRef });
  const before = await headResultObject(s3, bucket, key);
  const ours = before !== undefined && before.writer === handle.operationId;
  if (ours) await s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: key }));
  const after = await headResultObject(s3, bucket, key);
  if (after !== undefined && after.writer === handle.operationId) throw new ResultObjectStillPresentError(handle.operationId);
  await handle.verifyRecovered({
    checks: [
      after === undefined
        ? { name: 'object_absent', evidence: { objectRef, headStatus: 'HTTP_404', deleted: ours } }
        : { name: 'object_replaced', evidence: { objectRef, headStatus: 'HTTP_200', deleted: ours, replacedByOtherWriter: true } },
    ],
  });
}
