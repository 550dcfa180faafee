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
 * Runs the operator CLI as `npx durable-ops` does (`bin/durable-ops.mjs`, through tsx), with `args`, against
 * `databaseUrl` and any extra environment; never rejects.
 */
export function runCli(args: readonly string[], databaseUrl: string, env: Record<string, string> = {}): Promise<ScriptRun> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['bin/durable-ops.mjs', ...args],
      { cwd: ROOT, env: { ...process.env, DATABASE_URL: databaseUrl, ...env }, timeout: 30_000 },
      (error, stdout, stderr) => resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
    );
  });
}
