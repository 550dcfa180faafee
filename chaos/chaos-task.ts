import { setTimeout as delay } from 'node:timers/promises';
import type { Kysely } from 'kysely';
import { z } from 'zod';
import { publishTaskResult } from '../lib/results/publish-task-result.js';
import { defineTask, PermanentTaskError, RetryableTaskError, type TaskDefinition } from '../lib/tasks/task-definition.js';
import { currentCycle, insertEffect, insertExecution } from './chaos-schema.js';

/** The task type every chaos operation runs. */
export const CHAOS_TASK_TYPE = 'chaos.effect';

/** Params of a chaos operation, chosen at random by the admission load. */
export const ChaosParamsSchema = z
  .object({
    /** How long the run works, in **ms**, reporting progress (a lease-token write) halfway. */
    workMs: z.number().int().min(0).max(10_000),
    /** The first `failAttempts` attempts throw a retryable error. */
    failAttempts: z.number().int().min(0).max(5),
    /** Every attempt fails permanently. */
    permanentFailure: z.boolean(),
    /** Publish a result object through the recovery ledger before succeeding (exercises the hash chain). */
    writeResult: z.boolean(),
  })
  .strict();
/** See {@link ChaosParamsSchema}. */
export type ChaosParams = z.infer<typeof ChaosParamsSchema>;

/** What the worker process lets the fault injector do to the runs it hosts. */
export interface ChaosTaskHooks {
  /** Identifies the process in effect rows, e.g. `worker-3#2` (slot and incarnation). */
  readonly worker: string;
  /**
   * Called at the start of each run: returns how many **ms** to block the whole process (event loop included, so no
   * heartbeat leaves it — a stop-the-world pause), or 0.
   */
  takeStall(): number;
  /** Told when a run starts and ends, so the injector can SIGKILL a process mid-operation. */
  running(delta: 1 | -1): void;
  /** The chaos database, for the run's cycle and its execution record (the harness's own tables). */
  readonly db: Kysely<any>;
}

/** Blocks the thread for `ms` without yielding to the event loop. */
function blockThread(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/**
 * The chaos harness's task (docs/design.md §5 handler contract): records its execution, works `workMs` (a progress write
 * halfway), fails as its params say, optionally publishes a result object through the recovery ledger, and on success
 * writes its **effect row** in the success transaction (`publish`), so an effect exists only for an attempt whose
 * success committed under its lease. Its progress stages and failure messages carry its stamp `c<cycle>a<attempt>`.
 * The checker then demands exactly one effect per succeeded operation, written by its final cycle and attempt, and
 * every stamped write made while that very attempt held the lease.
 */
export function chaosTask(hooks: ChaosTaskHooks): TaskDefinition {
  return defineTask({
    type: CHAOS_TASK_TYPE,
    paramsSchema: ChaosParamsSchema,
    timeoutMs: 30_000,
    async run({ operationId, attempt, params, signal, reportProgress, results }) {
      hooks.running(1);
      try {
        const run = { operationId, cycle: await currentCycle(hooks.db, operationId), attempt, worker: hooks.worker };
        const stamp = `c${run.cycle}a${attempt}`;
        await insertExecution(hooks.db, run);
        const stallMs = hooks.takeStall();
        if (stallMs > 0) blockThread(stallMs);
        await delay(Math.floor(params.workMs / 2), undefined, { signal });
        await reportProgress(50, `working:${stamp}`);
        await delay(Math.ceil(params.workMs / 2), undefined, { signal });
        if (params.permanentFailure) throw new PermanentTaskError(`chaos ${stamp}: permanent failure on purpose`);
        if (attempt <= params.failAttempts) throw new RetryableTaskError(`chaos ${stamp}: failing on purpose`);
        if (params.writeResult && results) {
          await publishTaskResult(results, {
            operationId,
            attempt,
            body: JSON.stringify({ operationId, attempt }),
            settle: async () => {
              await reportProgress(100, `result:${stamp}`);
              signal.throwIfAborted();
            },
          });
        }
        return { publish: (tx) => insertEffect(tx.db as unknown as Kysely<any>, run) };
      } finally {
        hooks.running(-1);
      }
    },
  });
}
