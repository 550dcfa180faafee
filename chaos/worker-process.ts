/**
 * One chaos worker process: the worker Lambda's handler fed by an SQS poller (as `npm start` runs it), with the chaos
 * task registered and an IPC channel through which the fault injector skews its clock or stalls its next run. It
 * reports each run's start and end to the parent, so the parent can SIGKILL it mid-operation. It reaches MariaDB through
 * its own proxy in the harness (`DATABASE_URL`; the injector cuts it for a network partition) and the harness's
 * recording service directly (`CHAOS_RECORDER_URL`: the chaos task's external calls). Started by `fleet.ts`.
 */
import { createSqsClient } from '../lib/queue/wakeup-sender.js';
import { loadConfig } from '../lib/config.js';
import { createRuntime } from '../lib/runtime.js';
import { createProcessLogger } from '../lib/logger.js';
import { startSqsPoller } from '../lib/local/sqs-poller.js';
import { TaskRegistry } from '../lib/tasks/task-registry.js';
import { createWorkerHandler } from '../lib/worker/worker-handler.js';
import { chaosTask } from './chaos-task.js';
import { installSkewableClock } from './clock-skew.js';
import { parseControl, type WorkerReport } from './worker-control.js';

const setSkew = installSkewableClock();
const config = loadConfig();
const worker = process.env.CHAOS_WORKER ?? `worker-${process.pid}`;
const recorderUrl = process.env.CHAOS_RECORDER_URL;
let stallMs = 0;
const report = (message: WorkerReport) => {
  if (process.connected) process.send?.(message);
};

const logger = createProcessLogger();
const registry = new TaskRegistry();
const runtime = createRuntime(config, { registry, logger });
registry.register(
  chaosTask({
    worker,
    db: runtime.store.db,
    takeStall: () => {
      const ms = stallMs;
      stallMs = 0;
      if (ms > 0) report({ type: 'stalled' });
      return ms;
    },
    running: (delta) => report({ type: 'running', delta }),
    ...(recorderUrl
      ? {
          callOut: async (run, signal) => {
            const query = new URLSearchParams({ operationId: run.operationId, cycle: String(run.cycle), attempt: String(run.attempt), worker: run.worker });
            const answer = await fetch(`${recorderUrl}/call?${query}`, { method: 'POST', signal });
            await answer.body?.cancel();
          },
        }
      : {}),
  }),
);
const client = createSqsClient({ region: config.AWS_REGION, ...(config.SQS_ENDPOINT ? { endpoint: config.SQS_ENDPOINT } : {}) });
const poller = startSqsPoller({
  client,
  queueUrl: config.SQS_QUEUE_URL as string,
  handler: createWorkerHandler(runtime),
  functionTimeoutMs: 60_000,
  // The harness's load is sized for batches of 10 (the poller's default before it became 1, serverless.yml's
  // workerBatchSize): 2 × 10 runs per process, which one message per invocation would cut to 2.
  batchSize: 10,
  maxConcurrentBatches: 2,
  logger,
});

process.on('message', (raw) => {
  const control = parseControl(raw);
  if (control.type === 'skew') {
    setSkew(control.ms);
    report({ type: 'skewed' });
  }
  else if (control.type === 'stall') stallMs = control.ms;
  else if (control.type === 'stop') {
    void poller
      .stop()
      .then(() => runtime.close())
      .finally(() => {
        client.destroy();
        process.exit(0);
      });
  }
});
// The harness is gone (it crashed or was killed): never keep polling as an orphan.
process.on('disconnect', () => process.exit(1));
report({ type: 'ready' });
