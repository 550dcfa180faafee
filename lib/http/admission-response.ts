import type { Admission } from '../operations/admission/admit-operation.js';
import { OperationDtoSchema, toOperationDto } from '../operations/owner/operation-dto.js';
import { jsonResponse } from './json-response.js';
import type { ProblemStatus } from './route-doc.js';
import type { ApiResult } from './route-types.js';

/**
 * How the routes that admit an operation (docs/design.md §7: `POST /api/operations` and the feature producers) answer, and
 * how their OpenAPI descriptions say so.
 */

/**
 * The answer to an admission (docs/design.md §7): 202 + `Location` for a new operation; 200 + `Idempotent-Replayed: true` for a
 * replayed key; 200 + `Location` for the active operation of an exclusive subject, reused.
 */
export function admissionResponse({ operation, replayed, reused }: Admission): ApiResult {
  const dto = toOperationDto(operation);
  if (replayed) return jsonResponse(200, OperationDtoSchema, dto, { 'idempotent-replayed': 'true' });
  return jsonResponse(reused ? 200 : 202, OperationDtoSchema, dto, { location: dto.statusUrl });
}

/** The problems of an admission (docs/design.md §4, §7), shared by `POST /api/operations` and the feature producer. */
export const ADMISSION_PROBLEMS = {
  400: 'Missing or malformed `Idempotency-Key`, or an invalid body, task type or params.',
  403: 'The owner is not entitled to the task type (plan or `aiEnabled`); nothing was written.',
  422: 'The `Idempotency-Key` was already used for a different request.',
  429:
    'A capacity limit (the owner’s or the service’s) is full (`code: capacity_exhausted`), or the owner is admitting this task type ' +
    'faster than its admission rate allows (`code: rate_limited`: the owner’s token bucket is empty; `Retry-After` is the wait until ' +
    'it holds a token again). Retry after `Retry-After` seconds; nothing was written. A replayed key is never refused for capacity or rate.',
} as const satisfies { readonly [S in ProblemStatus]?: string };

/** The rules of the `Idempotency-Key` and of replay, in CommonMark: the start of every admitting route's description. */
export const ADMISSION_DESCRIPTION =
  '`Idempotency-Key` is 1–128 characters of `[A-Za-z0-9._:-]`. A new request answers **202** with `Location`; the same ' +
  'request again under the same key answers **200** with the same operation and `Idempotent-Replayed: true`.';
