import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createHttpChatProvider } from '../../lib/models/http-chat-provider.js';
import { ModelCallError } from '../../lib/models/model-errors.js';
import type { ModelProvider } from '../../lib/models/model-provider.js';
import { requestStructured } from '../../lib/models/structured-output.js';
import { startFakeModelServer, type FakeModelServer } from '../support/fake-model-server.js';

const Verdict = z.object({
  verdict: z.enum(['go', 'wait']),
  reasons: z.array(z.string().max(100)).min(1).max(3),
});
const MESSAGES = [{ role: 'user' as const, content: 'should we ship?' }];

let server: FakeModelServer;
let provider: ModelProvider;

beforeEach(async () => {
  server = await startFakeModelServer();
  provider = createHttpChatProvider({ baseUrl: server.url, model: 'configured-model', maxResponseBytes: 64 * 1024 });
});

afterEach(async () => {
  await server.close();
});

async function outputFailure(call: Promise<unknown>): Promise<ModelCallError> {
  const error = await call.then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  expect(error).toBeInstanceOf(ModelCallError);
  return error as ModelCallError;
}

function stubProvider(content: string | null, model?: string): ModelProvider {
  return {
    kind: 'http',
    model: 'configured-model',
    complete: async () => ({ ...(model === undefined ? {} : { model }), choices: [{ message: { role: 'assistant', content } }] }),
  };
}

describe('structured output', () => {
  it('valid JSON matching the schema is returned as output, with the model the response names', async () => {
    server.respondWith('{"verdict":"go","reasons":["tests are green"]}');
    const result = await requestStructured(provider, { messages: MESSAGES, schema: Verdict, schemaName: 'verdict', maxTokens: 200 }, { timeoutMs: 5_000 });
    expect(result).toEqual({ output: { verdict: 'go', reasons: ['tests are green'] }, model: 'fake-model' });
  });

  it('asks for strict json_schema output with the zod schema as JSON Schema (without $schema)', async () => {
    server.respondWith('{"verdict":"wait","reasons":["r"]}');
    await requestStructured(provider, { messages: MESSAGES, schema: Verdict, schemaName: 'verdict', maxTokens: 200, temperature: 0 }, { timeoutMs: 5_000 });
    const { $schema: _ignored, ...expected } = z.toJSONSchema(Verdict) as Record<string, unknown>;
    expect(server.calls[0]?.body).toEqual({
      model: 'configured-model',
      messages: MESSAGES,
      response_format: { type: 'json_schema', json_schema: { name: 'verdict', schema: expected, strict: true } },
      max_tokens: 200,
      temperature: 0,
    });
    expect(JSON.stringify(server.calls[0]?.body)).not.toContain('$schema');
  });

  it('content that is not JSON is a permanent invalid_output that does not quote it', async () => {
    server.respondWith('Sure! Here is the verdict: go');
    const error = await outputFailure(requestStructured(provider, { messages: MESSAGES, schema: Verdict, schemaName: 'verdict' }, { timeoutMs: 5_000 }));
    expect(error.failure).toBe('invalid_output');
    expect(error.retryable).toBe(false);
    expect(error.message).not.toContain('Sure');
    expect(error.cause).toBeUndefined();
  });

  it('JSON that fails the schema is a permanent invalid_output', async () => {
    server.respondWith('{"verdict":"maybe","reasons":[]}');
    const error = await outputFailure(requestStructured(provider, { messages: MESSAGES, schema: Verdict, schemaName: 'verdict' }, { timeoutMs: 5_000 }));
    expect(error.failure).toBe('invalid_output');
    expect(error.message).not.toContain('maybe');
  });

  it('a response without content is invalid_output', async () => {
    const error = await outputFailure(requestStructured(stubProvider(null), { messages: MESSAGES, schema: Verdict, schemaName: 'verdict' }, { timeoutMs: 5_000 }));
    expect(error.failure).toBe('invalid_output');
  });

  it('the model falls back to the provider model and is bounded to 64 characters', async () => {
    const content = '{"verdict":"go","reasons":["x"]}';
    const unnamed = await requestStructured(stubProvider(content), { messages: MESSAGES, schema: Verdict, schemaName: 'verdict' }, { timeoutMs: 5_000 });
    expect(unnamed.model).toBe('configured-model');
    const long = await requestStructured(stubProvider(content, 'm'.repeat(300)), { messages: MESSAGES, schema: Verdict, schemaName: 'verdict' }, { timeoutMs: 5_000 });
    expect(long.model).toBe('m'.repeat(64));
  });

  it('transport failures pass through unchanged', async () => {
    server.fail(502);
    const error = await outputFailure(requestStructured(provider, { messages: MESSAGES, schema: Verdict, schemaName: 'verdict' }, { timeoutMs: 5_000 }));
    expect(error.failure).toBe('server_error');
  });

  it('a schema name outside [A-Za-z0-9_-]{1,64} is refused before any request', async () => {
    await expect(requestStructured(provider, { messages: MESSAGES, schema: Verdict, schemaName: 'has spaces' }, { timeoutMs: 5_000 })).rejects.toBeInstanceOf(RangeError);
    expect(server.calls).toHaveLength(0);
  });
});
