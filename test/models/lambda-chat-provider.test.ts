import { InvokeCommand, LambdaClient } from '@aws-sdk/client-lambda';
import { inspect } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { LAMBDA_SYNC_PAYLOAD_LIMIT_BYTES, startLocalLambda, type LocalLambda } from '../../lib/local/local-lambda.js';
import { STAND_IN_MODEL, standInCompletion } from '../../lib/local/stand-in-model.js';
import { ChatRequestSchema } from '../../lib/models/chat-protocol.js';
import { createLambdaChatProvider } from '../../lib/models/lambda-chat-provider.js';
import { requestStructured } from '../../lib/models/structured-output.js';
import { expectModelFailure, modelFailure } from '../support/model-failures.js';
import { waitFor } from '../support/wait-for.js';

const MESSAGES = [{ role: 'user' as const, content: 'summarise my private notes' }];

class ModelLoadError extends Error {
  override name = 'ModelLoadError';
}

let lambda: LocalLambda;
let client: LambdaClient;
let hangingInvocations = 0;
const sidecarPayloads: unknown[] = [];

beforeAll(async () => {
  lambda = await startLocalLambda({
    port: 0,
    functions: {
      'model-sidecar': async (payload) => {
        sidecarPayloads.push(payload);
        return standInCompletion(ChatRequestSchema.parse(payload));
      },
      'crashing-sidecar': async () => {
        throw new ModelLoadError('weights missing: private notes would be here');
      },
      'chatty-sidecar': async (payload) => {
        const response = standInCompletion(ChatRequestSchema.parse(payload));
        return { ...response, padding: 'p'.repeat(16 * 1024) };
      },
      'envelope-sidecar': async (payload) => ({ statusCode: 200, body: JSON.stringify(standInCompletion(ChatRequestSchema.parse(payload))) }),
      'hanging-sidecar': () => {
        hangingInvocations += 1;
        return new Promise(() => undefined);
      },
      echo: async (payload) => ({ received: payload }),
    },
  });
  client = new LambdaClient({
    region: 'us-east-1',
    endpoint: lambda.endpoint,
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    maxAttempts: 1,
  });
});

afterAll(async () => {
  client?.destroy();
  await lambda?.close();
});

function provider(functionName: string, maxResponseBytes = 64 * 1024) {
  return createLambdaChatProvider({ functionName, model: 'sidecar-model', client, maxResponseBytes });
}


describe('local Lambda Invoke API, through @aws-sdk/client-lambda', () => {
  it('a RequestResponse invocation returns the function result as the payload with status 200', async () => {
    const output = await client.send(
      new InvokeCommand({ FunctionName: 'echo', InvocationType: 'RequestResponse', Payload: new TextEncoder().encode('{"a":1}') }),
    );
    expect(output.StatusCode).toBe(200);
    expect(output.FunctionError).toBeUndefined();
    expect(output.ExecutedVersion).toBe('$LATEST');
    expect(JSON.parse(output.Payload!.transformToString())).toEqual({ received: { a: 1 } });
  });

  it('a function ARN with a qualifier resolves to the function', async () => {
    const output = await client.send(
      new InvokeCommand({ FunctionName: 'arn:aws:lambda:us-east-1:000000000000:function:echo:live', Payload: new TextEncoder().encode('{}') }),
    );
    expect(JSON.parse(output.Payload!.transformToString())).toEqual({ received: {} });
  });

  it('a function that throws answers 200 with FunctionError Unhandled and {errorType, errorMessage}', async () => {
    const output = await client.send(new InvokeCommand({ FunctionName: 'crashing-sidecar', Payload: new TextEncoder().encode('{}') }));
    expect(output.StatusCode).toBe(200);
    expect(output.FunctionError).toBe('Unhandled');
    expect(JSON.parse(output.Payload!.transformToString())).toMatchObject({ errorType: 'ModelLoadError', errorMessage: expect.any(String) });
  });

  it('an unknown function makes the SDK throw ResourceNotFoundException (404)', async () => {
    const error = await client.send(new InvokeCommand({ FunctionName: 'no-such-function' })).catch((thrown: unknown) => thrown);
    expect(error).toMatchObject({ name: 'ResourceNotFoundException', $fault: 'client', $metadata: { httpStatusCode: 404 } });
    expect((error as Error).message).toContain('Function not found');
  });

  it('a payload that is not JSON makes the SDK throw InvalidRequestContentException', async () => {
    const error = await client.send(new InvokeCommand({ FunctionName: 'echo', Payload: new TextEncoder().encode('{nope') })).catch((thrown: unknown) => thrown);
    expect(error).toMatchObject({ name: 'InvalidRequestContentException', $metadata: { httpStatusCode: 400 } });
  });

  it('a payload above 6 MB makes the SDK throw RequestTooLargeException', async () => {
    const payload = new TextEncoder().encode(JSON.stringify({ big: 'x'.repeat(LAMBDA_SYNC_PAYLOAD_LIMIT_BYTES) }));
    const error = await client.send(new InvokeCommand({ FunctionName: 'echo', Payload: payload })).catch((thrown: unknown) => thrown);
    expect(error).toMatchObject({ name: 'RequestTooLargeException', $metadata: { httpStatusCode: 413 } });
  });
});

