import { z } from 'zod';

/**
 * The subset of the OpenAI chat-completions protocol durable-ops speaks to model endpoints (docs/design.md §5): llama.cpp
 * server, Ollama, vLLM locally, any compatible provider externally, or a model sidecar Lambda that returns the same
 * JSON. Source: OpenAI API reference, "Create chat completion" (`POST /v1/chat/completions`) and its response object.
 *
 * Requests are built by our code, so their schema is strict about what we send; responses come from outside, so their
 * schema is loose (unknown keys pass through) and checks only what we read.
 */

/** Roles we send. The protocol also knows `developer` and `tool`; we never use them. */
export const CHAT_ROLES = ['system', 'user', 'assistant'] as const;

/** A `response_format.json_schema.name`: 1–64 characters of `[A-Za-z0-9_-]` (OpenAI's rule for the name). */
export const JsonSchemaNameSchema = z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'must be 1-64 characters of [A-Za-z0-9_-]');

/** One chat message: `{ role, content }` with plain-text content. */
export const ChatMessageSchema = z.object({
  role: z.enum(CHAT_ROLES),
  content: z.string(),
});

/**
 * The `response_format` of a request: `json_schema` (structured outputs: the model must answer with JSON matching
 * `schema`, a JSON Schema object; `strict: true` asks the server to enforce it) or `json_object` (any JSON object).
 */
export const ResponseFormatSchema = z.discriminatedUnion('type', [
  z.object({
    type: z.literal('json_schema'),
    json_schema: z.object({
      name: JsonSchemaNameSchema,
      schema: z.record(z.string(), z.unknown()),
      strict: z.boolean().optional(),
    }),
  }),
  z.object({ type: z.literal('json_object') }),
]);

/**
 * A chat-completions request body: `{ model, messages, response_format?, max_tokens?, temperature? }`.
 * `max_tokens` caps generated tokens (a positive integer); `temperature` is 0–2. Unknown keys pass through so the
 * stand-in server (`lib/local/stand-in-model.ts`) accepts what other clients send (`top_p`, `seed`, …) and ignores it.
 */
export const ChatRequestSchema = z.looseObject({
  model: z.string().min(1).max(256),
  messages: z.array(ChatMessageSchema).min(1),
  response_format: ResponseFormatSchema.optional(),
  max_tokens: z.number().int().positive().optional(),
  temperature: z.number().min(0).max(2).optional(),
});

/** Token counts the server reports (all optional: not every compatible server sends every count). */
export const ChatUsageSchema = z.looseObject({
  prompt_tokens: z.number().int().nonnegative().optional(),
  completion_tokens: z.number().int().nonnegative().optional(),
  total_tokens: z.number().int().nonnegative().optional(),
});

/**
 * One choice of a response. `message.content` is `null` when the model produced none (e.g. a refusal or a tool
 * call); {@link responseContent} gives the usable text or `null`.
 */
export const ChatChoiceSchema = z.looseObject({
  index: z.number().int().nonnegative().optional(),
  message: z.looseObject({
    role: z.string(),
    content: z.string().nullable(),
  }),
  finish_reason: z.string().nullish(),
});

/**
 * A chat-completions response body: `{ id?, model?, choices: [ { index?, message: { role, content }, finish_reason? } ],
 * usage? }` with at least one choice. Loose: `object`, `created`, `system_fingerprint`, `logprobs`, … pass through.
 */
export const ChatResponseSchema = z.looseObject({
  id: z.string().optional(),
  model: z.string().optional(),
  choices: z.array(ChatChoiceSchema).min(1),
  usage: ChatUsageSchema.nullish(),
});

/** One chat message (see {@link ChatMessageSchema}). */
export type ChatMessage = z.infer<typeof ChatMessageSchema>;
/** A `response_format` (see {@link ResponseFormatSchema}). */
export type ResponseFormat = z.infer<typeof ResponseFormatSchema>;
/** A chat-completions request body (see {@link ChatRequestSchema}). */
export type ChatRequest = z.infer<typeof ChatRequestSchema>;
/** A validated chat-completions response body (see {@link ChatResponseSchema}). */
export type ChatResponse = z.infer<typeof ChatResponseSchema>;

/** The text of the first choice, or `null` when the model produced no text content. */
export function responseContent(response: ChatResponse): string | null {
  return response.choices[0]?.message.content ?? null;
}
