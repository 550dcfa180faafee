import { loadConfig } from '../../lib/config.js';
import { silentLogger } from '../../lib/logger.js';
import { createRuntime } from '../../lib/runtime.js';
import { sweepWith } from '../../lib/sweeper/sweeper-handler.js';
import { parseArguments, print, reportFailure, UsageError, type CliCommand } from '../cli-support.js';

const USAGE = 'usage: durable-ops sweep';

/**
 * `durable-ops sweep`: one bounded sweeper run against `DATABASE_URL` and `SQS_QUEUE_URL` (the same code as the scheduled
 * Lambda, docs/design.md §6); prints the counts as one line of JSON.
 */
export const sweepCommand: CliCommand = {
  name: 'sweep',
  summary: 'run the sweeper once and print its counts',
  usage: USAGE,
  async run(args) {
    const ok = parseArguments((a) => {
      if (a.length > 0) throw new UsageError('sweep takes no arguments');
      return true;
    }, args, USAGE);
    if (!ok) return 2;
    return reportFailure('sweep', async () => {
      const runtime = createRuntime(loadConfig(), { logger: silentLogger });
      try {
        print(JSON.stringify(await sweepWith(runtime)));
        return 0;
      } finally {
        await runtime.close();
      }
    });
  },
};