describe('Lambda chat provider', () => {
  it('invokes the sidecar with the chat-completions request and validates its chat-completions answer', async () => {
    const schema = z.object({ headline: z.string().max(80), points: z.array(z.string().max(120)).min(1).max(3) });
    const result = await requestStructured(provider('model-sidecar'), { messages: MESSAGES, schema, schemaName: 'summary' }, { timeoutMs: 10_000 });
    expect(schema.parse(result.output)).toEqual(result.output);
    expect(result.model).toBe(STAND_IN_MODEL);
  });

  it('sends the same request JSON as the HTTP provider, with the configured model, as the payload', async () => {
    sidecarPayloads.length = 0;
    const response = await provider('model-sidecar').complete({ messages: MESSAGES, max_tokens: 64 }, { timeoutMs: 10_000 });
    expect(response.choices[0]?.message.content).toMatch(/^\[stand-in\] /);
    expect(sidecarPayloads).toEqual([{ messages: MESSAGES, max_tokens: 64, model: 'sidecar-model' }]);
  });

  it('a FunctionError is a retryable function_error carrying only the errorType', async () => {
    const error = await modelFailure(provider('crashing-sidecar').complete({ messages: MESSAGES }, { timeoutMs: 10_000 }));
    expectModelFailure(error, 'function_error', true);
    expect(error.providerCode).toBe('ModelLoadError');
    expect(error.message).not.toContain('private notes');
    expect(inspect(error, { showHidden: true, depth: 10 })).not.toContain('private notes');
  });

  it('an unknown function is a permanent rejected with the SDK error name', async () => {
    const error = await modelFailure(provider('no-such-function').complete({ messages: MESSAGES }, { timeoutMs: 10_000 }));
    expectModelFailure(error, 'rejected', false);
    expect(error.httpStatus).toBe(404);
    expect(error.providerCode).toBe('ResourceNotFoundException');
  });

  it('a payload larger than maxResponseBytes is a permanent response_too_large', async () => {
    const error = await modelFailure(provider('chatty-sidecar', 8 * 1024).complete({ messages: MESSAGES }, { timeoutMs: 10_000 }));
    expectModelFailure(error, 'response_too_large', false);
  });

  it('a {statusCode, body} envelope is not unwrapped: invalid_response', async () => {
    const error = await modelFailure(provider('envelope-sidecar').complete({ messages: MESSAGES }, { timeoutMs: 10_000 }));
    expectModelFailure(error, 'invalid_response', true);
  });

  it('the request timeout fails as a retryable timeout while the function still runs', async () => {
    const started = Date.now();
    const error = await modelFailure(provider('hanging-sidecar').complete({ messages: MESSAGES }, { timeoutMs: 300 }));
    expectModelFailure(error, 'timeout', true);
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it("aborting the caller's signal during an invocation fails as aborted, not retryable", async () => {
    const before = hangingInvocations;
    const controller = new AbortController();
    const pending = modelFailure(provider('hanging-sidecar').complete({ messages: MESSAGES }, { signal: controller.signal, timeoutMs: 60_000 }));
    await waitFor(() => hangingInvocations === before + 1, { what: 'the invocation to reach the function' });
    controller.abort();
    expectModelFailure(await pending, 'aborted', false);
  });

  it('a function name that is neither a name nor an ARN is refused at construction', () => {
    expect(() => provider('bad name!')).toThrow(/function name/);
  });

  it('JSON, toString and inspect show the kind and model only', () => {
    const sidecar = provider('model-sidecar');
    expect(JSON.parse(JSON.stringify(sidecar))).toEqual({ kind: 'lambda', model: 'sidecar-model' });
    expect(String(sidecar)).toBe('LambdaChatProvider(sidecar-model)');
    expect(inspect(sidecar, { depth: 5 })).not.toContain('local');
  });
});
