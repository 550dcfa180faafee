import fc from 'fast-check';
import type { PublishedSnapshot } from '../../lib/features/strategy-snapshot/strategy-snapshot.js';
import type { JobRow } from '../../lib/jobs/job.repository.js';
import type { NotificationRow } from '../../lib/operations/store/notification.repository.js';
import type { OperationRow } from '../../lib/operations/store/operation.repository.js';
import { FAILURE_CODES } from '../../lib/operations/lifecycle/failure-code.js';
import { ALL_STATUSES, TERMINAL_STATUSES } from '../../lib/operations/lifecycle/operation-status.js';

/**
 * Random rows for the DTO-hygiene properties: every column arbitrary within its schema bounds (lengths in code points,
 * as both databases count them; numbers inside their CHECK ranges; timestamps in the drivers' text format). The
 * private columns get values long enough (≥ 16 characters) that finding one inside a DTO's JSON can only be a leak.
 */

/**
 * A `failure_code` column: null, or one of the closed set every write takes (`FailureCode`); the DTOs refuse anything
 * else as a corrupted row.
 */
const failureCodeArb = fc.option(fc.constantFrom(...FAILURE_CODES), { nil: null });

/** Any Unicode text (well-formed: no lone surrogates, which neither database can store) of `min`–`max` code points. */
export const text = (minLength: number, maxLength: number) => fc.string({ unit: 'binary', minLength, maxLength });

/** A timestamp as the drivers return it: `YYYY-MM-DD HH:MM:SS.ffffff`, UTC. */
export const dbTimeArb = fc
  .tuple(fc.date({ min: new Date('2000-01-01T00:00:00Z'), max: new Date('2099-12-31T23:59:59Z'), noInvalidDate: true }), fc.nat({ max: 999 }))
  .map(([date, micros]) => `${date.toISOString().slice(0, 23).replace('T', ' ')}${String(micros).padStart(3, '0')}`);

const hex64 = fc.stringMatching(/^[0-9a-f]{64}$/);
const id = fc.uuid();

/**
 * An owner id that cannot occur in a DTO by chance, and that the owner-id rule admits (lib/owners/owner-user-id.ts:
 * no control or format characters).
 */
export const ownerIdArb = text(16, 128).map((id) => id.replace(/[\p{Cc}\p{Cf}]/gu, 'o').padEnd(16, 'o'));

