import { spawn, type ChildProcess } from 'node:child_process';
import { waitFor } from './wait-for.js';

/** A local stack (`scripts/start.ts`) running as a child process, as `npm start` runs it. */
export interface StackProcess {
  readonly url: string;
  readonly port: number;
  /** Everything the process printed so far. */
  output(): string;
  /** Sends `signal` and waits for the process to exit. */
  kill(signal: NodeJS.Signals): Promise<void>;
}

/** Starts `scripts/start.ts` with `env` on `port` and waits until it prints that it is listening. */
export async function startStackProcess(port: number, env: Record<string, string>): Promise<StackProcess> {
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', 'scripts/start.ts'], {
    env: { ...process.env, PORT: String(port), AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  await waitFor(() => {
    if (child.exitCode !== null) throw new Error(`local stack exited early:\n${output}`);
    return output.includes('local stack is listening on');
  }, { timeoutMs: 30_000, what: 'the local stack to listen' });
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    output: () => output,
    kill: async (signal) => {
      if (child.exitCode === null) child.kill(signal);
      await exited;
    },
  };
}
