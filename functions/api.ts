import { apiLambda } from '../lib/lambda/api-lambda.js';
import { createRegistry } from '../lib/runtime.js';

/**
 * Owner API Lambda (docs/design.md §7) behind the API Gateway HTTP API and its JWT authorizer, serving the built-in task
 * types (`createRegistry`: `demo.wait` only with `DEMO_TASKS=1`, `strategy.snapshot` only with `AI_TASKS=1`). The
 * runtime (config, database pool, SQS client, task registry) is built on the first authenticated invocation, not at
 * import (`apiLambda`). Logs are Powertools JSON lines with the Lambda context; metrics are EMF, published per
 * invocation.
 */
export const handler = apiLambda({ registry: createRegistry });
