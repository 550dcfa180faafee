import { z } from 'zod';
import { AdmitRequestSchema } from '../operations/admission/admission-schema.js';
import { admitOperation } from '../operations/admission/admit-operation.js';
import { OperationIdSchema } from '../operations/operation-id.js';
import { OperationDtoSchema, toNotificationDto, toOperationDto } from '../operations/owner/operation-dto.js';
import { cancelOperation, retryOperation } from '../operations/owner/owner-commands.js';
import {
  getOperation,
  listNotifications,
  ListNotificationsQuerySchema,
  listOperations,
  ListOperationsQuerySchema,
} from '../operations/owner/owner-reads.js';
import { ADMISSION_DESCRIPTION, ADMISSION_PROBLEMS, admissionResponse } from './admission-response.js';
import { conditionalGetResponse } from './conditional-get.js';
import { parseJsonObjectBody } from './json-body.js';
import { jsonResponse } from './json-response.js';
import { NotificationPageDtoSchema, OperationPageDtoSchema } from './page-dto.js';
import type { OwnerRoute } from './route-types.js';

const operationIdParam = z.strictObject({
  id: OperationIdSchema.meta({ description: 'The operation id. A malformed id answers 404, like a missing one or another owner’s.' }),
});

/**
 * The owner's operations and their notifications (docs/design.md §7), each route with its OpenAPI description:
 *
 * - `POST /api/operations` — header `Idempotency-Key` (1–128 of `[A-Za-z0-9._:-]`), body
 *   `{taskType, subject: {type, id}, params?, priority?, delaySeconds? | runAt?}` (the last three where the task type
 *   allows them, docs/design.md §4). New: **202** + `Location: /api/operations/{id}`. Replay of the same
 *   request under the same key: **200** + `Idempotent-Replayed: true` (IETF `Idempotency-Key` header draft), even
 *   when capacity is full. Not entitled: 403; a capacity limit full (`capacity_exhausted`) or the owner's admission
 *   rate bucket empty (`rate_limited`): 429 + `Retry-After` (docs/design.md §4).
 * - `GET /api/operations?status=&taskType=&limit=&cursor=` — 200 `{items, nextCursor}`, newest first.
 * - `GET /api/operations/{id}` — 200 the operation, with a strong `ETag` (`lib/http/conditional-get.ts`) and
 *   `Cache-Control: private, no-cache`; **304** with no body when `If-None-Match` matches it (RFC 9110 §13.1.2).
 * - `POST /api/operations/{id}/cancel` — 200 the operation (`cancelled`, or `running` with `cancelRequested`).
 * - `POST /api/operations/{id}/retry` — 202 the operation (`queued` again); 403 / 429 as admission.
 * - `GET /api/notifications?limit=&cursor=` — 200 `{items, nextCursor}`, the owner's terminal notifications.
 */
