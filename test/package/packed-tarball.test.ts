import { execFile } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrations } from '../../migrations/index.js';
import { packRepository } from '../support/pack-repository.js';

/**
 * The package as an application gets it (acceptance 1 and 5 of "a real package"): `npm pack` (its `prepack` builds
 * dist/), then the tarball installed into fresh projects under the system temp directory, which cannot reach this
 * repository's sources or node_modules. One project adds better-sqlite3 (and TypeScript) and runs an operation end to
 * end on SQLite; the other installs only the tarball and must get none of the optional peers.
 */

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  readonly exports: Record<string, string | { readonly types: string; readonly import: string }>;
  readonly bin: Record<string, string>;
  readonly dependencies: Record<string, string>;
  readonly devDependencies: Record<string, string>;
};
/** The exact release this repository pins for a package, so the fresh projects install what the npm cache holds. */
const pinned = (name: string): string => {
  const version = manifest.dependencies[name] ?? manifest.devDependencies[name];
  if (!version) throw new Error(`${name} is not pinned in package.json`);
  return `${name}@${version}`;
};
/** Packages the main entry point must never pull in: dev-only tooling and the optional peers. */
const NEVER_INSTALLED = ['tsx', 'fauxqs', 'better-sqlite3'] as const;
const INSTALL_FLAGS = ['--prefer-offline', '--no-audit', '--no-fund', '--no-package-lock'];

interface Run {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Runs `command` in `cwd`, never rejecting. The child gets none of the `npm_*` variables of a surrounding `npm test`
 * (which would point npm at this repository) and no NODE_OPTIONS (so no TypeScript loader can sneak in).
 */
function run(command: string, args: readonly string[], cwd: string, timeoutMs: number, env: Record<string, string> = {}): Promise<Run> {
  const inherited = Object.fromEntries(Object.entries(process.env).filter(([key]) => !/^npm_/i.test(key) && key !== 'NODE_OPTIONS' && key !== 'INIT_CWD'));
  return new Promise((resolve) => {
    execFile(command, args, { cwd, env: { ...inherited, ...env }, timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) =>
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr }),
    );
  });
}

const output = (r: Run) => `exit ${r.code}\n${r.stdout}\n${r.stderr}`;

/** A new ESM project (`type: module`) in `dir` with no dependencies yet. */
function freshProject(dir: string): string {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'package.json'), `${JSON.stringify({ name: 'app', version: '1.0.0', private: true, type: 'module' }, null, 2)}\n`);
  return dir;
}

/**
 * The application: admits one operation of its own task type, claims it and completes it, on a SQLite file, using only
 * the package's public entry point; prints the final status as one JSON line.
 */
const APPLICATION = `import { z } from 'zod';
import {
  admitOperation,
  claimNextOperation,
  completeOperation,
  defineTask,
  enterOwnerScope,
  getOperation,
  loadCapacityPolicy,
  loadConfig,
  migrateToLatest,
  noopMetrics,
  openStore,
  OwnerScope,
  policyFromConfig,
  silentLogger,
  TaskRegistry,
  WorkerScope,
  type AdmissionDeps,
  type ClaimedOperation,
  type OperationStatus,
  type Store,
  type WakeupMessage,
  type WakeupSender,
} from 'durable-ops';

const file = process.argv[2];
if (!file) throw new Error('usage: node out/index.js <sqlite file>');
const config = loadConfig({ DATABASE_URL: \`sqlite:\${file}\` });
const store: Store = openStore(config.DATABASE_URL);
try {
  const migrated = (await migrateToLatest(store)).length;
  const echo = defineTask({
    type: 'app.echo',
    paramsSchema: z.object({ text: z.string().max(100) }).strict(),
    timeoutMs: 60_000,
    async run() {},
  });
  const sent: WakeupMessage[] = [];
  const wakeups: WakeupSender = {
    async send(messages) {
      sent.push(...messages);
    },
  };
  const deps: AdmissionDeps = {
    registry: new TaskRegistry().register(echo),
    policy: policyFromConfig(config),
    capacity: loadCapacityPolicy(config),
    wakeups,
    logger: silentLogger,
    metrics: noopMetrics,
  };
  const owner = new OwnerScope(store, 'user-a');
  const { operation } = await admitOperation(owner, deps, 'key-1', { taskType: 'app.echo', subject: { type: 'doc', id: 'd1' }, params: { text: 'hi' } });
  const worker = new WorkerScope(store);
  const claim: ClaimedOperation | null = await claimNextOperation(worker, deps);
  if (claim === null) throw new Error('nothing to claim');
  await completeOperation(enterOwnerScope(worker, claim), claim);
  const status: OperationStatus = (await getOperation(owner, operation.id)).status;
  console.log(JSON.stringify({ migrated, admitted: operation.id, claimed: claim.operationId, status, wakeups: sent.length }));
} finally {
  await store.destroy();
}
`;

