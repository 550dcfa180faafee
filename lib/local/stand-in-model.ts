import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { setTimeout as delay } from 'node:timers/promises';
import { readBoundedRequest } from '../models/bounded-body.js';
import { ChatRequestSchema, type ChatRequest, type ChatResponse } from '../models/chat-protocol.js';
import { schemaInstance } from './stand-in-schema-instance.js';

/**
 * A **deterministic stand-in** for a local model, so the local stack and the tests run offline without model weights.
 * It is not a model: it reads no meaning from the prompt. It answers a chat-completions request with text (or JSON
 * satisfying the requested JSON Schema) derived from a SHA-256 of the last user message, every string marked
 * `[stand-in]`, so the same request always gets the same answer and nobody mistakes it for model output.
 * The JSON it generates follows `lib/local/stand-in-schema-instance.ts`.
 */

/** The `model` every stand-in response names. */
export const STAND_IN_MODEL = 'durable-ops-stand-in';

/** Largest request body the stand-in server reads, in bytes (1 MiB); a larger one is answered 413. */
export const STAND_IN_MAX_REQUEST_BYTES = 1024 * 1024;

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

function estimateTokens(text: string): number {
  return Math.ceil(text.length / 4);
}

/**
 * The stand-in's answer to a chat-completions request (pure: same request, same response). With
 * `response_format.type === 'json_schema'` the content is JSON satisfying that schema (see
 * `lib/local/stand-in-schema-instance.ts` for the keywords honoured); with `json_object` it is `{"text": "[stand-in] …"}`;
 * otherwise a `[stand-in] …` sentence. `created` is 0 and token counts are estimates (characters / 4).
 */
export function standInCompletion(request: ChatRequest): ChatResponse {
  const lastUser = [...request.messages].reverse().find((message) => message.role === 'user')?.content ?? '';
  const seed = sha256(lastUser);
  const format = request.response_format;
  const text = String(schemaInstance({ type: 'string', minLength: 24, maxLength: 120 }, seed));
  const content =
    format?.type === 'json_schema'
      ? JSON.stringify(schemaInstance(format.json_schema.schema, seed))
      : format?.type === 'json_object'
        ? JSON.stringify({ text })
        : text;
  const promptTokens = request.messages.reduce((sum, message) => sum + estimateTokens(message.content), 0);
  const completionTokens = estimateTokens(content);
  return {
    id: `chatcmpl-stand-in-${sha256(JSON.stringify(request)).slice(0, 24)}`,
    object: 'chat.completion',
    created: 0,
    model: STAND_IN_MODEL,
    choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }],
    usage: { prompt_tokens: promptTokens, completion_tokens: completionTokens, total_tokens: promptTokens + completionTokens },
  };
}

/** Options of {@link startStandInModelServer}. */
export interface StandInModelServerOptions {
  /** TCP port; `0` picks a free one (tests). */
  port: number;
  /** Interface to listen on. @default '127.0.0.1' */
  host?: string;
  /** Simulated inference time before each answer, in **milliseconds**. @default 0 */
  delayMs?: number;
}

/** A running stand-in model server. */
export interface StandInModelServer {
  /** The OpenAI-compatible base URL, e.g. `http://127.0.0.1:8080/v1` (give it to `createHttpChatProvider`). */
  readonly baseUrl: string;
  /** Closes every connection and stops listening. */
  close(): Promise<void>;
}

function sendJson(response: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  response.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) }).end(text);
}

function sendError(response: ServerResponse, status: number, message: string): void {
  if (status === 413) response.setHeader('connection', 'close');
  sendJson(response, status, { error: { message, type: 'invalid_request_error', code: null } });
}

async function handle(request: IncomingMessage, response: ServerResponse, delayMs: number): Promise<void> {
  const path = (request.url ?? '/').split('?')[0];
  if (request.method !== 'POST' || path !== '/v1/chat/completions') return sendError(response, 404, 'Not found.');
  const body = await readBoundedRequest(request, STAND_IN_MAX_REQUEST_BYTES);
  if (!body.ok) return sendError(response, 413, 'The request body is larger than 1 MiB.');
  let json: unknown;
  try {
    json = JSON.parse(body.bytes.toString('utf8'));
  } catch {
    return sendError(response, 400, 'The request body is not JSON.');
  }
  const parsed = ChatRequestSchema.safeParse(json);
  if (!parsed.success) return sendError(response, 400, 'The request is not a chat-completions request this stand-in understands.');
  if (parsed.data.stream === true) return sendError(response, 400, 'The stand-in does not stream.');
  if (delayMs > 0) await delay(delayMs);
  sendJson(response, 200, standInCompletion(parsed.data));
}

/**
 * Serves {@link standInCompletion} as `POST /v1/chat/completions` on `node:http` (OpenAI API reference, "Create chat
 * completion"): 200 with the response, 400 for a body that is not JSON or not a chat-completions request (or asks to
 * stream), 413 above {@link STAND_IN_MAX_REQUEST_BYTES}, 404 for anything else. Errors use OpenAI's
 * `{error: {message, type, code}}` shape.
 * @throws {Error} when the port cannot be bound.
 */
export async function startStandInModelServer(options: StandInModelServerOptions): Promise<StandInModelServer> {
  const host = options.host ?? '127.0.0.1';
  const server = createServer((request, response) => {
    handle(request, response, options.delayMs ?? 0).catch(() => {
      if (!response.headersSent) sendError(response, 400, 'The request could not be read.');
      else response.destroy();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address();
  if (address === null || typeof address === 'string') {
    server.close();
    throw new Error('The stand-in model server did not report a TCP address.');
  }
  const urlHost = host.includes(':') ? `[${host}]` : host;
  return {
    baseUrl: `http://${urlHost}:${address.port}/v1`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
