import { setTimeout as delay } from 'node:timers/promises';
import { z } from 'zod';
import { publishTaskResult } from '../results/publish-task-result.js';
import { defineTask, PermanentTaskError, RetryableTaskError } from './task-definition.js';

/** Params of `demo.wait`. */
export const DemoWaitParamsSchema = z
  .object({
    /** How long to wait, in milliseconds. */
    durationMs: z.number().int().min(0).max(600_000),
    /** The first `failAttempts` attempts throw a retryable error. */
    failAttempts: z.number().int().min(0).max(10).optional(),
    /** Throw a permanent error instead of waiting. */
    permanentFailure: z.boolean().optional(),
    /**
     * After waiting, publish `results/<operationId>.json` through the recovery ledger (`publishTaskResult`), deleted
     * again if the run is then cancelled or fails. Ignored when no results bucket is configured.
     */
    writeResult: z.boolean().optional(),
  })
  .strict();

/**
 * The built-in demonstration task (registered when `DEMO_TASKS=1`): waits `durationMs`, reporting progress
 * about every 5 % (at least every 5 s), stops as soon as its signal aborts, fails retryably on each of its first
 * `failAttempts` attempts and permanently when `permanentFailure` is true. Requires the owner's `aiEnabled` setting.
 * Accepts a per-operation `priority` (-10..10) and a delay of up to one day (docs/design.md §4).
 * With `writeResult` (and `RESULTS_BUCKET` configured) it then publishes a tiny result object — `{ operationId,
 * attempt, durationMs }`, no user content — kept only if the run still stands at the next heartbeat.
 */
export const demoWaitTask = defineTask({
  type: 'demo.wait',
  paramsSchema: DemoWaitParamsSchema,
  priority: 0,
  // Admission may order an owner's demo runs (`priority` -10..10) and delay one by up to a day (`delaySeconds` / `runAt`).
  operationPriority: { min: -10, max: 10 },
  delay: { maxSeconds: 86_400 },
  timeoutMs: 660_000,
  // Stands in for AI work: an owner who turns AI off (PATCH /api/me/settings) can no longer run it.
  entitlement: { aiEnabled: true },
  async run({ operationId, params, attempt, signal, reportProgress, results }) {
    if (params.permanentFailure) throw new PermanentTaskError('demo.wait asked to fail permanently');
    if (attempt <= (params.failAttempts ?? 0)) throw new RetryableTaskError(`demo.wait failing attempt ${attempt} on purpose`);
    const step = Math.min(5_000, Math.max(100, params.durationMs / 20));
    let waited = 0;
    while (waited < params.durationMs) {
      const slice = Math.min(step, params.durationMs - waited);
      await delay(slice, undefined, { signal });
      waited += slice;
      await reportProgress(Math.floor((waited / params.durationMs) * 100), 'waiting');
    }
    if (params.writeResult && results) {
      await publishTaskResult(results, {
        operationId,
        attempt,
        body: JSON.stringify({ operationId, attempt, durationMs: params.durationMs }),
        settle: async () => {
          await reportProgress(100, 'result_written');
          signal.throwIfAborted();
        },
      });
    }
  },
});
