import { z } from 'zod';
import { JsonSchemaNameSchema, responseContent, type ChatMessage } from './chat-protocol.js';
import { ModelCallError } from './model-errors.js';
import type { ModelCallOptions, ModelProvider } from './model-provider.js';

/** Longest model name kept from a response (it is stored as provenance; docs/design.md §5). */
const MAX_MODEL_NAME = 64;

/** What {@link requestStructured} asks for. */
export interface StructuredRequest<S extends z.ZodType> {
  /** The conversation, e.g. a system instruction and the user's input. */
  messages: readonly ChatMessage[];
  /** The zod schema the answer must satisfy; it is sent as JSON Schema (`z.toJSONSchema`) and checked again here. */
  schema: S;
  /** `response_format.json_schema.name`: 1–64 characters of `[A-Za-z0-9_-]`, e.g. `strategy_snapshot`. */
  schemaName: string;
  /** Cap on generated tokens (`max_tokens`), a positive integer. @default the server's */
  maxTokens?: number;
  /** Sampling temperature 0–2. @default the server's */
  temperature?: number;
}

/** The validated answer of {@link requestStructured}. */
export interface StructuredResult<T> {
  /** The model's JSON, parsed and validated by the request's schema (its output type, after transforms). */
  readonly output: T;
  /** The model that answered, as the response names it (at most 64 characters), else the provider's model. */
  readonly model: string;
}

/**
 * Asks a model for JSON matching a zod schema (OpenAI "Structured Outputs": `response_format: {type: 'json_schema',
 * json_schema: {name, schema, strict: true}}`) and validates the answer with that schema before anything uses it
 * (docs/design.md §5: responses are validated with zod before anything is published).
 *
 * The top-level `$schema` keyword of the generated JSON Schema is dropped (some servers refuse unknown keywords).
 * Note that OpenAI's strict mode accepts only a subset of JSON Schema (every property required, no open records);
 * llama.cpp, Ollama and vLLM turn the schema into a grammar and accept more.
 *
 * @throws {ModelCallError} whatever `provider.complete` throws; `invalid_output` when the first choice has no content,
 *   the content is not JSON, or the schema refuses it (the error never holds the content or the zod issues' input).
 * @throws {RangeError} when `schemaName` is not 1–64 characters of `[A-Za-z0-9_-]`.
 * @throws {Error} from `z.toJSONSchema` when the schema cannot be expressed as JSON Schema (e.g. a transform on input).
 */
export async function requestStructured<S extends z.ZodType>(
  provider: ModelProvider,
  request: StructuredRequest<S>,
  options: ModelCallOptions,
): Promise<StructuredResult<z.output<S>>> {
  if (!JsonSchemaNameSchema.safeParse(request.schemaName).success) {
    throw new RangeError('schemaName must be 1-64 characters of [A-Za-z0-9_-]');
  }
  const { $schema: _dropped, ...jsonSchema } = z.toJSONSchema(request.schema) as Record<string, unknown>;
  const response = await provider.complete(
    {
      messages: [...request.messages],
      response_format: { type: 'json_schema', json_schema: { name: request.schemaName, schema: jsonSchema, strict: true } },
      ...(request.maxTokens === undefined ? {} : { max_tokens: request.maxTokens }),
      ...(request.temperature === undefined ? {} : { temperature: request.temperature }),
    },
    options,
  );
  const content = responseContent(response);
  if (content === null) throw new ModelCallError('invalid_output');
  let json: unknown;
  try {
    json = JSON.parse(content);
  } catch {
    throw new ModelCallError('invalid_output');
  }
  const parsed = request.schema.safeParse(json);
  if (!parsed.success) throw new ModelCallError('invalid_output');
  const named = response.model?.slice(0, MAX_MODEL_NAME);
  return { output: parsed.data, model: named ? named : provider.model };
}
