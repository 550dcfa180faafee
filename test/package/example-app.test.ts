import { execFile } from 'node:child_process';
import { copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeRecoveryOperationByKey, type RecoveryDetails } from '../../lib/recovery/recovery-details.js';
import { createRecoveryModules } from '../../lib/recovery/recovery-modules.js';
import { migrations } from '../../migrations/index.js';
import { packRepository } from '../support/pack-repository.js';
import { createTestDatabase, DIALECTS, hasMariadb, type TestDatabase } from '../support/test-store.js';
import { zipEntries } from '../support/zip-entries.js';

/**
 * examples/webhook-delivery as an application gets it (README "Use it in your application"): `npm pack` of this
 * repository (its `prepack` builds dist/), the example copied to the system temp directory — where it cannot reach
 * this repository's sources or node_modules — the tarball installed into it, then the example's own scripts: its
 * typecheck, its build (esbuild bundles of the four Lambdas), its flow on the local stack, its bundled Lambdas invoked
 * directly, and `osls package` offline. A local HTTP receiver is the webhook target.
 */

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const EXAMPLE = join(ROOT, 'examples/webhook-delivery');
const INSTALL_FLAGS = ['--prefer-offline', '--no-audit', '--no-fund', '--no-package-lock'];
const MODULE = 'webhook.delivery';

interface Run {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Runs `command` in `cwd`, never rejecting. The child gets none of the `npm_*` variables of a surrounding `npm test`
 * (which would point npm at this repository), no NODE_OPTIONS (no TypeScript loader) and no AWS credentials or profile
 * (packaging must need none); `env` is added on top.
 */
function run(command: string, args: readonly string[], cwd: string, timeoutMs: number, env: Record<string, string> = {}): Promise<Run> {
  const dropped = /^(npm_.*|NODE_OPTIONS|INIT_CWD|AWS_ACCESS_KEY_ID|AWS_SECRET_ACCESS_KEY|AWS_SESSION_TOKEN|AWS_PROFILE|AWS_DEFAULT_PROFILE)$/i;
  const inherited = Object.fromEntries(Object.entries(process.env).filter(([key]) => !dropped.test(key)));
  return new Promise((resolve) => {
    execFile(command, args, { cwd, env: { ...inherited, ...env }, timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) =>
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr }),
    );
  });
}

const output = (r: Run) => `exit ${r.code}\n${r.stdout}\n${r.stderr}`;

/** The JSON after `prefix` on the last line of `r.stdout` that starts with it. */
function printed<T>(r: Run, prefix: string): T {
  const line = r.stdout.split('\n').findLast((l) => l.startsWith(prefix));
  if (!line) throw new Error(`no "${prefix}" line in:\n${output(r)}`);
  return JSON.parse(line.slice(prefix.length)) as T;
}

/** One request the receiver got. */
interface Delivery {
  readonly path: string;
  readonly idempotencyKey: string | undefined;
  readonly contentType: string | undefined;
  readonly body: unknown;
}

/** The webhook target: records every POST and answers with `answer(n)`, n counting from 1 since the last reset. */
class Receiver {
  readonly deliveries: Delivery[] = [];
  answer: (n: number) => number = () => 204;
  #server: Server | undefined;
  url = '';

