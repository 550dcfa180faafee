import { z } from 'zod';
import { charCount, JobLimits } from '../../jobs/job-limits.js';
import { findOwnedJob, lockOwnedJob } from '../../jobs/job.repository.js';
import { ModelCallError } from '../../models/model-errors.js';
import { JobNotFoundError } from '../../errors.js';
import { upsertNote } from '../../jobs/workspace-note.repository.js';
import { defineTask, PermanentTaskError, SubjectNotFoundError } from '../../tasks/task-definition.js';
import { STRATEGY_SNAPSHOT_NOTE_KIND, StrategySnapshotSchema } from './strategy-snapshot-output.js';
import { strategySnapshotMessages } from './strategy-snapshot-prompt.js';

/** The task type of the strategy-snapshot feature. */
export const STRATEGY_SNAPSHOT_TASK_TYPE = 'strategy.snapshot';

/** The subject type its operations store: only the job reference, never the job's text (docs/design.md §2). */
export const JOB_SUBJECT_TYPE = 'job';

/**
 * `strategy.snapshot`, the first production AI task (docs/design.md §5, §7): one attempt rehydrates the owner's job through
 * the owner scope, makes **one** structured model request on the local route, validates the whole answer
 * ({@link StrategySnapshotSchema}), and returns the note as a completion — so the note is written in the same
 * transaction as `succeeded`, under the lease, or not at all. Deliberately **not** on the external allowlist: a job
 * posting the owner pasted stays on local model routes whatever the owner's privacy mode. Requires `aiEnabled`; runs on
 * the capacity route `local-model` (its limit bounds concurrent local inferences across workers).
 */
export const strategySnapshotTask = defineTask({
  type: STRATEGY_SNAPSHOT_TASK_TYPE,
  paramsSchema: z.strictObject({}),
  priority: 10,
  timeoutMs: 150_000,
  entitlement: { aiEnabled: true },
  capacityRoute: 'local-model',
  model: { externalAllowed: false },
  exclusiveSubject: {
    type: JOB_SUBJECT_TYPE,
    lock: async (tx, job) => {
      if (!(await lockOwnedJob(tx, job.ownerUserId, job.id, job.rowLocks))) throw new JobNotFoundError(job.id);
    },
  },
  async run({ operationId, scope, subject, model, reportProgress }) {
    if (subject.type !== JOB_SUBJECT_TYPE) throw new PermanentTaskError(`strategy.snapshot needs a ${JOB_SUBJECT_TYPE} subject`);
    if (!model) throw new PermanentTaskError('strategy.snapshot ran without a model route');
    const job = await findOwnedJob(scope.store, scope.ownerUserId, subject.id);
    if (!job) throw new SubjectNotFoundError('the job no longer exists for its owner');
    await reportProgress(10, 'model_request');
    const snapshot = await model.requestStructured({
      messages: strategySnapshotMessages(job),
      schema: StrategySnapshotSchema,
      schemaName: 'strategy_snapshot',
      maxTokens: 1200,
    });
    const contentJson = JSON.stringify(snapshot);
    // The schema bounds every string, but escaping (control characters become \uXXXX) can still grow the JSON.
    if (charCount(contentJson) > JobLimits.noteContentJson) throw new ModelCallError('invalid_output');
    return {
      publish: async (tx) => {
        // Writers of one job's note take turns (the lock), so a first write never races another into the unique key.
        await lockOwnedJob(tx, scope.ownerUserId, job.id, scope.store.caps.rowLocks);
        const outcome = await upsertNote(tx, { ownerUserId: scope.ownerUserId, jobId: job.id, noteKind: STRATEGY_SNAPSHOT_NOTE_KIND, contentJson, operationId });
        if (outcome === 'job_not_found') throw new SubjectNotFoundError('the job no longer exists for its owner');
      },
    };
  },
});
