import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';

/** One request the fake received: its path, parsed JSON body (`undefined` when not JSON) and headers. */
export interface FakeModelCall {
  readonly path: string;
  readonly body: unknown;
  readonly headers: IncomingHttpHeaders;
}

/** What the fake answers with: content, a function of the request, or a failure mode. */
type Behaviour =
  | { kind: 'content' }
  | { kind: 'status'; status: number }
  | { kind: 'invalid-json' }
  | { kind: 'oversize'; bytes: number; declareLength: boolean }
  | { kind: 'slow'; ms: number }
  | { kind: 'hang' };

/** A real OpenAI-compatible chat-completions server (node:http, 127.0.0.1, a free port) a test steers. */
export interface FakeModelServer {
  /** Base URL including `/v1`, e.g. `http://127.0.0.1:41234/v1`. */
  readonly url: string;
  /** Every request received, in order. */
  readonly calls: FakeModelCall[];
  /** Requests whose connection closed before the fake finished its answer (the client aborted). */
  readonly abortedRequests: number;
  /** From now on answer 200 with a chat-completions body whose first choice has this content. @default '{}' */
  respondWith(content: string | ((request: unknown) => string)): void;
  /** From now on answer `status` with an OpenAI-style error body. */
  fail(status: number): void;
  /** From now on answer 200 with a body that is not JSON. */
  invalidJson(): void;
  /**
   * From now on answer 200 with a valid chat-completions JSON body padded to `bytes` bytes, streamed in 16 KiB chunks;
   * with `declareLength` it also sends `Content-Length`, else it is chunked. @default declareLength false
   */
  oversize(bytes: number, options?: { declareLength?: boolean }): void;
  /** From now on wait `ms` before answering with the current content. */
  slow(ms: number): void;
  /** From now on never answer. */
  hang(): void;
  /** Destroys every connection (hanging ones included) and stops listening. */
  close(): Promise<void>;
}

function completion(content: string): Record<string, unknown> {
  return {
    id: 'chatcmpl-fake',
    object: 'chat.completion',
    created: 1_700_000_000,
    model: 'fake-model',
    choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }],
    usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
  };
}

function sendJson(response: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  response.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) }).end(text);
}

/** Starts a {@link FakeModelServer} on 127.0.0.1 with a port the OS picks. */
export async function startFakeModelServer(): Promise<FakeModelServer> {
  let behaviour: Behaviour = { kind: 'content' };
  let content: string | ((request: unknown) => string) = '{}';
  let aborted = 0;
  const calls: FakeModelCall[] = [];
  const timers = new Set<NodeJS.Timeout>();

  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    // `close` on the response fires once: after it was ended, or when the connection went away first. (The request's
    // own `close` is no signal: it fires as soon as its body was read.)
    response.on('close', () => {
      if (!response.writableEnded) aborted += 1;
    });
    response.on('error', () => undefined);
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      let body: unknown;
      try {
        body = JSON.parse(text);
      } catch {
        body = undefined;
      }
      calls.push({ path: request.url ?? '/', body, headers: request.headers });
      const answer = (): void => {
        if (response.destroyed) return;
        sendJson(response, 200, completion(typeof content === 'function' ? content(body) : content));
      };
      switch (behaviour.kind) {
        case 'content':
          return answer();
        case 'status':
          return sendJson(response, behaviour.status, { error: { message: 'fake failure', type: 'server_error', code: null } });
        case 'invalid-json':
          response.writeHead(200, { 'content-type': 'application/json' }).end('<html>not json</html>');
          return;
        case 'oversize': {
          const base = JSON.stringify(completion('x'));
          const padding = Math.max(0, behaviour.bytes - base.length - '"padding":"",'.length);
          const body = Buffer.from(`{"padding":"${'p'.repeat(padding)}",${base.slice(1)}`);
          response.writeHead(200, { 'content-type': 'application/json', ...(behaviour.declareLength ? { 'content-length': body.length } : {}) });
          for (let offset = 0; offset < body.length; offset += 16_384) response.write(body.subarray(offset, offset + 16_384));
          response.end();
          return;
        }
        case 'slow': {
          const timer = setTimeout(() => {
            timers.delete(timer);
            answer();
          }, behaviour.ms);
          timers.add(timer);
          response.on('close', () => {
            clearTimeout(timer);
            timers.delete(timer);
          });
          return;
        }
        case 'hang':
          return;
      }
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('fake model server has no TCP address');
  return {
    url: `http://127.0.0.1:${address.port}/v1`,
    calls,
    get abortedRequests() {
      return aborted;
    },
    respondWith(next) {
      content = next;
      behaviour = { kind: 'content' };
    },
    fail(status) {
      behaviour = { kind: 'status', status };
    },
    invalidJson() {
      behaviour = { kind: 'invalid-json' };
    },
    oversize(bytes, options = {}) {
      behaviour = { kind: 'oversize', bytes, declareLength: options.declareLength ?? false };
    },
    slow(ms) {
      behaviour = { kind: 'slow', ms };
    },
    hang() {
      behaviour = { kind: 'hang' };
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const timer of timers) clearTimeout(timer);
        timers.clear();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
