import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { STAND_IN_MODEL, standInCompletion, startStandInModelServer, type StandInModelServer } from '../../lib/local/stand-in-model.js';
import { schemaInstance } from '../../lib/local/stand-in-schema-instance.js';
import type { ChatRequest } from '../../lib/models/chat-protocol.js';
import { createHttpChatProvider } from '../../lib/models/http-chat-provider.js';
import { requestStructured } from '../../lib/models/structured-output.js';

/** Shaped like a real task's output: bounded strings, bounded arrays, nested objects, enums, numbers, formats. */
const StrategySnapshot = z.object({
  title: z.string().min(3).max(80),
  summary: z.string().min(40).max(400),
  steps: z
    .array(
      z.object({
        title: z.string().max(60),
        detail: z.string().max(200),
        effort: z.enum(['small', 'medium', 'large']),
        owner: z.string().max(40).nullable(),
      }),
    )
    .min(2)
    .max(5),
  risks: z.array(z.string().min(1).max(120)).min(1).max(3),
  tags: z.array(z.string().max(5)).max(4),
  confidence: z.number().min(0).max(1),
  priority: z.number().int().min(1).max(5),
  positive: z.number().positive().lt(1),
  even: z.number().int().multipleOf(2).min(3).max(9),
  meta: z.object({ reviewed: z.boolean(), version: z.literal(1), pair: z.tuple([z.string(), z.number().int()]) }),
  id: z.uuid(),
  contact: z.email(),
  note: z.string().optional(),
});

function request(userText: string, schema: z.ZodType = StrategySnapshot): ChatRequest {
  const { $schema: _ignored, ...jsonSchema } = z.toJSONSchema(schema) as Record<string, unknown>;
  return {
    model: 'anything',
    messages: [
      { role: 'system', content: 'Answer as JSON.' },
      { role: 'user', content: userText },
    ],
    response_format: { type: 'json_schema', json_schema: { name: 'snapshot', schema: jsonSchema, strict: true } },
  };
}

function content(response: ReturnType<typeof standInCompletion>): string {
  const text = response.choices[0]?.message.content;
  if (typeof text !== 'string') throw new Error('no content');
  return text;
}

describe('deterministic stand-in model', () => {
  it('answers a json_schema request with JSON that satisfies a realistic zod schema', () => {
    for (const text of ['plan the launch', 'another job', '', 'ü'.repeat(500)]) {
      const output = StrategySnapshot.parse(JSON.parse(content(standInCompletion(request(text)))));
      expect(output.title.startsWith('[stand-in]')).toBe(true);
      expect(output.summary.length).toBeGreaterThanOrEqual(40);
      expect(output).not.toHaveProperty('note');
    }
  });

  it('the same request gets the same answer; another user message gets another', () => {
    const first = standInCompletion(request('plan the launch'));
    expect(standInCompletion(request('plan the launch'))).toEqual(first);
    expect(content(standInCompletion(request('plan the retrospective')))).not.toBe(content(first));
  });

  it('names itself, finishes with stop and reports token estimates', () => {
    const response = standInCompletion(request('x'));
    expect(response.model).toBe(STAND_IN_MODEL);
    expect(response.choices[0]?.finish_reason).toBe('stop');
    expect(response.usage?.total_tokens).toBe((response.usage?.prompt_tokens ?? 0) + (response.usage?.completion_tokens ?? 0));
  });

  it('without a schema it answers a [stand-in] sentence, and with json_object a JSON object', () => {
    const plain = standInCompletion({ model: 'm', messages: [{ role: 'user', content: 'hi' }] });
    expect(content(plain)).toMatch(/^\[stand-in\] /);
    const object = standInCompletion({ model: 'm', messages: [{ role: 'user', content: 'hi' }], response_format: { type: 'json_object' } });
    expect(JSON.parse(content(object))).toEqual({ text: expect.stringMatching(/^\[stand-in\] /) });
  });

  it('honours tight string bounds, unions, records and $ref definitions', () => {
    const Node: z.ZodType<{ label: string; children: { label: string }[] }> = z.object({
      label: z.string().max(4),
      children: z.array(z.object({ label: z.string().length(12) })).max(1),
    });
    const schema = z.object({
      tiny: z.string().min(2).max(3),
      long: z.string().min(300).max(310),
      either: z.union([z.null(), z.object({ kind: z.literal('a'), n: z.number().gt(10).lt(11) })]),
      scores: z.record(z.string(), z.number()),
      tree: Node,
      shared: z.array(Node).min(1),
    });
    for (const seed of ['a', 'b', 'c']) {
      expect(() => schema.parse(schemaInstance(z.toJSONSchema(schema), seed))).not.toThrow();
    }
  });

  it('follows $ref into $defs and ends a recursive schema', () => {
    interface Category {
      name: string;
      subcategories: Category[];
    }
    const Category: z.ZodType<Category> = z.object({
      name: z.string().max(30),
      get subcategories() {
        return z.array(Category);
      },
    });
    const Tree = z.object({ root: Category, related: z.array(Category).min(1).max(2) });
    const jsonSchema = z.toJSONSchema(Tree, { reused: 'ref' });
    expect(JSON.stringify(jsonSchema)).toContain('$ref');
    for (const seed of ['a', 'b', 'c']) expect(() => Tree.parse(schemaInstance(jsonSchema, seed))).not.toThrow();
  });

  describe('as an HTTP server', () => {
    let server: StandInModelServer;

    beforeAll(async () => {
      server = await startStandInModelServer({ port: 0 });
    });

    afterAll(async () => {
      await server.close();
    });

    it('serves /v1/chat/completions so structured output works end to end offline', async () => {
      expect(server.baseUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/v1$/);
      const provider = createHttpChatProvider({ baseUrl: server.baseUrl, model: 'local', maxResponseBytes: 1024 * 1024 });
      const messages = [{ role: 'user' as const, content: 'plan the launch' }];
      const result = await requestStructured(provider, { messages, schema: StrategySnapshot, schemaName: 'snapshot' }, { timeoutMs: 5_000 });
      expect(result.model).toBe(STAND_IN_MODEL);
      const again = await requestStructured(provider, { messages, schema: StrategySnapshot, schemaName: 'snapshot' }, { timeoutMs: 5_000 });
      expect(again.output).toEqual(result.output);
    });

    it('answers 400 to a body that is not JSON or not a chat-completions request', async () => {
      const url = `${server.baseUrl}/chat/completions`;
      for (const body of ['{nope', '{"model":"m"}', '{"model":"m","messages":[{"role":"wizard","content":"x"}]}']) {
        const response = await fetch(url, { method: 'POST', body, headers: { 'content-type': 'application/json' } });
        expect(response.status).toBe(400);
        expect(await response.json()).toMatchObject({ error: { type: 'invalid_request_error' } });
      }
    });

    it('answers 404 to any other path or method, and 413 to a body over 1 MiB', async () => {
      expect((await fetch(`${server.baseUrl}/models`)).status).toBe(404);
      expect((await fetch(`${server.baseUrl}/chat/completions`)).status).toBe(404);
      const huge = JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'x'.repeat(1024 * 1024) }] });
      const response = await fetch(`${server.baseUrl}/chat/completions`, { method: 'POST', body: huge }).catch((error: unknown) => error);
      // The server may close the connection while the client is still sending: either way nothing was served.
      if (response instanceof Response) expect(response.status).toBe(413);
      else expect(response).toBeInstanceOf(Error);
    });
  });
});
