import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

/** The console's sources (this directory); the repository root is one level up. */
const root = fileURLToPath(new URL('.', import.meta.url));
const repository = fileURLToPath(new URL('..', import.meta.url));

/**
 * Vite configuration of the operator console: a static single-page app under `console/`, built to
 * `dist/console` and served by the local HTTP server at `/console/` (`base`). No plugins: Preact components are
 * written with htm tagged templates, so there is no JSX transform. `npm run build:console` builds it; `npm start`
 * builds it programmatically (`console/build-console.ts`). For `vite --config console/vite.config.ts` during
 * development, `/api` is proxied to a running `npm start` on port 3000.
 */
export default defineConfig({
  root,
  base: '/console/',
  // Not node_modules/.vite: node_modules may be shared (a symlink) between worktrees. dist/ is git-ignored.
  cacheDir: `${repository}dist/.vite-cache`,
  build: {
    outDir: `${repository}dist/console`,
    emptyOutDir: true,
    target: 'es2022',
  },
  server: {
    fs: { allow: [repository] },
    proxy: { '/api': 'http://127.0.0.1:3000' },
  },
});
