import type { DurableOpsApp } from '../app/durable-ops-app.js';
import { createObservability } from '../observability/observability.js';
import { createWorkerHandler } from '../worker/worker-handler.js';
import { lazyRuntime } from './lambda-runtime.js';

/** The SQS worker Lambda's handler (`(event: SQSEvent, context) => Promise<SQSBatchResponse>`, middy). */
export type WorkerLambdaHandler = ReturnType<typeof createWorkerHandler>;

/**
 * The SQS-triggered worker Lambda (docs/design.md §5) running `app`'s task types: each wake-up claims the best eligible
 * operation among the registered types and runs it under its lease. Wire it with `batchSize: 1` and
 * `functionResponseType: ReportBatchItemFailures` (partial batch responses: a record whose handling threw is
 * redelivered). The runtime is built on the first invocation; until it builds, every record is reported failed.
 */
export function workerLambda(app: DurableOpsApp): WorkerLambdaHandler {
  const observability = createObservability();
  return createWorkerHandler(lazyRuntime(app, observability), observability);
}
