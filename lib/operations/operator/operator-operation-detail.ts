import { z } from 'zod';
import type { Store } from '../../db/store.js';
import { parseDbTime } from '../../db/db-time.js';
import { failureCodeOf, NullableFailureCodeSchema } from '../lifecycle/failure-code.js';
import { listLatestNotificationsOf, type NotificationRow } from '../store/notification.repository.js';
import { listLatestEventsOf } from '../store/operation-event.repository.js';
import { TimelineEventSchema, toTimelineEvent } from './operation-timeline.js';
import { getOperationForOperator, OperatorOperationViewSchema, toOperatorView } from './operator-operations.js';

/** Most timeline events and notifications one detail shows: the latest ones (an operation retried many times has more). */
export const MAX_DETAIL_ITEMS = 500;

/**
 * One terminal notification of an operation as an operator sees it: the `cycle` it ended (owner retries before it), the
 * terminal `status`, the bounded `failureCode` (or null) and `createdAt` (ISO-8601 UTC).
 */
export const NotificationViewSchema = z.strictObject({
  cycle: z.number().int().min(0),
  status: z.enum(['succeeded', 'failed', 'cancelled']),
  failureCode: NullableFailureCodeSchema,
  createdAt: z.string().datetime(),
}).meta({ id: 'OperatorNotificationView' });

/** See {@link NotificationViewSchema}. */
export type NotificationView = z.infer<typeof NotificationViewSchema>;

/**
 * Body of `GET /api/ops/operations/{id}`: the operator view of the operation, its timeline (every change of
 * status or attempt, oldest first) and its terminal notifications (oldest cycle first) — at most the latest
 * {@link MAX_DETAIL_ITEMS} of each. Never a lease token, idempotency key, request hash or params.
 */
export const OperatorOperationDetailSchema = z
  .strictObject({
    operation: OperatorOperationViewSchema,
    timeline: z.array(TimelineEventSchema).max(MAX_DETAIL_ITEMS),
    notifications: z.array(NotificationViewSchema).max(MAX_DETAIL_ITEMS),
  })
  .meta({ id: 'OperatorOperationDetail' });

/** See {@link OperatorOperationDetailSchema}. */
export type OperatorOperationDetail = z.infer<typeof OperatorOperationDetailSchema>;

function toNotificationView(row: NotificationRow): NotificationView {
  return {
    cycle: row.cycle,
    status: row.status as NotificationView['status'],
    failureCode: failureCodeOf(row.failure_code),
    createdAt: parseDbTime(row.created_at).toISOString(),
  };
}

/**
 * One operation, whoever owns it, with its timeline and notifications (operators only: the route needs `ops:read`).
 * Three reads, each by primary key or index range.
 * @throws {OperationNotFoundError} for an unknown or malformed id (404).
 */
export async function getOperationDetailForOperator(store: Store, id: unknown): Promise<OperatorOperationDetail> {
  const row = await getOperationForOperator(store, id);
  const events = await listLatestEventsOf(store, row.id, MAX_DETAIL_ITEMS);
  const notifications = await listLatestNotificationsOf(store, row.id, MAX_DETAIL_ITEMS);
  return {
    operation: toOperatorView(row),
    timeline: events.reverse().map(toTimelineEvent),
    notifications: notifications.reverse().map(toNotificationView),
  };
}
