import { Worker } from 'node:worker_threads';
import type { ExternalCallRecord } from './history.js';

/**
 * The chaos task's **external service**: a small HTTP server the harness owns, on 127.0.0.1, that stamps each call's
 * arrival (host clock, ms) with the operation, cycle and attempt that made it and keeps them for the checker
 * (`noCallAfterLeaseEnd` in `invariants.ts`). It is not the database, so a worker partitioned from MariaDB still
 * reaches it — as a real worker still reaches the APIs its task calls — and it sees exactly what a zombie attempt does.
 * It runs in a worker thread of the harness process (`call-recorder-thread.ts`), whose event loop does nothing else.
 */
export interface CallRecorder {
  /** `http://127.0.0.1:<port>`: the chaos task posts to `<url>/call`. */
  readonly url: string;
  /** Every call recorded so far, in arrival order; `refused`: malformed requests (a harness bug). */
  calls(): Promise<{ calls: ExternalCallRecord[]; refused: number }>;
  close(): Promise<void>;
}

/** Starts the recorder's thread and waits until it listens. */
export async function startCallRecorder(): Promise<CallRecorder> {
  const module = new URL('./call-recorder-thread.ts', import.meta.url).href;
  // A worker thread does not inherit tsx's loader: register it there first, then load the TypeScript module.
  const bootstrap = `import(${JSON.stringify(import.meta.resolve('tsx/esm/api'))}).then((api) => { api.register(); return import(${JSON.stringify(module)}); })`;
  const thread = new Worker(bootstrap, { eval: true });
  const next = <T>(type: string) =>
    new Promise<T>((resolve, reject) => {
      const onMessage = (message: { type: string }) => {
        if (message.type !== type) return;
        thread.off('message', onMessage);
        thread.off('error', reject);
        resolve(message as T);
      };
      thread.on('message', onMessage);
      thread.once('error', reject);
    });
  const { port } = await next<{ port: number }>('listening');
  return {
    url: `http://127.0.0.1:${port}`,
    async calls() {
      const answer = next<{ calls: ExternalCallRecord[]; refused: number }>('calls');
      thread.postMessage({ type: 'calls' });
      const { calls, refused } = await answer;
      return { calls, refused };
    },
    async close() {
      await thread.terminate();
    },
  };
}
