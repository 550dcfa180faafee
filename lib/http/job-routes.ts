import { z } from 'zod';
import { readStrategySnapshot, requestStrategySnapshot } from '../features/strategy-snapshot/strategy-snapshot.js';
import { StrategySnapshotDtoSchema, toStrategySnapshotDto } from '../features/strategy-snapshot/strategy-snapshot-dto.js';
import { JobDtoSchema, jobUrlOf, toJobDto } from '../jobs/job-dto.js';
import { createJob, CreateJobSchema, getJob, JobIdSchema } from '../jobs/jobs.js';
import { OperationDtoSchema } from '../operations/owner/operation-dto.js';
import { ADMISSION_DESCRIPTION, ADMISSION_PROBLEMS, admissionResponse } from './admission-response.js';
import { MAX_JOB_BODY_BYTES, parseJsonObjectBody } from './json-body.js';
import { jsonResponse } from './json-response.js';
import type { OwnerRoute } from './route-types.js';

const jobIdParam = z.strictObject({
  jobId: JobIdSchema.meta({ description: 'The job id. A malformed id answers 404, like a missing one or another owner’s.' }),
});

/**
 * The owner's jobs and the strategy snapshot of a job (docs/design.md §7 feature producer), each route with its OpenAPI
 * description:
 *
 * - `POST /api/jobs` — body `{title, company, description}` (title and company trimmed, then 1–200 characters;
 *   description 1–20,000 characters, stored as sent; no other key): **201** + `Location: /api/jobs/{id}` + the job.
 *   Each POST creates a job (no idempotency key). Its body may be up to `MAX_JOB_BODY_BYTES` (256 KiB).
 * - `GET /api/jobs/{jobId}` — 200 the job; another owner's job, a missing one and a malformed id are the same 404.
 * - `POST /api/jobs/{jobId}/strategy-snapshot` — header `Idempotency-Key`, no body: **202** + `Location` and the new
 *   `strategy.snapshot` operation; **200** with the same operation for a replayed key (`Idempotent-Replayed: true`) or
 *   while one is already active for the job. 404 job, 403 / 429 as admission.
 * - `GET /api/jobs/{jobId}/strategy-snapshot` — cache only, never starts model work: 200 the published snapshot, or 404
 *   `snapshot_not_found` whose `statusUrl` names the active operation producing it, when there is one.
 */
export const JOB_ROUTES: readonly OwnerRoute[] = [
  {
    access: 'owner',
    method: 'POST',
    path: '/api/jobs',
    doc: {
      operationId: 'createJob',
      tag: 'jobs',
      summary: 'Create a job',
      description:
        'Title and company are trimmed, then 1–200 characters; the description (1–20,000 characters) is stored as sent. ' +
        'The body may be up to 256 KiB. Each POST creates a job: there is no idempotency key.',
      body: { schema: CreateJobSchema, description: 'The job’s title, company and description.' },
      success: { 201: { description: 'The job was created.', schema: JobDtoSchema, headers: { location: true } } },
      problems: { 400: 'An invalid or oversized body.' },
    },
    async handle(scope, _deps, event) {
      const dto = toJobDto(await createJob(scope, parseJsonObjectBody(event, MAX_JOB_BODY_BYTES)));
      return jsonResponse(201, JobDtoSchema, dto, { location: jobUrlOf(dto.id) });
    },
  },
  {
    access: 'owner',
    method: 'GET',
    path: '/api/jobs/{jobId}',
    doc: {
      operationId: 'getJob',
      tag: 'jobs',
      summary: 'Read a job',
      description: 'The job as it was created: title, company and description.',
      pathParams: jobIdParam,
      success: { 200: { description: 'The job.', schema: JobDtoSchema } },
      problems: { 404: 'No such job for this owner (`job_not_found`).' },
    },
    async handle(scope, _deps, event) {
      return jsonResponse(200, JobDtoSchema, toJobDto(await getJob(scope, event.pathParameters?.jobId)));
    },
  },
  {
    access: 'owner',
    method: 'POST',
    path: '/api/jobs/{jobId}/strategy-snapshot',
    doc: {
      operationId: 'requestStrategySnapshot',
      tag: 'strategy snapshot',
      summary: 'Start producing a job’s strategy snapshot',
      description:
        `A feature producer (docs/design.md §7): it calls the same admission as \`POST /api/operations\`, with no body. ${ADMISSION_DESCRIPTION} ` +
        'While a `strategy.snapshot` operation is active for the job, it answers **200** with that operation (and `Location`).',
      idempotencyKey: true,
      pathParams: jobIdParam,
      success: {
        202: { description: 'A new `strategy.snapshot` operation was admitted.', schema: OperationDtoSchema, headers: { location: true } },
        200: {
          description: 'A replayed key (with `Idempotent-Replayed: true`), or the operation already active for the job (with `Location`).',
          schema: OperationDtoSchema,
          headers: { location: false, 'idempotent-replayed': false },
        },
      },
      problems: {
        ...ADMISSION_PROBLEMS,
        400: 'Missing or malformed `Idempotency-Key`.',
        404: 'No such job for this owner (`job_not_found`).',
        422: 'The `Idempotency-Key` was already used for another job.',
      },
    },
    async handle(scope, deps, event) {
      return admissionResponse(await requestStrategySnapshot(scope, deps, event.pathParameters?.jobId, event.headers?.['idempotency-key']));
    },
  },
  {
    access: 'owner',
    method: 'GET',
    path: '/api/jobs/{jobId}/strategy-snapshot',
    doc: {
      operationId: 'readStrategySnapshot',
      tag: 'strategy snapshot',
      summary: 'Read a job’s published strategy snapshot (cache only)',
      description: 'Never starts model work: it reads the published snapshot or answers 404.',
      pathParams: jobIdParam,
      success: { 200: { description: 'The published snapshot.', schema: StrategySnapshotDtoSchema } },
      problems: {
        404: '`job_not_found`, or `snapshot_not_found` — with `statusUrl` naming the operation producing it, when one is active.',
      },
    },
    async handle(scope, _deps, event) {
      return jsonResponse(200, StrategySnapshotDtoSchema, toStrategySnapshotDto(await readStrategySnapshot(scope, event.pathParameters?.jobId)));
    },
  },
];
