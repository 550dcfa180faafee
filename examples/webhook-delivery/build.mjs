// `npm run build`: bundles each Lambda entry point (src/functions/*.ts) to dist/functions/<name>.mjs — ESM for Node 22
// (serverless.yml's nodejs22.x), durable-ops and zod inside, the files serverless.yml packages — and the local flow to
// dist/flow.mjs for Node 20, the local runtime (its packages stay in node_modules). The AWS SDK v3 is provided by the
// Lambda runtime; better-sqlite3 and fauxqs are only for local runs (durable-ops loads them on first need), so none of
// them is bundled.
import { build } from 'esbuild';

const common = { bundle: true, platform: 'node', format: 'esm', sourcemap: true, logLevel: 'warning' };

await build({
  ...common,
  target: 'node22',
  entryPoints: ['src/functions/api.ts', 'src/functions/worker.ts', 'src/functions/sweeper.ts', 'src/functions/migrate.ts'],
  outdir: 'dist/functions',
  outExtension: { '.js': '.mjs' },
  external: ['@aws-sdk/*', 'better-sqlite3', 'fauxqs'],
  // mysql2 and other CommonJS dependencies call require(); give the ESM bundle one.
  banner: { js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);" },
});

await build({ ...common, target: 'node20', entryPoints: ['src/flow.ts'], outfile: 'dist/flow.mjs', packages: 'external' });
