import { z } from 'zod';
import { OperationNotFoundError } from '../errors.js';
import { decodeCursor, encodeCursor } from './list-cursor.js';
import { listOwnerNotifications, type NotificationRow } from './notification.repository.js';
import { findOwnedOperation, listOwnedOperations, type OperationRow } from './operation.repository.js';
import { ALL_STATUSES, type OperationStatus } from './operation-status.js';
import { TASK_TYPE_PATTERN } from './field-limits.js';
import { assertOwnerScope, type OwnerScope } from './scopes.js';
import { parseOrThrow } from './zod-issues.js';

/** A page size in a query string: 1–100, plain decimal digits only (no `1e2`, `0x10`, `+5`), default 20. */
export const LimitSchema = z
  .string()
  .regex(/^[1-9]\d{0,2}$/, 'must be a whole number 1–100')
  .transform(Number)
  .pipe(z.number().max(100, 'must be a whole number 1–100'))
  .default(20)
  // What a client sends, for the OpenAPI document: the integer the digits spell (the schema itself parses the string).
  .meta({ type: 'integer', minimum: 1, maximum: 100, default: 20, description: 'Page size: 1–100, plain decimal digits.' });

/** An operation id: a lower-case UUID. */
export const OperationIdSchema = z.string().regex(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/, 'must be an operation id');

/** Query of `GET /api/operations` (DESIGN §7): `limit` 1–100 (default 20), opaque `cursor`. */
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

/** A page of rows and the cursor of the next page (null on the last page). */
export interface Page<T> {
  readonly items: T[];
  readonly nextCursor: string | null;
}

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

/** The first `limit` rows of `rows` (fetched as `limit + 1`) and the cursor of the next page, if there is one. */
export function pageOf<T>(rows: T[], limit: number, cursorOf: (last: T) => string): Page<T> {
  const items = rows.slice(0, limit);
  const last = items[items.length - 1];
  return { items, nextCursor: rows.length > limit && last !== undefined ? cursorOf(last) : null };
}
