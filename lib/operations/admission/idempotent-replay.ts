import type { DbContext } from '../../db/database.js';
import { IdempotencyKeyReusedError } from '../../errors.js';
import { findKeyAlias } from '../store/key-alias.repository.js';
import { findByIdempotencyKey, findOwnedOperation, type OperationRow } from '../store/operation.repository.js';

/**
 * The operation an idempotency key already names for this owner and task type, if any (docs/design.md §2, §7): the operation
 * admitted under it or — with `withAliases`, for task types with an exclusive subject — the active operation it was
 * answered with (`operation_key_aliases`). `latest` (MariaDB, inside a caller's transaction): the reads take the latest
 * committed rows (`LOCK IN SHARE MODE`), not the caller's REPEATABLE READ snapshot, which may predate the row whose
 * duplicate key the admission's insert just hit.
 * @throws {IdempotencyKeyReusedError} the key was used with a different request (canonical hash differs; HTTP 422).
 */
export async function findReplay(
  ctx: DbContext,
  ownerUserId: string,
  taskType: string,
  key: string,
  hash: string,
  withAliases: boolean,
  latest = false,
): Promise<OperationRow | undefined> {
  const admitted = await findByIdempotencyKey(ctx, ownerUserId, taskType, key, latest);
  if (admitted) {
    if (admitted.request_hash !== hash) throw new IdempotencyKeyReusedError();
    return admitted;
  }
  if (!withAliases) return undefined;
  const alias = await findKeyAlias(ctx, ownerUserId, taskType, key, latest);
  if (!alias) return undefined;
  if (alias.request_hash !== hash) throw new IdempotencyKeyReusedError();
  return findOwnedOperation(ctx, ownerUserId, alias.operation_id, latest);
}
