import type { TxContext } from '../../db/database.js';
import { SubjectBusyError } from '../../errors.js';
import type { ExclusiveSubject } from '../../tasks/task-definition.js';
import { insertKeyAlias } from '../store/key-alias.repository.js';
import { findActiveForSubject, type OperationRow } from '../store/operation.repository.js';

/** One subject of an exclusive-subject task type, as admission and retry see it. */
export interface SubjectRef {
  readonly ownerUserId: string;
  readonly taskType: string;
  readonly subject: { readonly type: string; readonly id: string };
  readonly rowLocks: boolean;
}

/**
 * In the admission transaction (docs/design.md §2, Idempotency): locks the subject and returns the owner's active operation of the
 * task type on it, binding `key` to it (so a replay of the key answers it again) — or `undefined` when there is none
 * and a new operation may be inserted.
 * @throws the subject's not-found error (404) from `exclusive.lock`.
 * @throws the driver's duplicate-key error when the same key was bound concurrently (the caller replays it).
 */
export async function reuseActiveOperation(
  tx: TxContext,
  exclusive: ExclusiveSubject,
  ref: SubjectRef,
  key: { readonly idempotencyKey: string; readonly requestHash: string },
): Promise<OperationRow | undefined> {
  await exclusive.lock(tx, { ownerUserId: ref.ownerUserId, id: ref.subject.id, rowLocks: ref.rowLocks });
  const active = await findActiveForSubject(tx, ref.ownerUserId, ref.taskType, ref.subject);
  if (!active) return undefined;
  await insertKeyAlias(tx, {
    owner_user_id: ref.ownerUserId,
    task_type: ref.taskType,
    idempotency_key: key.idempotencyKey,
    request_hash: key.requestHash,
    operation_id: active.id,
  });
  return active;
}

/**
 * In the owner-retry transaction: locks the subject and refuses when another operation of the task type is active on it.
 * @throws {SubjectBusyError} another operation is active on the subject (409, naming its status URL).
 * @throws the subject's not-found error (404) from `exclusive.lock`.
 */
export async function assertSubjectFree(tx: TxContext, exclusive: ExclusiveSubject, ref: SubjectRef): Promise<void> {
  await exclusive.lock(tx, { ownerUserId: ref.ownerUserId, id: ref.subject.id, rowLocks: ref.rowLocks });
  const active = await findActiveForSubject(tx, ref.ownerUserId, ref.taskType, ref.subject);
  if (active) throw new SubjectBusyError(active.id);
}
