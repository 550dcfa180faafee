/**
 * `npm run sweep`: one bounded sweeper run against DATABASE_URL and SQS_QUEUE_URL (the same code as the scheduled
 * Lambda); prints the counts as JSON.
 */
import { loadConfig } from '../lib/config.js';
import { createRuntime } from '../lib/runtime.js';
import { sweepWith } from '../lib/sweeper/sweeper-handler.js';
import { silentLogger } from '../lib/logger.js';

const runtime = createRuntime(loadConfig(), { logger: silentLogger });
try {
  console.log(JSON.stringify(await sweepWith(runtime)));
} finally {
  await runtime.close();
}
