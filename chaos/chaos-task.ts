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
  /**
   * One external call on behalf of `run` (to the harness's recording service, `call-recorder.ts`), abandoned when
   * `signal` fires. Without it the run makes no external calls (the API process registers the task only to validate
   * params).
   */
  readonly callOut?: (run: ExternalCallKey, signal: AbortSignal) => Promise<void>;
}

/** Which run makes an external call. */
export interface ExternalCallKey {
  readonly operationId: string;
  readonly cycle: number;
  readonly attempt: number;
  readonly worker: string;
}

/** Pause between two external calls of a run, in **ms**: 100–200. */
export const CALL_EVERY_MS = { min: 100, max: 200 } as const;

/**
 * Calls `callOut` every 100–200 ms until stopped or `signal` fires. Each call is made after a pause, and gets the
 * run's own `signal` (an abort abandons it mid-flight). {@link stop} ends the pauses but lets a call in flight finish,
 * so that every call of a run that ends normally has arrived before the run's outcome is written.
 *
 * **After a process pause, the fence decides first.** The worker's self-fence timer and this loop's pause are both
 * timers. When the whole process stops (the stall fault; a long GC pause) past the local lease deadline, both are
 * overdue when it resumes and Node runs them in expiry order — this loop's, due sooner, first — so the signal alone
 * would still be unaborted, and a call would leave seconds after the lease ended (recorded:
 * `npm run chaos -- --quick --seed 11`, two calls 10.3 s and 10.5 s late, each 3–10 ms before its fence logged). So
 * every call first asks `leaseHeld()` — the worker's synchronous fence check, which compares the monotonic clock with
 * the local lease deadline itself — and is skipped (the run then aborts) when it answers false.
 */
function callRepeatedly(
  callOut: NonNullable<ChaosTaskHooks['callOut']>,
  run: ExternalCallKey,
  signal: AbortSignal,
  leaseHeld: () => boolean,
): { stop(): Promise<void> } {
  const stopped = new AbortController();
  const pauses = AbortSignal.any([signal, stopped.signal]);
  const loop = (async () => {
    while (!pauses.aborted) {
      try {
        await delay(CALL_EVERY_MS.min + Math.floor(Math.random() * (CALL_EVERY_MS.max - CALL_EVERY_MS.min)), undefined, { signal: pauses });
      } catch {
        return;
      }
      if (pauses.aborted || !leaseHeld()) return;
      // An abandoned or failed call is not retried: the next one follows after the next pause.
      await callOut(run, signal).catch(() => undefined);
    }
  })();
  return {
    async stop() {
      stopped.abort();
      await loop;
    },
  };
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
 *
 * While it works (from after the stall, if any, until its outcome is decided), it makes an **external call** every
 * 100–200 ms through `hooks.callOut`, stopping when its `AbortSignal` fires; the checker demands that none of them
 * arrives after the attempt's lease ended (`noCallAfterLeaseEnd`). The calls run beside the work, not between its
 * steps, so an attempt whose database writes hang (a partitioned worker) keeps calling for as long as nothing stops
 * it — which must be its self-fence.
 */
export function chaosTask(hooks: ChaosTaskHooks): TaskDefinition {
  return defineTask({
    type: CHAOS_TASK_TYPE,
    paramsSchema: ChaosParamsSchema,
    timeoutMs: 30_000,
    async run({ operationId, attempt, params, signal, leaseHeld, reportProgress, results }) {
      hooks.running(1);
      try {
        const run = { operationId, cycle: await currentCycle(hooks.db, operationId), attempt, worker: hooks.worker };
        const stamp = `c${run.cycle}a${attempt}`;
        await insertExecution(hooks.db, run);
        const stallMs = hooks.takeStall();
        if (stallMs > 0) blockThread(stallMs);
        const calls = hooks.callOut ? callRepeatedly(hooks.callOut, run, signal, leaseHeld) : undefined;
        try {
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
        } finally {
          await calls?.stop();
        }
        return { publish: (tx) => insertEffect(tx.db as unknown as Kysely<any>, run) };
      } finally {
        hooks.running(-1);
      }
    },
  });
}
