import { hostname } from 'node:os';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { loadConfig } from '../../lib/config.js';
import { openStore } from '../../lib/db/store.js';
import { ConfigError } from '../../lib/errors.js';
import { redriveDeadLetters } from '../../lib/queue/redrive-dlq.js';
import { createSqsClient } from '../../lib/queue/wakeup-sender.js';
import { parseArguments, print, reportFailure, UsageError, type CliCommand } from '../cli-support.js';

const USAGE = 'usage: durable-ops redrive-dlq [--max <1-1000>]';

const MaxSchema = z.coerce.number().int().min(1).max(1000);

function parseMax(args: readonly string[]): number {
  const { values } = parseArgs({ args: [...args], options: { max: { type: 'string' } }, strict: true, allowPositionals: false });
  const parsed = MaxSchema.safeParse(values.max ?? '100');
  if (!parsed.success) throw new UsageError('--max must be an integer from 1 to 1000');
  return parsed.data;
}

/**
 * `durable-ops redrive-dlq [--max <n>]`: moves up to `n` (1–1000, default 100) dead letters from `SQS_DLQ_URL` back to
 * `SQS_QUEUE_URL`, each through the recovery ledger in `DATABASE_URL` (`redriveDeadLetters`: a dead letter is never
 * redriven twice), and prints the counts as one line of JSON: `{"moved":…,"skipped":…,"rejected":…}` (the names `POST /api/ops/dlq/redrive` answers with). `SQS_ENDPOINT`
 * points it at an emulator. It never migrates. Exit codes: 0 done, 1 a configuration, SQS or database failure (messages
 * already handled stay handled), 2 bad arguments.
 */
export const redriveDlqCommand: CliCommand = {
  name: 'redrive-dlq',
  summary: 'move dead letters back to the worker queue, each once',
  usage: USAGE,
  async run(args) {
    const maxMessages = parseArguments(parseMax, args, USAGE);
    if (maxMessages === undefined) return 2;
    return reportFailure('redrive-dlq', async () => {
      const config = loadConfig(process.env);
      if (!config.SQS_QUEUE_URL) throw new ConfigError('SQS_QUEUE_URL is required');
      if (!config.SQS_DLQ_URL) throw new ConfigError('SQS_DLQ_URL is required');
      const store = openStore(config.DATABASE_URL);
      const client = createSqsClient({ region: config.AWS_REGION, ...(config.SQS_ENDPOINT ? { endpoint: config.SQS_ENDPOINT } : {}) });
      try {
        const counts = await redriveDeadLetters({
          client,
          store,
          dlqUrl: config.SQS_DLQ_URL,
          queueUrl: config.SQS_QUEUE_URL,
          leaseOwner: `redrive-dlq:${hostname()}:${process.pid}`.slice(0, 128),
          maxMessages,
        });
        print(JSON.stringify(counts));
        return 0;
      } finally {
        client.destroy();
        await store.destroy();
      }
    });
  },
};