  async start(): Promise<void> {
    this.#server = createServer((request: IncomingMessage, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        this.deliveries.push({
          path: request.url ?? '',
          idempotencyKey: request.headers['idempotency-key'] as string | undefined,
          contentType: request.headers['content-type'],
          body: JSON.parse(Buffer.concat(chunks).toString('utf8') || 'null'),
        });
        response.writeHead(this.answer(this.deliveries.length)).end();
      });
    });
    // Port 0: the OS picks a free one on the loopback interface.
    await new Promise<void>((resolve) => this.#server!.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}/hooks/orders`;
  }

  reset(answer: (n: number) => number = () => 204): void {
    this.deliveries.length = 0;
    this.answer = answer;
  }

  async stop(): Promise<void> {
    await new Promise<void>((resolve) => (this.#server ? this.#server.close(() => resolve()) : resolve()));
  }
}

/** What `npm run flow` prints on its `flow result:` line. */
interface FlowResult {
  readonly operationId: string;
  readonly status: string;
  readonly attempt: number;
  readonly failure: string | null;
  readonly replayed: boolean;
  readonly deliveries: { id: string; state: string; chainOk: boolean; checkpoints: string[] }[];
  readonly laterAttemptTries: number;
}

const work = mkdtempSync(join(tmpdir(), 'durable-ops-example-'));
const app = join(work, 'webhook-delivery');
const receiver = new Receiver();
/** Quiet child processes: no EMF lines, warnings and errors only, no AWS SDK Node-version notice. */
const QUIET = { POWERTOOLS_METRICS_DISABLED: 'true', POWERTOOLS_LOG_LEVEL: 'WARN', AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' };

beforeAll(async () => {
  await receiver.start();
  const { tarball } = await packRepository(work);
  // The example as it is in the repository, without anything a local run there may have left.
  cpSync(EXAMPLE, app, { recursive: true, filter: (source) => !['node_modules', 'dist', '.data', '.serverless'].includes(basename(source)) });
  // --ignore-scripts: better-sqlite3's install script fetches a prebuilt addon from GitHub or compiles SQLite (minutes).
  // The addon `npm ci` built here for this very release and Node is copied in instead; durable-ops has no scripts.
  const install = await run('npm', ['install', tarball, '--ignore-scripts', ...INSTALL_FLAGS], app, 420_000);
  expect(install.code, output(install)).toBe(0);
  const here = dirname(createRequire(import.meta.url).resolve('better-sqlite3/package.json'));
  const there = join(app, 'node_modules/better-sqlite3');
  expect(JSON.parse(readFileSync(join(there, 'package.json'), 'utf8')).version).toBe(JSON.parse(readFileSync(join(here, 'package.json'), 'utf8')).version);
  mkdirSync(join(there, 'build/Release'), { recursive: true });
  copyFileSync(join(here, 'build/Release/better_sqlite3.node'), join(there, 'build/Release/better_sqlite3.node'));
  const build = await run('npm', ['run', 'build'], app, 120_000);
  expect(build.code, output(build)).toBe(0);
}, 600_000);

afterAll(async () => {
  await receiver.stop();
  rmSync(work, { recursive: true, force: true });
});

describe('examples/webhook-delivery installed from the packed tarball', () => {
  it('depends on durable-ops from the tarball, and pins the same releases of its dev tools and optional peers as durable-ops', () => {
    const root = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { dependencies: Record<string, string>; devDependencies: Record<string, string> };
    const example = JSON.parse(readFileSync(join(app, 'package.json'), 'utf8')) as { dependencies: Record<string, string>; devDependencies: Record<string, string> };
    expect(example.dependencies['durable-ops']).toMatch(/^file:.*durable-ops-.*\.tgz$/);
    for (const [name, version] of Object.entries({ ...example.dependencies, ...example.devDependencies })) {
      if (name !== 'durable-ops') expect(`${name}@${version}`).toBe(`${name}@${root.dependencies[name] ?? root.devDependencies[name]}`);
    }
  });

  it('typechecks against the published types only (strict, NodeNext: durable-ops, durable-ops/lambda, durable-ops/local)', async () => {
    const tsc = await run('npm', ['run', 'typecheck'], app, 240_000);
    expect(tsc.code, output(tsc)).toBe(0);
  }, 300_000);

  describe.each(DIALECTS)('on %s', (dialect) => {
    const skip = dialect === 'mariadb' && !hasMariadb();
    const databases: TestDatabase[] = [];
    /** A database of its own, not migrated: the example migrates it. */
    const database = async () => {
      const db = await createTestDatabase(dialect, { migrate: false, poolSize: 2 });
      databases.push(db);
      return db;
    };
    afterAll(async () => {
      for (const db of databases) await db.drop();
    });

    const flow = (db: TestDatabase) => run('npm', ['run', '--silent', 'flow'], app, 180_000, { ...QUIET, DATABASE_URL: db.url, WEBHOOK_URL: receiver.url });
    const ledger = async (db: TestDatabase, operationId: string, n: number): Promise<RecoveryDetails | undefined> =>
      describeRecoveryOperationByKey(db.store, createRecoveryModules(), MODULE, `delivery:${operationId}:${n}`);

    it.skipIf(skip)(
      'one delivery per operation: admitted (the replayed click is the same operation), claimed, run, succeeded, recorded in the ledger; a later attempt sends nothing',
      async () => {
        const db = await database();
        receiver.reset();
        const ran = await flow(db);
        expect(ran.code, output(ran)).toBe(0);
        const result = printed<FlowResult>(ran, 'flow result: ');
        expect(result).toMatchObject({ status: 'succeeded', attempt: 1, failure: null, replayed: true, laterAttemptTries: 0 });
        expect(receiver.deliveries).toEqual([
          {
            path: '/hooks/orders',
            idempotencyKey: result.operationId,
            contentType: 'application/json',
            body: { event: 'order.paid', orderId: 'order-42', amountCents: 1999 },
          },
        ]);
        expect(result.deliveries).toEqual([{ id: expect.any(String), state: 'succeeded', chainOk: true, checkpoints: ['begin', 'delivered', 'completed'] }]);
        // Read back independently of the example, from the database it ran on.
        const record = await ledger(db, result.operationId, 1);
        expect(record).toMatchObject({ id: result.deliveries[0]!.id, module: MODULE, kind: 'http_post', effectClass: 'forward_only', state: 'succeeded', chain: { ok: true } });
        expect(record!.checkpoints.find((c) => c.kind === 'delivered')!.evidence).toEqual({ httpStatus: 204, resultCode: 'HTTP_204' });
        expect(await ledger(db, result.operationId, 2)).toBeUndefined();
      },
      240_000,
    );

    it.skipIf(skip)(
      'a 503 is retried with the same Idempotency-Key: the first try is rejected in the ledger, the second delivered, and the operation succeeds once',
      async () => {
        const db = await database();
        receiver.reset((n) => (n === 1 ? 503 : 200));
        const ran = await flow(db);
        expect(ran.code, output(ran)).toBe(0);
        const result = printed<FlowResult>(ran, 'flow result: ');
        expect(result).toMatchObject({ status: 'succeeded', attempt: 2, failure: null, laterAttemptTries: 0 });
        expect(receiver.deliveries.map((d) => d.idempotencyKey)).toEqual([result.operationId, result.operationId]);
        expect(result.deliveries.map((d) => [d.state, d.checkpoints])).toEqual([
          ['rejected', ['begin', 'rejected']],
          ['succeeded', ['begin', 'delivered', 'completed']],
        ]);
        expect((await ledger(db, result.operationId, 1))!.checkpoints.at(-1)!.evidence).toEqual({ httpStatus: 503, resultCode: 'HTTP_503' });
        expect((await ledger(db, result.operationId, 2))!.state).toBe('succeeded');
      },
      240_000,
    );

    it.skipIf(skip)(
      "the bundled Lambdas serve the application's task types only: migrate applies every migration, the API refuses the built-in demo.wait and admits webhook.deliver, one SQS wake-up runs it",
      async () => {
        const db = await database();
        receiver.reset();
        const ran = await run(process.execPath, [join(ROOT, 'test/package/invoke-example-lambdas.mjs'), app, receiver.url], app, 180_000, {
          ...QUIET,
          DATABASE_URL: db.url,
          DB_POOL_SIZE: '2',
          AWS_REGION: 'us-east-1',
          // Nothing listens there: the API's wake-up send fails and is logged (the test hands the worker its wake-up).
          SQS_QUEUE_URL: 'http://127.0.0.1:9/000000000000/webhook-delivery-wakeup',
          SQS_ENDPOINT: 'http://127.0.0.1:9',
          // Dummy credentials for that unreachable endpoint, so the SDK does not probe for real ones.
          AWS_ACCESS_KEY_ID: 'test',
          AWS_SECRET_ACCESS_KEY: 'test',
        });
        expect(ran.code, output(ran)).toBe(0);
        const lambdas = printed<Record<string, unknown>>(ran, 'lambdas: ');
        expect(lambdas).toMatchObject({
          migrated: Object.keys(migrations).map(() => 'Success'),
          migrateError: null,
          unauthenticatedStatus: 401,
          builtInStatus: 400,
          builtInCode: 'unknown_task_type',
          admittedStatus: 202,
          batchItemFailures: [],
          status: 'succeeded',
          attempt: 1,
        });
        expect(lambdas.sweptKeys).toContain('leasesRetried');
        expect(receiver.deliveries.map((d) => d.idempotencyKey)).toEqual([lambdas.operationId]);
        expect((await ledger(db, lambdas.operationId as string, 1))!.state).toBe('succeeded');
      },
      240_000,
    );
  });

  it('`osls package` packages it offline, without AWS credentials: one zip with the four bundled handlers and nothing else', async () => {
    const out = join(work, 'package');
    const cache = join(work, 'osls-cache');
    const params = {
      jwtIssuer: 'https://issuer.example.com/pool',
      jwtAudience: 'example-audience',
      databaseHost: 'proxy.example.com',
      databaseSecretId: 'webhook-delivery/app',
      migrationDatabaseSecretId: 'webhook-delivery/migrator',
      vpcSubnetIds: 'subnet-0aaa,subnet-0bbb',
      vpcSecurityGroupIds: 'sg-0aaa',
    };
    const args = ['package', '--stage', 'ci', '--package', out, ...Object.entries(params).map(([name, value]) => `--param=${name}=${value}`)];
    const packaged = await run(process.execPath, [join(app, 'node_modules/osls/bin/serverless.js'), ...args], app, 240_000, {
      FORCE_COLOR: '0',
      NO_COLOR: '1',
      SLS_SCHEMA_CACHE_BASE_DIR: cache,
    });
    expect(packaged.code, output(packaged)).toBe(0);
    expect(`${packaged.stdout}${packaged.stderr}`).toContain('Service packaged');
    const zip = join(out, 'webhook-delivery.zip');
    expect(existsSync(zip)).toBe(true);
    expect(zipEntries(zip).sort()).toEqual(['api', 'migrate', 'sweeper', 'worker'].flatMap((name) => [`dist/functions/${name}.mjs`, `dist/functions/${name}.mjs.map`]));
    const template = JSON.parse(readFileSync(join(out, 'cloudformation-template-update-stack.json'), 'utf8')) as { Resources: Record<string, { Type: string; Properties: Record<string, any> }> };
    const handlers = Object.values(template.Resources)
      .filter((r) => r.Type === 'AWS::Lambda::Function')
      .map((r) => r.Properties.Handler as string)
      .sort();
    expect(handlers).toEqual(['dist/functions/api.handler', 'dist/functions/migrate.handler', 'dist/functions/sweeper.handler', 'dist/functions/worker.handler']);
    // No plaintext credential: the database URLs are CloudFormation dynamic references.
    expect(JSON.stringify(template)).toContain('{{resolve:secretsmanager:webhook-delivery/app:SecretString:password}}');
  }, 300_000);
});