/** Strict, NodeNext, and no skipLibCheck: the package's own .d.ts files are checked too. */
const TSCONFIG = {
  compilerOptions: { target: 'ES2022', module: 'nodenext', moduleResolution: 'nodenext', strict: true, types: ['node'], outDir: 'out', noEmitOnError: true },
  files: ['index.ts'],
};

const work = mkdtempSync(join(tmpdir(), 'durable-ops-package-'));
let tarball = '';
let packedFiles: string[] = [];

beforeAll(async () => {
  const packed = await packRepository(work);
  tarball = packed.tarball;
  packedFiles = [...packed.files];
}, 480_000);

afterAll(() => rmSync(work, { recursive: true, force: true }));

describe('npm pack', () => {
  it('holds the compiled library, its CLI, migrations and docs: no test, bench, chaos, console, scripts or TypeScript sources', () => {
    expect(packedFiles).toContain('package.json');
    expect(packedFiles).toContain('README.md');
    expect(packedFiles).toContain('dist/lib/index.js');
    expect(packedFiles).toContain('dist/lib/index.d.ts');
    expect(packedFiles).toContain('dist/cli/durable-ops.js');
    expect(packedFiles).toContain('docs/design.md');
    for (const name of Object.keys(migrations)) expect(packedFiles).toContain(`dist/migrations/${name}.js`);
    const allowed = /^(package\.json|README\.md|LICENSE|bin\/durable-ops\.mjs|docs\/[^/]+\.(md|png)|dist\/package\.json|dist\/(lib|cli|migrations)\/.+\.(js|d\.ts))$/;
    expect(packedFiles.filter((path) => !allowed.test(path))).toEqual([]);
    expect(packedFiles.filter((path) => /(^|\/)(test|bench|chaos|console|scripts|functions|infra|model)\//.test(path))).toEqual([]);
    expect(packedFiles.filter((path) => path.endsWith('.ts') && !path.endsWith('.d.ts'))).toEqual([]);
  });

  it('holds every file of the exports map and the bin', () => {
    const targets = Object.values(manifest.exports).flatMap((target) => (typeof target === 'string' ? [target] : [target.types, target.import]));
    for (const target of [...targets, ...Object.values(manifest.bin)]) expect(packedFiles).toContain(target.replace(/^\.\//, ''));
  });
});

describe('an application that installs the tarball with better-sqlite3', () => {
  const app = join(work, 'with-sqlite');

  beforeAll(async () => {
    freshProject(app);
    // --ignore-scripts: better-sqlite3's install script fetches a prebuilt addon from GitHub or compiles SQLite (minutes).
    // The addon `npm ci` built here for this very release and Node is copied in instead; durable-ops has no scripts.
    const install = await run(
      'npm',
      ['install', tarball, pinned('better-sqlite3'), pinned('typescript'), pinned('@types/node'), pinned('zod'), '--ignore-scripts', ...INSTALL_FLAGS],
      app,
      420_000,
    );
    expect(install.code, output(install)).toBe(0);
    const here = dirname(createRequire(import.meta.url).resolve('better-sqlite3/package.json'));
    const there = join(app, 'node_modules/better-sqlite3');
    expect(JSON.parse(readFileSync(join(here, 'package.json'), 'utf8')).version).toBe(JSON.parse(readFileSync(join(there, 'package.json'), 'utf8')).version);
    mkdirSync(join(there, 'build/Release'), { recursive: true });
    copyFileSync(join(here, 'build/Release/better_sqlite3.node'), join(there, 'build/Release/better_sqlite3.node'));
    writeFileSync(join(app, 'index.ts'), APPLICATION);
    writeFileSync(join(app, 'tsconfig.json'), `${JSON.stringify(TSCONFIG, null, 2)}\n`);
  }, 480_000);

  it("`import { … } from 'durable-ops'` typechecks with tsc --strict (module nodenext, the package's .d.ts included)", async () => {
    const tsc = await run(process.execPath, [join(app, 'node_modules/typescript/bin/tsc'), '--strict', '-p', app], app, 240_000);
    expect(tsc.code, output(tsc)).toBe(0);
    expect(existsSync(join(app, 'out/index.js'))).toBe(true);
  }, 300_000);

  it('runs an admission → claim → completion on SQLite, migrated by the migrations inside the package', async () => {
    const node = await run(process.execPath, ['out/index.js', join(app, 'data/app.sqlite')], app, 120_000);
    expect(node.code, output(node)).toBe(0);
    const printed = JSON.parse(node.stdout.trim().split('\n').at(-1) ?? '') as { migrated: number; admitted: string; claimed: string; status: string; wakeups: number };
    expect(printed).toMatchObject({ migrated: Object.keys(migrations).length, status: 'succeeded', wakeups: 1 });
    expect(printed.claimed).toBe(printed.admitted);
  }, 180_000);

  it('the installed CLI (compiled, plain node) migrates a SQLite database', async () => {
    const cli = await run(process.execPath, [join(app, 'node_modules/.bin/durable-ops'), 'migrate'], app, 120_000, { DATABASE_URL: `sqlite:${join(app, 'data/cli.sqlite')}` });
    expect(cli.code, output(cli)).toBe(0);
    expect(cli.stdout.match(/^Up\s+Success\s/gm)).toHaveLength(Object.keys(migrations).length);
  }, 180_000);
});

describe('an application that installs only the tarball', () => {
  const app = join(work, 'tarball-only');

  beforeAll(async () => {
    freshProject(app);
    const install = await run('npm', ['install', tarball, ...INSTALL_FLAGS], app, 420_000);
    expect(install.code, output(install)).toBe(0);
  }, 480_000);

  it('gets no tsx, fauxqs or better-sqlite3 (`npm ls --omit=dev --all`)', async () => {
    const ls = await run('npm', ['ls', '--omit=dev', '--all', '--parseable'], app, 120_000);
    expect(ls.code, output(ls)).toBe(0);
    const installed = ls.stdout.split('\n').filter(Boolean).map((path) => path.replace(/^.*node_modules\//, ''));
    expect(installed).toContain('durable-ops');
    expect(installed.filter((name) => (NEVER_INSTALLED as readonly string[]).includes(name))).toEqual([]);
    for (const name of NEVER_INSTALLED) expect(existsSync(join(app, 'node_modules', name))).toBe(false);
  }, 180_000);

  it('imports every entry point without them; SQLite and the local queue name the package to install', async () => {
    const entries = Object.keys(manifest.exports).filter((entry) => entry !== './package.json');
    const script = `
      import { pathToFileURL } from 'node:url';
      for (const entry of ${JSON.stringify(entries)}) await import(entry === '.' ? 'durable-ops' : 'durable-ops' + entry.slice(1));
      const { openStore } = await import('durable-ops');
      // Not an entry point: the local queue's own module, to reach the fauxqs import without a database.
      const { startLocalQueue } = await import(pathToFileURL('node_modules/durable-ops/dist/lib/local/local-queue.js').href);
      const refusals = [];
      try { openStore('sqlite:' + process.cwd() + '/data/app.sqlite'); } catch (error) { refusals.push({ name: error.name, code: error.code, message: error.message }); }
      try { await startLocalQueue(); } catch (error) { refusals.push({ name: error.name, code: error.code, message: error.message }); }
      console.log(JSON.stringify(refusals));
    `;
    const node = await run(process.execPath, ['--input-type=module', '--eval', script], app, 120_000);
    expect(node.code, output(node)).toBe(0);
    expect(JSON.parse(node.stdout.trim())).toEqual([
      {
        name: 'OptionalDependencyMissingError',
        code: 'optional_dependency_missing',
        message: `SQLite needs the optional peer dependency better-sqlite3: npm install ${pinned('better-sqlite3')}`,
      },
      {
        name: 'OptionalDependencyMissingError',
        code: 'optional_dependency_missing',
        message: `The local queue needs the optional peer dependency fauxqs: npm install ${pinned('fauxqs')}`,
      },
    ]);
    // Nothing was created for the refused SQLite file.
    expect(existsSync(join(app, 'data'))).toBe(false);
  }, 180_000);

  it('runs the CLI from the compiled output with plain node', async () => {
    const cli = await run(process.execPath, [join(app, 'node_modules/.bin/durable-ops'), '--help'], app, 60_000);
    expect(cli.code, output(cli)).toBe(0);
    expect(cli.stdout).toMatch(/^usage: durable-ops <command>/);
  }, 120_000);
});
