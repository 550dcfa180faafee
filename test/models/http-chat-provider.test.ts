import { inspect } from 'node:util';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ConfigError } from '../../lib/errors.js';
import { createHttpChatProvider } from '../../lib/models/http-chat-provider.js';
import type { ModelProvider } from '../../lib/models/model-provider.js';
import { startFakeModelServer, type FakeModelServer } from '../support/fake-model-server.js';
import { freePort } from '../support/free-port.js';
import type { ModelCallError } from '../../lib/models/model-errors.js';
import { expectModelFailure, modelFailure } from '../support/model-failures.js';
import { waitFor } from '../support/wait-for.js';

const MESSAGES = [
  { role: 'system' as const, content: 'You answer in JSON.' },
  { role: 'user' as const, content: 'private prompt text' },
];
const API_KEY = 'sk-test-SECRET-0123456789abcdefghij';

let server: FakeModelServer;

beforeEach(async () => {
  server = await startFakeModelServer();
});

afterEach(async () => {
  await server.close();
});

function provider(options: { apiKey?: string; maxResponseBytes?: number; fetch?: typeof fetch } = {}): ModelProvider {
  return createHttpChatProvider({ baseUrl: server.url, model: 'test-model', maxResponseBytes: 64 * 1024, ...options });
}


describe('HTTP chat provider', () => {
  it('posts the request with the configured model to /chat/completions and returns the validated response', async () => {
    server.respondWith('{"ok":true}');
    const response = await provider().complete({ messages: MESSAGES, max_tokens: 50, temperature: 0 }, { timeoutMs: 5_000 });
    expect(response.choices[0]?.message.content).toBe('{"ok":true}');
    expect(response.model).toBe('fake-model');
    expect(server.calls).toHaveLength(1);
    expect(server.calls[0]?.path).toBe('/v1/chat/completions');
    expect(server.calls[0]?.headers['content-type']).toBe('application/json');
    expect(server.calls[0]?.body).toEqual({ messages: MESSAGES, max_tokens: 50, temperature: 0, model: 'test-model' });
  });

  it('drops trailing slashes of the base URL', async () => {
    const slashed = createHttpChatProvider({ baseUrl: `${server.url}//`, model: 'test-model', maxResponseBytes: 4096 });
    await slashed.complete({ messages: MESSAGES }, { timeoutMs: 5_000 });
    expect(server.calls[0]?.path).toBe('/v1/chat/completions');
  });

  it('sends no Authorization header when no key is configured', async () => {
    await provider().complete({ messages: MESSAGES }, { timeoutMs: 5_000 });
    expect(server.calls[0]?.headers.authorization).toBeUndefined();
  });

  it('a 5xx answer is a retryable server_error that names only the status', async () => {
    server.fail(503);
    const error = await modelFailure(provider().complete({ messages: MESSAGES }, { timeoutMs: 5_000 }));
    expectModelFailure(error, 'server_error', true);
    expect(error.httpStatus).toBe(503);
    expect(error.message).toBe('model endpoint answered HTTP 503');
  });

  it('a 429 answer is a retryable rate_limited', async () => {
    server.fail(429);
    expectModelFailure(await modelFailure(provider().complete({ messages: MESSAGES }, { timeoutMs: 5_000 })), 'rate_limited', true);
  });

  it.each([400, 401, 404, 422])('a %i answer is a permanent rejected', async (status) => {
    server.fail(status);
    const error = await modelFailure(provider().complete({ messages: MESSAGES }, { timeoutMs: 5_000 }));
    expectModelFailure(error, 'rejected', false);
    expect(error.httpStatus).toBe(status);
  });

  it('a redirect is not followed (the key must not travel): rejected', async () => {
    const redirecting: typeof fetch = async (_url, init) => {
      expect(init?.redirect).toBe('manual');
      return new Response(null, { status: 307, headers: { location: 'https://elsewhere.test/v1/chat/completions' } });
    };
    const error = await modelFailure(provider({ fetch: redirecting }).complete({ messages: MESSAGES }, { timeoutMs: 5_000 }));
    expectModelFailure(error, 'rejected', false);
    expect(error.httpStatus).toBe(307);
  });

  it('a 200 with a body that is not JSON is a retryable invalid_response', async () => {
    server.invalidJson();
    const error = await modelFailure(provider().complete({ messages: MESSAGES }, { timeoutMs: 5_000 }));
    expectModelFailure(error, 'invalid_response', true);
    expect(error.message).not.toContain('html');
  });

  it.each([
    ['no choices', { choices: [] }],
    ['a choice without a message', { choices: [{ index: 0 }] }],
    ['content that is a number', { choices: [{ message: { role: 'assistant', content: 42 } }] }],
    ['a JSON array', [1, 2, 3]],
  ])('a 200 JSON body with %s is invalid_response', async (_label, body) => {
    const stub: typeof fetch = async () => Response.json(body);
    expectModelFailure(await modelFailure(provider({ fetch: stub }).complete({ messages: MESSAGES }, { timeoutMs: 5_000 })), 'invalid_response', true);
  });

  it('unknown response keys pass through and null content is allowed by the protocol', async () => {
    const stub: typeof fetch = async () =>
      Response.json({ object: 'chat.completion', system_fingerprint: 'fp', choices: [{ message: { role: 'assistant', content: null, refusal: 'no' } }] });
    const response = await provider({ fetch: stub }).complete({ messages: MESSAGES }, { timeoutMs: 5_000 });
    expect(response.choices[0]?.message.content).toBeNull();
    expect(response.system_fingerprint).toBe('fp');
  });

  it('a streamed body over maxResponseBytes stops reading: permanent response_too_large', async () => {
    server.oversize(4 * 1024 * 1024);
    const error = await modelFailure(provider({ maxResponseBytes: 64 * 1024 }).complete({ messages: MESSAGES }, { timeoutMs: 10_000 }));
    expectModelFailure(error, 'response_too_large', false);
  });

  it('a declared Content-Length over maxResponseBytes is refused before the body is read', async () => {
    server.oversize(200 * 1024, { declareLength: true });
    const error = await modelFailure(provider({ maxResponseBytes: 64 * 1024 }).complete({ messages: MESSAGES }, { timeoutMs: 10_000 }));
    expectModelFailure(error, 'response_too_large', false);
  });

  it('a body just under maxResponseBytes is read in full', async () => {
    server.oversize(60 * 1024);
    const response = await provider({ maxResponseBytes: 64 * 1024 }).complete({ messages: MESSAGES }, { timeoutMs: 10_000 });
    expect(response.choices[0]?.message.content).toBe('x');
  });

  it('a refused connection is a retryable connection failure with its system code', async () => {
    const port = await freePort();
    const closed = createHttpChatProvider({ baseUrl: `http://127.0.0.1:${port}/v1`, model: 'm', maxResponseBytes: 4096 });
    const error = await modelFailure(closed.complete({ messages: MESSAGES }, { timeoutMs: 5_000 }));
    expectModelFailure(error, 'connection', true);
    expect(error.providerCode).toBe('ECONNREFUSED');
    expect(error.httpStatus).toBeNull();
  });

  it('the request timeout fails as a retryable timeout long before a slow server answers', async () => {
    server.slow(20_000);
    const started = Date.now();
    const error = await modelFailure(provider().complete({ messages: MESSAGES }, { timeoutMs: 200 }));
    expectModelFailure(error, 'timeout', true);
    expect(Date.now() - started).toBeLessThan(10_000);
    await waitFor(() => server.abortedRequests === 1, { what: 'the server to see the timed-out request close' });
  });

  it('a slow answer within the timeout succeeds', async () => {
    server.respondWith('slow but fine');
    server.slow(100);
    const response = await provider().complete({ messages: MESSAGES }, { timeoutMs: 10_000 });
    expect(response.choices[0]?.message.content).toBe('slow but fine');
  });

  it("aborting the caller's signal during a hanging request aborts the server-side request: aborted, not retryable", async () => {
    server.hang();
    const controller = new AbortController();
    const pending = modelFailure(provider().complete({ messages: MESSAGES }, { signal: controller.signal, timeoutMs: 60_000 }));
    await waitFor(() => server.calls.length === 1, { what: 'the request to reach the server' });
    expect(server.abortedRequests).toBe(0);
    controller.abort();
    expectModelFailure(await pending, 'aborted', false);
    await waitFor(() => server.abortedRequests === 1, { what: 'the server to see the request aborted' });
  });

  it('a signal that already fired fails as aborted without sending anything', async () => {
    const error = await modelFailure(provider().complete({ messages: MESSAGES }, { signal: AbortSignal.abort(), timeoutMs: 5_000 }));
    expectModelFailure(error, 'aborted', false);
    expect(server.calls).toHaveLength(0);
  });

  it('timeoutMs must be a positive finite number of ms', async () => {
    for (const timeoutMs of [0, -1, Number.NaN, Number.POSITIVE_INFINITY]) {
      await expect(provider().complete({ messages: MESSAGES }, { timeoutMs })).rejects.toBeInstanceOf(RangeError);
    }
  });

  it('the API key is sent as the Bearer header and never appears in errors, stacks, JSON, inspect or toString', async () => {
    const keyed = provider({ apiKey: API_KEY });
    server.respondWith('{}');
    await keyed.complete({ messages: MESSAGES }, { timeoutMs: 5_000 });
    expect(server.calls[0]?.headers.authorization).toBe(`Bearer ${API_KEY}`);

    const errors: ModelCallError[] = [];
    for (const status of [500, 401, 429]) {
      server.fail(status);
      errors.push(await modelFailure(keyed.complete({ messages: MESSAGES }, { timeoutMs: 5_000 })));
    }
    server.invalidJson();
    errors.push(await modelFailure(keyed.complete({ messages: MESSAGES }, { timeoutMs: 5_000 })));
    server.hang();
    errors.push(await modelFailure(keyed.complete({ messages: MESSAGES }, { timeoutMs: 100 })));
    const port = await freePort();
    const unreachable = createHttpChatProvider({ baseUrl: `http://127.0.0.1:${port}/v1`, model: 'm', apiKey: API_KEY, maxResponseBytes: 4096 });
    errors.push(await modelFailure(unreachable.complete({ messages: MESSAGES }, { timeoutMs: 5_000 })));

    const renderings = [
      JSON.stringify(keyed),
      String(keyed),
      inspect(keyed, { showHidden: true, depth: 10 }),
      JSON.stringify(Object.entries(keyed)),
      ...errors.flatMap((error) => [error.message, String(error.stack), inspect(error, { showHidden: true, depth: 10 }), JSON.stringify(error)]),
    ];
    for (const text of renderings) {
      expect(text).not.toContain(API_KEY);
      expect(text).not.toContain('SECRET');
      expect(text).not.toContain('private prompt text');
    }
    expect(errors.map((error) => error.cause)).toEqual(errors.map(() => undefined));
  });

  it('a base URL that is not http(s), or carries credentials, is a ConfigError that does not echo it', () => {
    for (const baseUrl of ['ftp://models.test/v1', 'not a url', 'https://user:hunter2@models.test/v1']) {
      let thrown: unknown;
      try {
        createHttpChatProvider({ baseUrl, model: 'm', maxResponseBytes: 4096 });
      } catch (error) {
        thrown = error;
      }
      expect(thrown).toBeInstanceOf(ConfigError);
      expect((thrown as Error).message).not.toContain('hunter2');
      expect((thrown as Error).message).not.toContain(baseUrl);
    }
  });

  it('an API key that could not be a header value is a ConfigError that does not echo it', () => {
    const key = 'sk-line\nbreak-SECRET';
    expect(() => createHttpChatProvider({ baseUrl: server.url, model: 'm', apiKey: key, maxResponseBytes: 4096 })).toThrow(ConfigError);
    try {
      createHttpChatProvider({ baseUrl: server.url, model: 'm', apiKey: key, maxResponseBytes: 4096 });
    } catch (error) {
      expect((error as Error).message).not.toContain('SECRET');
    }
  });
});
