// `npm run build`: bundles each Lambda entry point to functions/<name>.mjs (ESM, Node 20) with esbuild, the files
// serverless.yml packages. The migrate function imports migrations/index.ts statically, so every migration is in its
// bundle. The AWS SDK v3 is provided by the Lambda runtime and left external; better-sqlite3 is
// only loaded for SQLite (local runs) and is left out of the bundle.
import { build } from 'esbuild';

await build({
  entryPoints: ['functions/api.ts', 'functions/worker.ts', 'functions/sweeper.ts', 'functions/migrate.ts'],
  outdir: 'functions',
  outExtension: { '.js': '.mjs' },
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'esm',
  sourcemap: true,
  external: ['@aws-sdk/*', 'better-sqlite3'],
  // mysql2 and other CommonJS dependencies call require(); give the ESM bundle one.
  banner: { js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);" },
  logLevel: 'warning',
});
