import { ConfigError } from '../errors.js';
import { readBoundedStream } from './bounded-body.js';
import type { ChatRequest, ChatResponse } from './chat-protocol.js';
import { failureForStatus, ModelCallError, transportErrorCode } from './model-errors.js';
import { callSignal, parseChatResponseBody, type ModelCallOptions, type ModelProvider } from './model-provider.js';

/** Options of {@link createHttpChatProvider}. */
export interface HttpChatProviderOptions {
  /**
   * The OpenAI-compatible base URL, e.g. `http://127.0.0.1:8080/v1` (llama.cpp server), `http://127.0.0.1:11434/v1`
   * (Ollama) or `https://api.openai.com/v1`; `/chat/completions` is appended (trailing slashes are dropped). http(s)
   * only, without credentials in it.
   */
  baseUrl: string;
  /** The model name sent as `model`, e.g. `qwen2.5-7b-instruct`. */
  model: string;
  /** The bearer key, sent as `Authorization: Bearer <apiKey>` only when set. Never logged, shown or stored. */
  apiKey?: string;
  /** Largest response body read, in **bytes** (a positive integer); a larger one fails as `response_too_large`. */
  maxResponseBytes: number;
  /** The `fetch` to use. @default globalThis.fetch */
  fetch?: typeof fetch;
}

/** A header value must be visible ASCII (RFC 9110 field-value, no spaces needed in a bearer token). */
const BEARER_KEY = /^[\x21-\x7e]{1,4096}$/;

/**
 * A {@link ModelProvider} that POSTs to `${baseUrl}/chat/completions` with `fetch` (OpenAI API reference, "Create chat
 * completion"). The key lives in a `#private` field: it is not an own enumerable property, so `JSON.stringify`,
 * `util.inspect` and `toString()` never show it, and no error it throws mentions it.
 */
class HttpChatProvider implements ModelProvider {
  readonly kind = 'http' as const;
  readonly model: string;
  readonly #url: string;
  readonly #apiKey: string | undefined;
  readonly #maxResponseBytes: number;
  readonly #fetch: typeof fetch;

  constructor(options: HttpChatProviderOptions) {
    this.model = options.model;
    this.#url = `${options.baseUrl.replace(/\/+$/, '')}/chat/completions`;
    this.#apiKey = options.apiKey;
    this.#maxResponseBytes = options.maxResponseBytes;
    this.#fetch = options.fetch ?? globalThis.fetch;
  }

  /** {@inheritDoc ModelProvider.complete} */
  async complete(request: Omit<ChatRequest, 'model'>, options: ModelCallOptions): Promise<ChatResponse> {
    const call = callSignal(options);
    try {
      let response: Response;
      try {
        response = await this.#fetch(this.#url, {
          method: 'POST',
          headers: this.#headers(),
          body: JSON.stringify({ ...request, model: this.model }),
          signal: call.signal,
          redirect: 'manual',
        });
      } catch (error) {
        throw transportFailure(error, call.reason());
      }
      if (response.status < 200 || response.status > 299) {
        await response.body?.cancel().catch(() => undefined);
        throw new ModelCallError(failureForStatus(response.status), { httpStatus: response.status });
      }
      const declared = Number(response.headers.get('content-length') ?? Number.NaN);
      if (declared > this.#maxResponseBytes) {
        call.stop();
        await response.body?.cancel().catch(() => undefined);
        throw new ModelCallError('response_too_large');
      }
      let body;
      try {
        body = await readBoundedStream(response.body, this.#maxResponseBytes);
      } catch (error) {
        throw transportFailure(error, call.reason());
      }
      if (!body.ok) {
        call.stop();
        throw new ModelCallError('response_too_large');
      }
      return parseChatResponseBody(body.bytes);
    } finally {
      call.dispose();
    }
  }

  /** `HttpChatProvider(<model>)`: never the URL (it may carry a token in its query) or the key. */
  toString(): string {
    return `HttpChatProvider(${this.model})`;
  }

  /** What `JSON.stringify` shows: the kind and the model, nothing else. */
  toJSON(): { kind: 'http'; model: string } {
    return { kind: this.kind, model: this.model };
  }

  #headers(): Record<string, string> {
    const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json' };
    if (this.#apiKey !== undefined) headers.authorization = `Bearer ${this.#apiKey}`;
    return headers;
  }
}

function transportFailure(error: unknown, reason: 'aborted' | 'timeout' | null): ModelCallError {
  if (error instanceof ModelCallError) return error;
  if (reason !== null) return new ModelCallError(reason);
  const providerCode = transportErrorCode(error);
  return new ModelCallError('connection', providerCode === undefined ? {} : { providerCode });
}

/**
 * Builds a {@link ModelProvider} for an OpenAI-compatible HTTP endpoint (docs/design.md §5). Each `complete` call:
 *
 * - POSTs `{ ...request, model }` as JSON, with `Authorization: Bearer <apiKey>` only when a key is configured, and
 *   does not follow redirects (a 3xx is `rejected`: the key must not travel to another host);
 * - runs under the caller's signal and `timeoutMs` (caller abort → `aborted`, timeout → `timeout`; either aborts the
 *   HTTP request on the wire);
 * - maps a non-2xx status to `rate_limited` (429), `server_error` (5xx) or `rejected` without reading the body;
 * - reads the body as a stream and stops once more than `maxResponseBytes` arrived (`response_too_large`);
 * - parses and validates it as a chat-completions response (`invalid_response`).
 *
 * @throws {ConfigError} when `baseUrl` is not an http(s) URL, carries credentials, or `apiKey` is not a visible-ASCII
 *   token of at most 4096 characters; the message never includes either value.
 * @throws {RangeError} when `maxResponseBytes` is not a positive integer.
 */
export function createHttpChatProvider(options: HttpChatProviderOptions): ModelProvider {
  let url: URL;
  try {
    url = new URL(options.baseUrl);
  } catch {
    throw new ConfigError('The model base URL is not a valid URL.');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new ConfigError('The model base URL must be an http(s) URL.');
  if (url.username !== '' || url.password !== '') throw new ConfigError('The model base URL must not carry credentials.');
  if (options.apiKey !== undefined && !BEARER_KEY.test(options.apiKey)) {
    throw new ConfigError('The model API key must be 1-4096 visible ASCII characters.');
  }
  if (!Number.isInteger(options.maxResponseBytes) || options.maxResponseBytes <= 0) {
    throw new RangeError('maxResponseBytes must be a positive integer');
  }
  if (options.model.length === 0) throw new ConfigError('The model name must not be empty.');
  return new HttpChatProvider(options);
}
