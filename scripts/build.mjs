// `npm run build`: bundles each Lambda entry point to functions/<name>.mjs with esbuild, the files serverless.yml
// packages: ESM for Node 22, the runtime they deploy on (nodejs22.x; Node.js 20 reached end of life on 2026-04-30),
// while local development stays on Node 20. test/deploy/node22-bundles.test.ts runs the built handlers on Node 22.
// The migrate function imports migrations/index.ts statically, so every migration is in its bundle. The AWS SDK v3 is
// provided by the Lambda runtime and left external; better-sqlite3 is only loaded for SQLite (local runs) and is left
// out of the bundle.
import { build } from 'esbuild';

await build({
  entryPoints: ['functions/api.ts', 'functions/worker.ts', 'functions/sweeper.ts', 'functions/migrate.ts'],
  outdir: 'functions',
  outExtension: { '.js': '.mjs' },
  bundle: true,
  platform: 'node',
  target: 'node22',
  format: 'esm',
  sourcemap: true,
  external: ['@aws-sdk/*', 'better-sqlite3'],
  // mysql2 and other CommonJS dependencies call require(); give the ESM bundle one.
  banner: { js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);" },
  logLevel: 'warning',
});
