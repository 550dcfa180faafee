// `npm run build:lib` (and `prepack`, so `npm pack` / `npm publish` always ship a fresh build): compiles the package's
// public code (lib/, cli/, migrations/; tsconfig.build.json) to dist/ as ESM + .d.ts. The previous output is removed
// first, so a deleted source file never lingers in the tarball. dist/console (the operator console's Vite build) is
// left alone. tsc also copies package.json to dist/package.json: lib/http/openapi.ts imports it for the version.
import { spawnSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
for (const output of ['dist/lib', 'dist/cli', 'dist/migrations', 'dist/package.json']) {
  rmSync(`${root}${output}`, { recursive: true, force: true });
}
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
const result = spawnSync(process.execPath, [tsc, '-p', `${root}tsconfig.build.json`], { stdio: 'inherit' });
process.exitCode = result.status ?? 1;
