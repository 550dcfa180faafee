/**
 * The call recorder's thread (started by `call-recorder.ts`): an HTTP server on 127.0.0.1 that stamps every call on
 * arrival. Its event loop does nothing else, so a stamp trails the call's arrival by well under a millisecond, whatever
 * load the harness's main thread carries (the API, the SQS/S3 emulator, the sweeper, the admission load).
 *
 * `POST /call?operationId=…&cycle=…&attempt=…&worker=…` → 204. Messages: `{ type: 'calls' }` → `{ type: 'calls', calls }`.
 */
import { createServer } from 'node:http';
import { parentPort } from 'node:worker_threads';
import type { ExternalCallRecord } from './history.js';

const calls: ExternalCallRecord[] = [];
let refused = 0;

const server = createServer((request, response) => {
  // Stamped first, before anything else is read: the host clock, whole ms (the database runs on this host).
  const atMs = Date.now();
  const url = new URL(request.url ?? '/', 'http://recorder');
  const q = url.searchParams;
  const cycle = Number(q.get('cycle'));
  const attempt = Number(q.get('attempt'));
  const operationId = q.get('operationId');
  if (request.method !== 'POST' || url.pathname !== '/call' || !operationId || !Number.isInteger(cycle) || !Number.isInteger(attempt)) {
    refused += 1;
    response.writeHead(400).end();
    return;
  }
  calls.push({ operationId, cycle, attempt, worker: q.get('worker') ?? '?', atMs });
  request.resume();
  response.writeHead(204).end();
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => {
  const address = server.address();
  parentPort?.postMessage({ type: 'listening', port: typeof address === 'object' && address ? address.port : 0 });
});
parentPort?.on('message', (message: { type: string }) => {
  if (message.type === 'calls') parentPort?.postMessage({ type: 'calls', calls, refused });
});