export const OPERATION_ROUTES: readonly OwnerRoute[] = [
  {
    access: 'owner',
    method: 'POST',
    path: '/api/operations',
    doc: {
      operationId: 'admitOperation',
      tag: 'operations',
      summary: 'Start an operation',
      description: `${ADMISSION_DESCRIPTION} \`params\` is checked again against the task type's own schema.`,
      idempotencyKey: true,
      body: {
        schema: AdmitRequestSchema,
        description: 'The task type, its subject and its params; where the task type allows them, a per-operation priority and a delay.',
      },
      success: {
        202: { description: 'A new operation was admitted (queued).', schema: OperationDtoSchema, headers: { location: true } },
        200: {
          description: 'A replayed key (with `Idempotent-Replayed: true`), or the active operation of an exclusive subject, reused (with `Location`).',
          schema: OperationDtoSchema,
          headers: { location: false, 'idempotent-replayed': false },
        },
      },
      problems: {
        ...ADMISSION_PROBLEMS,
        400:
          `${ADMISSION_PROBLEMS[400]} Also a \`priority\`, \`delaySeconds\` or \`runAt\` the task type does not allow or outside its bounds, ` +
          'or both delay fields at once; `errors[].path` names the field.',
        404: 'The subject of an exclusive-subject task type is not the owner’s (e.g. `job_not_found`).',
      },
    },
    async handle(scope, deps, event) {
      return admissionResponse(await admitOperation(scope, deps, event.headers?.['idempotency-key'], parseJsonObjectBody(event)));
    },
  },
  {
    access: 'owner',
    method: 'GET',
    path: '/api/operations',
    doc: {
      operationId: 'listOperations',
      tag: 'operations',
      summary: 'List the owner’s operations, newest first',
      description: '`limit` is 1–100 (default 20); pass `nextCursor` back as `cursor` for the next page. The cursor is opaque.',
      query: ListOperationsQuerySchema,
      success: { 200: { description: 'A page of operations.', schema: OperationPageDtoSchema } },
      problems: { 400: 'An invalid filter, limit or cursor.' },
    },
    async handle(scope, _deps, event) {
      const page = await listOperations(scope, event.queryStringParameters ?? {});
      return jsonResponse(200, OperationPageDtoSchema, { items: page.items.map(toOperationDto), nextCursor: page.nextCursor });
    },
  },
  {
    access: 'owner',
    method: 'GET',
    path: '/api/operations/{id}',
    doc: {
      operationId: 'getOperation',
      tag: 'operations',
      summary: 'Read an operation',
      description:
        'Its status, progress, attempts and, once failed, its failure code: poll this `statusUrl` until a terminal status. ' +
        'Send the `ETag` of the last answer back as `If-None-Match`: while the operation has not changed, the answer is `304` with no body.',
      pathParams: operationIdParam,
      conditional: true,
      success: { 200: { description: 'The operation, with the `ETag` of its current version.', schema: OperationDtoSchema, headers: { etag: true } } },
      problems: { 404: 'No such operation for this owner (another owner’s is a 404 too, never a 403).' },
    },
    async handle(scope, _deps, event) {
      // The read is owner-scoped first: another owner's id is a 404 whatever If-None-Match says, never a 304.
      const operation = await getOperation(scope, event.pathParameters?.id);
      return conditionalGetResponse(event, jsonResponse(200, OperationDtoSchema, toOperationDto(operation)));
    },
  },
  {
    access: 'owner',
    method: 'POST',
    path: '/api/operations/{id}/cancel',
    doc: {
      operationId: 'cancelOperation',
      tag: 'operations',
      summary: 'Cancel an operation',
      description: 'A queued or waiting operation is cancelled at once; a running one gets `cancelRequested: true` and stops at its next checkpoint.',
      pathParams: operationIdParam,
      success: { 200: { description: 'The operation: `cancelled`, or `running` with `cancelRequested: true`.', schema: OperationDtoSchema } },
      problems: { 404: 'No such operation for this owner.', 409: 'The operation already succeeded or failed.' },
    },
    async handle(scope, deps, event) {
      return jsonResponse(200, OperationDtoSchema, toOperationDto(await cancelOperation(scope, event.pathParameters?.id, deps)));
    },
  },
  {
    access: 'owner',
    method: 'POST',
    path: '/api/operations/{id}/retry',
    doc: {
      operationId: 'retryOperation',
      tag: 'operations',
      summary: 'Retry a failed or cancelled operation',
      description:
        'Puts a `failed` or `cancelled` operation back to `queued` with a fresh attempt budget, within the owner’s manual-retry ' +
        'budget, entitlement and capacity (checked as at admission).',
      pathParams: operationIdParam,
      success: { 202: { description: 'The operation, `queued` again.', schema: OperationDtoSchema } },
      problems: {
        403: 'The owner is no longer entitled to the task type.',
        404: 'No such operation for this owner, or the subject of an exclusive-subject task is gone.',
        409: 'The operation is not failed or cancelled, its manual-retry budget is used up, or (`subject_busy`, with `statusUrl`) another operation is active on its exclusive subject.',
        429: ADMISSION_PROBLEMS[429],
      },
    },
    async handle(scope, deps, event) {
      return jsonResponse(202, OperationDtoSchema, toOperationDto(await retryOperation(scope, deps, event.pathParameters?.id)));
    },
  },
  {
    access: 'owner',
    method: 'GET',
    path: '/api/notifications',
    doc: {
      operationId: 'listNotifications',
      tag: 'notifications',
      summary: 'List the owner’s terminal notifications, newest first',
      description: '`limit` is 1–100 (default 20); pass `nextCursor` back as `cursor` for the next page.',
      query: ListNotificationsQuerySchema,
      success: { 200: { description: 'A page of notifications.', schema: NotificationPageDtoSchema } },
      problems: { 400: 'An invalid limit or cursor.' },
    },
    async handle(scope, _deps, event) {
      const page = await listNotifications(scope, event.queryStringParameters ?? {});
      return jsonResponse(200, NotificationPageDtoSchema, { items: page.items.map(toNotificationDto), nextCursor: page.nextCursor });
    },
  },
];
