import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** What one run of the operator CLI printed, and its exit code. */
export interface ScriptRun {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Node arguments that run the operator CLI from its TypeScript sources (through tsx, a dev dependency), as
 * `npm run ops -- …` does. Not `bin/durable-ops.mjs`: that runs the compiled dist/, which may be absent or stale in a
 * checkout (the packed-tarball test covers the compiled CLI).
 */
export const CLI_FROM_SOURCES: readonly string[] = ['--import', 'tsx', 'cli/durable-ops.ts'];

/**
 * Runs the operator CLI from its sources ({@link CLI_FROM_SOURCES}) with `args`, against `databaseUrl` and any extra
 * environment; never rejects.
 */
export function runCli(args: readonly string[], databaseUrl: string, env: Record<string, string> = {}): Promise<ScriptRun> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [...CLI_FROM_SOURCES, ...args],
      { cwd: ROOT, env: { ...process.env, DATABASE_URL: databaseUrl, ...env }, timeout: 30_000 },
      (error, stdout, stderr) => resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
    );
  });
}
