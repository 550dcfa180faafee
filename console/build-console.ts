import { fileURLToPath } from 'node:url';
import { build } from 'vite';
import { writeConsoleApiTypes } from './generate-api-types.js';

/** The Vite configuration of the console (root `console/`, base `/console/`, output `dist/console`). */
export const CONSOLE_VITE_CONFIG = fileURLToPath(new URL('./vite.config.ts', import.meta.url));

/** Where {@link buildConsole} writes by default, and where the local HTTP server serves `/console` from. */
export const CONSOLE_DIST_DIR = fileURLToPath(new URL('../dist/console', import.meta.url));

/** Options of {@link buildConsole}. */
export interface BuildConsoleOptions {
  /** Output directory (emptied first). @default {@link CONSOLE_DIST_DIR} */
  readonly outDir?: string;
}

/**
 * Builds the operator console with Vite's JavaScript API and the console's own config — what `npm run build:console`
 * does from the command line; `npm start` calls it before it starts the stack (a few seconds). It writes the console's
 * API types first (`console/generate-api-types.ts`), so a fresh clone builds. Only warnings and errors are printed.
 * @throws the Vite/Rolldown error when a source does not compile or an import does not resolve; the generator's error
 * when the operator document cannot be built or its types written.
 */
export async function buildConsole(options: BuildConsoleOptions = {}): Promise<void> {
  await writeConsoleApiTypes();
  await build({
    configFile: CONSOLE_VITE_CONFIG,
    logLevel: 'warn',
    ...(options.outDir ? { build: { outDir: options.outDir, emptyOutDir: true } } : {}),
  });
}
