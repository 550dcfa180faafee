import { admitOperation, type Admission, type AdmissionDeps } from '../../operations/admission/admit-operation.js';
import { findActiveForSubject } from '../../operations/store/operation.repository.js';
import { assertOwnerScope, type OwnerScope } from '../../operations/scopes.js';
import { parseDbTime } from '../../db/db-time.js';
import { SnapshotNotFoundError } from '../../errors.js';
import { getJob } from '../../jobs/jobs.js';
import { findNote } from '../../jobs/workspace-note.repository.js';
import { STRATEGY_SNAPSHOT_NOTE_KIND, StrategySnapshotSchema, type StrategySnapshot } from './strategy-snapshot-output.js';
import { JOB_SUBJECT_TYPE, STRATEGY_SNAPSHOT_TASK_TYPE } from './strategy-snapshot-task.js';

/**
 * Requests a strategy snapshot of the owner's job (docs/design.md §7 feature producer): the same admission as
 * `POST /api/operations` (idempotency key, entitlement, capacity, deadline, privacy snapshot), with only the job
 * reference as subject. `strategy.snapshot` has an exclusive subject: in the admission transaction the job row is
 * locked and the owner's active `strategy.snapshot` operation on it, if any, is returned instead (`reused`, the key bound
 * to it), so concurrent requests for one job — whatever their keys — end with one operation.
 * @returns the {@link Admission}: new (`replayed` and `reused` false: HTTP 202), or an existing one (HTTP 200).
 * @throws {JobNotFoundError} the job is missing, another owner's, or the id malformed (404); nothing written.
 * @throws the errors of `admitOperation`: 400 key, 403 not entitled, 422 key reused, 429 capacity.
 */
export async function requestStrategySnapshot(scope: OwnerScope, deps: AdmissionDeps, jobId: unknown, idempotencyKey: unknown): Promise<Admission> {
  const job = await getJob(scope, jobId);
  return admitOperation(scope, deps, idempotencyKey, { taskType: STRATEGY_SNAPSHOT_TASK_TYPE, subject: { type: JOB_SUBJECT_TYPE, id: job.id }, params: {} });
}

/** A published strategy snapshot: the validated answer and when it was written (ISO-8601 UTC strings). */
export interface PublishedSnapshot {
  readonly jobId: string;
  readonly snapshot: StrategySnapshot;
  readonly operationId: string;
  readonly createdAt: string;
  readonly updatedAt: string;
}

/**
 * Reads the owner's strategy snapshot of a job from the cache only — it never starts model work (docs/design.md §7).
 * @throws {JobNotFoundError} the job is missing, another owner's, or the id malformed (404).
 * @throws {SnapshotNotFoundError} no snapshot yet (404); it names the active operation, if one is producing it.
 */
export async function readStrategySnapshot(scope: OwnerScope, jobId: unknown): Promise<PublishedSnapshot> {
  assertOwnerScope(scope);
  const job = await getJob(scope, jobId);
  const note = await findNote(scope.store, scope.ownerUserId, job.id, STRATEGY_SNAPSHOT_NOTE_KIND);
  if (!note) {
    const active = await findActiveForSubject(scope.store, scope.ownerUserId, STRATEGY_SNAPSHOT_TASK_TYPE, { type: JOB_SUBJECT_TYPE, id: job.id });
    throw new SnapshotNotFoundError(active?.id);
  }
  return {
    jobId: job.id,
    // Validated before it was published; parsed again so a hand-edited row can never reach a client unchecked.
    snapshot: StrategySnapshotSchema.parse(JSON.parse(note.content_json)),
    operationId: note.operation_id,
    createdAt: parseDbTime(note.created_at).toISOString(),
    updatedAt: parseDbTime(note.updated_at).toISOString(),
  };
}
