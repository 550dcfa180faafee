import { z } from 'zod';
import { capacityPolicy, type CapacityFile } from '../../lib/capacity/capacity-policy.js';
import { silentLogger } from '../../lib/logger.js';
import { noopMetrics } from '../../lib/observability/metrics.js';
import type { OperationPolicy } from '../../lib/operations/operation-policy.js';
import type { WakeupMessage } from '../../lib/queue/wakeup-message.js';
import type { WakeupSender, WakeupSendOptions } from '../../lib/queue/wakeup-sender.js';
import { demoWaitTask } from '../../lib/tasks/demo-wait.js';
import { defineTask } from '../../lib/tasks/task-definition.js';
import { TaskRegistry } from '../../lib/tasks/task-registry.js';

/**
 * Records wake-ups instead of sending them. SQS is the external boundary; tests of the store and services use this,
 * and the end-to-end tests use the real SQS client against fauxqs.
 */
export class RecordingWakeups implements WakeupSender {
  readonly sent: { message: WakeupMessage; delaySeconds: number }[] = [];
  failNext = false;
  async send(messages: readonly WakeupMessage[], options?: WakeupSendOptions): Promise<void> {
    if (this.failNext) {
      this.failNext = false;
      throw new Error('simulated SQS outage');
    }
    for (const message of messages) this.sent.push({ message, delaySeconds: options?.delaySeconds ?? 0 });
  }
}

/** A policy with short, round numbers (ms) so tests can move the clock precisely. */
export const testPolicy: OperationPolicy = Object.freeze({
  leaseMs: 30_000,
  heartbeatMs: 10_000,
  maxAttempts: 3,
  retry: Object.freeze({ baseDelayMs: 5_000, maxDelayMs: 60_000 }),
  deadlineMs: 900_000,
  wakeupResendMs: 60_000,
  maxManualRetries: 2,
  retentionMs: 30 * 86_400_000,
});

/** A task that does nothing (store-level tests drive transitions by hand). */
export const noopTask = defineTask({
  type: 'test.noop',
  paramsSchema: z.object({ n: z.number().int().min(0).max(1_000_000).optional() }).strict(),
  timeoutMs: 60_000,
  async run() {},
});

/** A task that ignores its AbortSignal and sleeps `durationMs` regardless (a handler with a bug). */
export const stubbornTask = defineTask({
  type: 'test.stubborn',
  paramsSchema: z.object({ durationMs: z.number().int().min(0).max(60_000) }).strict(),
  timeoutMs: 1_500,
  // a short lease keeps the abort grace (a third of the lease) short
  leaseSeconds: 3,
  async run({ params }) {
    await new Promise((resolve) => setTimeout(resolve, params.durationMs));
  },
});

/** Registry with `test.noop`, `test.stubborn` and `demo.wait`. */
export function testRegistry(): TaskRegistry {
  return new TaskRegistry().register(noopTask).register(stubbornTask).register(demoWaitTask);
}

/**
 * Dependencies of the services, with a recording wake-up sender. The running limit defaults to the admission limit
 * (`perOwner`), so one owner's operations can all run at once unless a test sets `runningPerOwner`.
 */
export function testDeps(overrides: Partial<OperationPolicy> = {}, capacity: { perOwner?: number; global?: number; runningPerOwner?: number; file?: CapacityFile } = {}) {
  const wakeups = new RecordingWakeups();
  return {
    registry: testRegistry(),
    policy: Object.freeze({ ...testPolicy, ...overrides }),
    capacity: capacityPolicy(
      {
        perOwner: capacity.perOwner ?? 200,
        global: capacity.global ?? 3_000,
        retryAfterSeconds: 7,
        runningPerOwner: capacity.runningPerOwner ?? capacity.perOwner ?? 200,
      },
      capacity.file,
    ),
    wakeups,
    logger: silentLogger,
    metrics: noopMetrics,
    random: () => 0.5,
  };
}