/** Canonical-looking params JSON holding a distinctive value, at most 4096 characters. */
const paramsJsonArb = fc
  .tuple(fc.dictionary(fc.string({ maxLength: 10 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 3 }), text(16, 200))
  .map(([params, marker]) => JSON.stringify({ ...params, rawContent: marker }).slice(0, 4096));

/** A row of `operations`. */
export const operationRowArb: fc.Arbitrary<OperationRow> = fc.record({
  id,
  owner_user_id: ownerIdArb,
  task_type: text(1, 64),
  idempotency_key: fc.stringMatching(/^[A-Za-z0-9._:-]{16,128}$/),
  request_hash: hex64,
  subject_type: text(1, 64),
  subject_id: text(1, 128),
  params_json: paramsJsonArb,
  status: fc.constantFrom(...ALL_STATUSES),
  privacy_mode: fc.constantFrom('local_only', 'external_allowed'),
  priority: fc.integer({ min: -1000, max: 1000 }),
  attempt: fc.integer({ min: 0, max: 100 }),
  max_attempts: fc.integer({ min: 1, max: 100 }),
  retry_count: fc.integer({ min: 0, max: 1000 }),
  lease_token: fc.option(hex64, { nil: null }),
  lease_expires_at: fc.option(dbTimeArb, { nil: null }),
  heartbeat_at: fc.option(dbTimeArb, { nil: null }),
  cancel_requested_at: fc.option(dbTimeArb, { nil: null }),
  cancel_requested_by: fc.option(text(16, 128), { nil: null }),
  progress_percent: fc.integer({ min: 0, max: 100 }),
  progress_stage: fc.option(text(1, 64), { nil: null }),
  failure_code: failureCodeArb,
  failure_message: fc.option(text(16, 512), { nil: null }),
  deadline_at: dbTimeArb,
  available_at: fc.option(dbTimeArb, { nil: null }),
  wake_at: fc.option(dbTimeArb, { nil: null }),
  created_at: dbTimeArb,
  updated_at: dbTimeArb,
  started_at: fc.option(dbTimeArb, { nil: null }),
  finished_at: fc.option(dbTimeArb, { nil: null }),
  model_attempts: fc.option(
    fc.tuple(text(16, 100), text(16, 100)).map(([provider, model]) => JSON.stringify([{ provider, model, route: 'external' }]).slice(0, 1024)),
    { nil: null },
  ),
  claim_lane: fc.constantFrom<'L' | 'X' | null>('L', 'X', null),
});

/** The columns of an operation row the owner API must never show (docs/design.md §7), whatever they hold. */
export const PRIVATE_OPERATION_COLUMNS = [
  'owner_user_id',
  'idempotency_key',
  'request_hash',
  'params_json',
  'lease_token',
  'lease_expires_at',
  'heartbeat_at',
  'failure_message',
  'cancel_requested_by',
  'model_attempts',
  'privacy_mode',
  'priority',
  'wake_at',
] as const satisfies readonly (keyof OperationRow)[];

/** A row of `operation_notifications`. */
export const notificationRowArb: fc.Arbitrary<NotificationRow> = fc.record({
  operation_id: id,
  owner_user_id: ownerIdArb,
  task_type: text(1, 64),
  status: fc.constantFrom(...TERMINAL_STATUSES),
  failure_code: failureCodeArb,
  cycle: fc.integer({ min: 0, max: 1000 }),
  created_at: dbTimeArb,
});

/** A row of `jobs`: the owner's own text is shown back to them; the owner id never is. */
export const jobRowArb: fc.Arbitrary<JobRow> = fc.record({
  id,
  owner_user_id: ownerIdArb,
  title: text(1, 200),
  company: text(1, 200),
  description: text(1, 2_000),
  created_at: dbTimeArb,
  updated_at: dbTimeArb,
});

const point = text(1, 240).filter((s) => s.trim().length > 0);

/** A published strategy snapshot (the validated model answer and its timestamps). */
export const publishedSnapshotArb: fc.Arbitrary<PublishedSnapshot> = fc.record({
  jobId: id,
  snapshot: fc.record({
    summary: text(1, 800).filter((s) => s.trim().length > 0),
    strengths: fc.array(point, { minLength: 1, maxLength: 5 }),
    risks: fc.array(point, { maxLength: 5 }),
    questionsToAsk: fc.array(point, { maxLength: 5 }),
    nextSteps: fc.array(point, { minLength: 1, maxLength: 5 }),
  }),
  operationId: id,
  createdAt: fc.date({ noInvalidDate: true, min: new Date('2000-01-01T00:00:00Z'), max: new Date('2099-12-31T00:00:00Z') }).map((d) => d.toISOString()),
  updatedAt: fc.date({ noInvalidDate: true, min: new Date('2000-01-01T00:00:00Z'), max: new Date('2099-12-31T00:00:00Z') }).map((d) => d.toISOString()),
});

/**
 * Fields a future column or a careless spread could add to a row or a service result: provenance, lease and owner
 * data, result references. A DTO builder copies by allow-list, so none may come out.
 */
export const smuggledFieldsArb = fc.record({
  leaseToken: hex64,
  lease_owner: ownerIdArb,
  ownerUserId: ownerIdArb,
  idempotencyKey: fc.stringMatching(/^[A-Za-z0-9._:-]{16,64}$/),
  provider: text(16, 40),
  model: text(16, 40),
  route: text(16, 40),
  result_ref: text(16, 80).map((s) => `s3://bucket/${s}`),
  params: fc.dictionary(fc.string({ maxLength: 8 }), text(16, 40), { minKeys: 1, maxKeys: 2 }),
});
