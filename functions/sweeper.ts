import { sweeperLambda } from '../lib/lambda/sweeper-lambda.js';
import { createRegistry } from '../lib/runtime.js';

/**
 * Scheduled sweeper Lambda (docs/design.md §6) for the built-in task types (`createRegistry`). The runtime is built on the
 * first invocation, not at import (`sweeperLambda`). Logs are Powertools JSON lines with the Lambda context; the run's
 * `Sweep*` metrics are EMF, published when it ends.
 */
export const handler = sweeperLambda({ registry: createRegistry });
