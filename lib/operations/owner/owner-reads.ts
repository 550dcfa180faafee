import { z } from 'zod';
import { LimitSchema, pageOf, type Page } from '../../paging/page.js';
import { OperationIdSchema } from '../operation-id.js';
import { OperationNotFoundError } from '../../errors.js';
import { decodeCursor, encodeCursor } from '../../paging/list-cursor.js';
import { listOwnerNotifications, type NotificationRow } from '../store/notification.repository.js';
import { findOwnedOperation, listOwnedOperations, type OperationRow } from '../store/operation.repository.js';
import { ALL_STATUSES, type OperationStatus } from '../lifecycle/operation-status.js';
import { TASK_TYPE_PATTERN } from '../../validation/field-limits.js';
import { assertOwnerScope, type OwnerScope } from '../scopes.js';
import { parseOrThrow } from '../../validation/parse-or-throw.js';

/** Query of `GET /api/operations` (docs/design.md §7): `limit` 1–100 (default 20), opaque `cursor`. */
export const ListOperationsQuerySchema = z
  .object({
    status: z.enum(ALL_STATUSES as [OperationStatus, ...OperationStatus[]]).optional(),
    taskType: z.string().regex(TASK_TYPE_PATTERN).optional(),
    limit: LimitSchema,
    cursor: z.string().min(1).max(200).optional(),
  })
  .strict();

/** Query of `GET /api/notifications`: `limit` 1–100 (default 20), opaque `cursor`. */
export const ListNotificationsQuerySchema = z
  .object({
    limit: LimitSchema,
    cursor: z.string().min(1).max(200).optional(),
  })
  .strict();

/**
 * The owner's operation `id`.
 * @throws {OperationNotFoundError} when it does not exist or belongs to another owner (indistinguishable: 404).
 */
export async function getOperation(scope: OwnerScope, id: unknown): Promise<OperationRow> {
  assertOwnerScope(scope);
  const parsed = OperationIdSchema.safeParse(id);
  const row = parsed.success ? await findOwnedOperation(scope.store, scope.ownerUserId, parsed.data) : undefined;
  if (!row) throw new OperationNotFoundError(String(id));
  return row;
}

/**
 * The owner's operations, newest first, filtered and paged by an opaque keyset cursor.
 * @throws {ValidationError} for an invalid query or cursor.
 */
export async function listOperations(scope: OwnerScope, query: unknown): Promise<Page<OperationRow>> {
  assertOwnerScope(scope);
  const q = parseOrThrow(ListOperationsQuerySchema, query, 'query');
  const after = q.cursor ? decodeCursor(q.cursor) : undefined;
  const rows = await listOwnedOperations(scope.store, scope.ownerUserId, { status: q.status, taskType: q.taskType, limit: q.limit + 1, after });
  return pageOf(rows, q.limit, (last) => encodeCursor({ createdAt: last.created_at, id: last.id }));
}

/**
 * The owner's terminal notifications, newest first.
 * @throws {ValidationError} for an invalid query or cursor.
 */
export async function listNotifications(scope: OwnerScope, query: unknown): Promise<Page<NotificationRow>> {
  assertOwnerScope(scope);
  const q = parseOrThrow(ListNotificationsQuerySchema, query, 'query');
  const position = q.cursor ? decodeCursor(q.cursor) : undefined;
  const after = position ? { createdAt: position.createdAt, id: position.id, cycle: position.cycle ?? 0 } : undefined;
  const rows = await listOwnerNotifications(scope.store, scope.ownerUserId, q.limit + 1, after);
  return pageOf(rows, q.limit, (last) => encodeCursor({ createdAt: last.created_at, id: last.operation_id, cycle: last.cycle }));
}
