import { LeaseLostError } from '../errors.js';
import type { ClaimedOperation } from '../operations/lease/claim-operation.js';
import { updateUnderLease } from '../operations/lifecycle/lifecycle.repository.js';
import { findOwnedOperation } from '../operations/store/operation.repository.js';
import { assertOwnerScope, type OwnerScope } from '../operations/scopes.js';
import { appendModelAttempt, type ModelAttempt } from './model-provenance.js';

/**
 * Appends one model call's provenance to `operations.model_attempts` under the lease (docs/design.md §5: successful and failed
 * provider attempts persist bounded provider/model/route provenance). Only the lease holder writes the column, so the
 * read-then-write cannot interleave with another writer of it.
 * @throws {LeaseLostError} when the lease is gone; nothing changed.
 * @throws {ScopeViolationError} from anything but the claim owner's scope.
 */
export async function recordModelAttempt(owner: OwnerScope, lease: ClaimedOperation, entry: ModelAttempt): Promise<void> {
  assertOwnerScope(owner);
  const row = await findOwnedOperation(owner.store, owner.ownerUserId, lease.operationId);
  if (!row) throw new LeaseLostError(lease.operationId);
  const changed = await updateUnderLease(owner.store, lease, () => ({ model_attempts: appendModelAttempt(row.model_attempts, entry) }));
  if (changed !== 1) throw new LeaseLostError(lease.operationId);
}
