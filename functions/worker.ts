import { workerLambda } from '../lib/lambda/worker-lambda.js';
import { createRegistry } from '../lib/runtime.js';

/**
 * SQS-triggered worker Lambda (docs/design.md §5) for the built-in task types (`createRegistry`). The runtime is built on
 * the first invocation, not at import (`workerLambda`). Logs are Powertools JSON lines with the Lambda context; metrics
 * are EMF, published per invocation (one batch).
 */
export const handler = workerLambda({ registry: createRegistry });
