import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** What one run of an operator script printed, and its exit code. */
export interface ScriptRun {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs `scripts/<script>` as `npm run` does (`node --import tsx`), against `databaseUrl`; never rejects. */
export function runScript(script: string, databaseUrl: string, args: readonly string[]): Promise<ScriptRun> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', `scripts/${script}`, ...args],
      { cwd: ROOT, env: { ...process.env, DATABASE_URL: databaseUrl }, timeout: 30_000 },
      (error, stdout, stderr) => resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
    );
  });
}
