import { ChatResponseSchema, type ChatRequest, type ChatResponse } from './chat-protocol.js';
import { ModelCallError } from './model-errors.js';

/** Options of one {@link ModelProvider.complete} call. */
export interface ModelCallOptions {
  /**
   * The caller's signal: aborting it (cancel requested, lease lost, the Lambda running out of time) stops the request
   * at once — the HTTP request or Lambda invocation is aborted on the wire — and the call fails as `aborted`.
   */
  signal?: AbortSignal;
  /**
   * Longest the whole call may take, in **milliseconds**, a positive finite number: from sending the request to the
   * last byte of the answer. When it passes, the request is aborted and the call fails as `timeout`.
   */
  timeoutMs: number;
}

/**
 * A model route: one OpenAI-compatible chat-completions endpoint (docs/design.md §5), reached over HTTP
 * (`lib/models/http-chat-provider.ts`) or as a model sidecar Lambda (`lib/models/lambda-chat-provider.ts`).
 * Implementations hold no per-call state and never expose a credential in `toString()`, JSON or `util.inspect`.
 */
export interface ModelProvider {
  /** How the endpoint is reached. */
  readonly kind: 'http' | 'lambda';
  /** The model name sent as `model` in every request (the route's configured model). */
  readonly model: string;
  /**
   * Sends one chat-completions request (`model` is added) and returns the validated response.
   * @throws {ModelCallError} on every failure — timeout, abort, transport, non-2xx, a body that is not
   *   chat-completions JSON, a body larger than the route's limit, a Lambda function error.
   * @throws {RangeError} when `options.timeoutMs` is not a positive finite number.
   */
  complete(request: Omit<ChatRequest, 'model'>, options: ModelCallOptions): Promise<ChatResponse>;
}

/** The signal one call runs under, and how to tell afterwards why it fired. Call {@link CallSignal.dispose} when done. */
export interface CallSignal {
  /** Fires on the caller's abort, on the timeout, or on {@link CallSignal.stop}. */
  readonly signal: AbortSignal;
  /** Aborts the call from inside (e.g. the body grew too large), so the transport closes the connection. */
  stop(): void;
  /** `aborted` when the caller's signal fired, `timeout` when the timeout passed, else `null`. */
  reason(): 'aborted' | 'timeout' | null;
  /** Clears the timer. */
  dispose(): void;
}

/**
 * Combines the caller's signal with a timeout of `timeoutMs` and an internal stop, as
 * `AbortSignal.any([options.signal, AbortSignal.timeout(timeoutMs), stop])` does, but with a timer that is cleared
 * when the call ends (a pending `AbortSignal.timeout` would live on for the whole timeout after every call).
 * @throws {RangeError} when `timeoutMs` is not a positive finite number.
 * @throws {ModelCallError} `aborted` when the caller's signal has already fired.
 */
export function callSignal(options: ModelCallOptions): CallSignal {
  if (!Number.isFinite(options.timeoutMs) || options.timeoutMs <= 0) throw new RangeError('timeoutMs must be a positive finite number of milliseconds');
  if (options.signal?.aborted) throw new ModelCallError('aborted');
  const timeout = new AbortController();
  const stop = new AbortController();
  const timer = setTimeout(() => timeout.abort(new DOMException('model request timed out', 'TimeoutError')), options.timeoutMs);
  const signals = [timeout.signal, stop.signal, ...(options.signal ? [options.signal] : [])];
  return {
    signal: AbortSignal.any(signals),
    stop: () => stop.abort(new DOMException('model call stopped', 'AbortError')),
    reason: () => (options.signal?.aborted ? 'aborted' : timeout.signal.aborted ? 'timeout' : null),
    dispose: () => clearTimeout(timer),
  };
}

/**
 * Decodes a 2xx answer's body (UTF-8 JSON) and validates it against {@link ChatResponseSchema}.
 * @throws {ModelCallError} `invalid_response` when it is not JSON or not a chat-completions response; the error holds
 *   neither the body nor the parser's message (which quotes the body).
 */
export function parseChatResponseBody(bytes: Uint8Array): ChatResponse {
  let json: unknown;
  try {
    json = JSON.parse(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8'));
  } catch {
    throw new ModelCallError('invalid_response');
  }
  const parsed = ChatResponseSchema.safeParse(json);
  if (!parsed.success) throw new ModelCallError('invalid_response');
  return parsed.data;
}
