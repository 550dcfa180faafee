import { InvokeCommand, type InvokeCommandOutput, type LambdaClient } from '@aws-sdk/client-lambda';
import { ConfigError } from '../errors.js';
import type { ChatRequest, ChatResponse } from './chat-protocol.js';
import { failureForStatus, ModelCallError, transportErrorCode } from './model-errors.js';
import { callSignal, parseChatResponseBody, type ModelCallOptions, type ModelProvider } from './model-provider.js';

/** Options of {@link createLambdaChatProvider}. */
export interface LambdaChatProviderOptions {
  /** The model sidecar's function name or ARN (see {@link parseModelRoute}). */
  functionName: string;
  /** The model name sent as `model` in the payload. */
  model: string;
  /**
   * The client to invoke with; its retry settings apply to every call, all within `timeoutMs`. `createModelRoutes`
   * builds it with `maxAttempts: 1`: the worker's attempts and the route's breaker decide about retries, not the SDK.
   */
  client: LambdaClient;
  /** Largest payload accepted, in **bytes** (a positive integer); Lambda itself caps it at 6 MB. */
  maxResponseBytes: number;
}

/** A function name (AWS Lambda naming rule) or a full function ARN with an optional version or alias. */
const FUNCTION_NAME = /^[a-zA-Z0-9_-]{1,64}$/;
const FUNCTION_ARN = /^arn:aws[a-zA-Z-]*:lambda:[a-z]{2}(-gov)?-[a-z]+-\d:\d{12}:function:[a-zA-Z0-9_-]{1,64}(:(\$LATEST|[a-zA-Z0-9_-]{1,128}))?$/;

/**
 * A {@link ModelProvider} that invokes a model sidecar Lambda synchronously. The payload is the same chat-completions
 * request JSON the HTTP provider posts, and the function returns the chat-completions response JSON directly (a
 * `{statusCode, body}` envelope is not unwrapped: it fails as `invalid_response`).
 */
class LambdaChatProvider implements ModelProvider {
  readonly kind = 'lambda' as const;
  readonly model: string;
  readonly #functionName: string;
  readonly #client: LambdaClient;
  readonly #maxResponseBytes: number;

  constructor(options: LambdaChatProviderOptions) {
    this.model = options.model;
    this.#functionName = options.functionName;
    this.#client = options.client;
    this.#maxResponseBytes = options.maxResponseBytes;
  }

  /** {@inheritDoc ModelProvider.complete} */
  async complete(request: Omit<ChatRequest, 'model'>, options: ModelCallOptions): Promise<ChatResponse> {
    const call = callSignal(options);
    try {
      const command = new InvokeCommand({
        FunctionName: this.#functionName,
        InvocationType: 'RequestResponse',
        Payload: new TextEncoder().encode(JSON.stringify({ ...request, model: this.model })),
      });
      let output: InvokeCommandOutput;
      try {
        output = await this.#client.send(command, { abortSignal: call.signal });
      } catch (error) {
        throw sdkFailure(error, call.reason());
      }
      const payload = output.Payload ?? new Uint8Array(0);
      if (output.FunctionError !== undefined) {
        const providerCode = payload.byteLength <= this.#maxResponseBytes ? functionErrorType(payload) : undefined;
        throw new ModelCallError('function_error', { providerCode: providerCode ?? output.FunctionError });
      }
      if (payload.byteLength > this.#maxResponseBytes) throw new ModelCallError('response_too_large');
      return parseChatResponseBody(payload);
    } finally {
      call.dispose();
    }
  }

  /** `LambdaChatProvider(<model>)`. */
  toString(): string {
    return `LambdaChatProvider(${this.model})`;
  }

  /** What `JSON.stringify` shows: the kind and the model. */
  toJSON(): { kind: 'lambda'; model: string } {
    return { kind: this.kind, model: this.model };
  }
}

/** The `errorType` of a Lambda error payload (`{errorType, errorMessage, trace}`), never its message. */
function functionErrorType(payload: Uint8Array): string | undefined {
  try {
    const parsed: unknown = JSON.parse(Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength).toString('utf8'));
    const errorType = typeof parsed === 'object' && parsed !== null ? (parsed as { errorType?: unknown }).errorType : undefined;
    return typeof errorType === 'string' ? errorType : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Maps an SDK failure: our signal fired → `aborted`/`timeout`; the service answered (SDK v3 errors carry
 * `$metadata.httpStatusCode`) → by status, with the error name as `providerCode`; no answer → `connection`.
 */
function sdkFailure(error: unknown, reason: 'aborted' | 'timeout' | null): ModelCallError {
  if (reason !== null) return new ModelCallError(reason);
  const providerCode = transportErrorCode(error);
  const status = (error as { $metadata?: { httpStatusCode?: unknown } } | null)?.$metadata?.httpStatusCode;
  const context = providerCode === undefined ? {} : { providerCode };
  if (typeof status !== 'number') return new ModelCallError('connection', context);
  if (status >= 200 && status <= 299) return new ModelCallError('invalid_response', { ...context, httpStatus: status });
  return new ModelCallError(failureForStatus(status), { ...context, httpStatus: status });
}

/**
 * Builds a {@link ModelProvider} for a model sidecar Lambda (docs/design.md §5), invoked with `InvokeCommand`
 * (`InvocationType: RequestResponse`; AWS Lambda API reference, "Invoke"). Each `complete` call:
 *
 * - sends `{ ...request, model }` as the payload, under the caller's signal and `timeoutMs` (`aborted` / `timeout`;
 *   the SDK aborts the HTTP request);
 * - `FunctionError` set (the function threw, timed out or ran out of memory) → `function_error`, with the payload's
 *   `errorType` as `providerCode`;
 * - a payload larger than `maxResponseBytes` → `response_too_large` (the SDK has already buffered it; Lambda's own
 *   6 MB limit bounds that);
 * - a service error → by HTTP status (`ResourceNotFoundException` 404 → `rejected`, `TooManyRequestsException` →
 *   `rate_limited`, 5xx → `server_error`), no answer → `connection`;
 * - parses and validates the payload as a chat-completions response (`invalid_response`).
 *
 * @throws {ConfigError} when `functionName` is neither a function name nor a function ARN.
 * @throws {RangeError} when `maxResponseBytes` is not a positive integer.
 */
export function createLambdaChatProvider(options: LambdaChatProviderOptions): ModelProvider {
  if (!FUNCTION_NAME.test(options.functionName) && !FUNCTION_ARN.test(options.functionName)) {
    throw new ConfigError('The model Lambda function name must be a function name or a function ARN.');
  }
  if (!Number.isInteger(options.maxResponseBytes) || options.maxResponseBytes <= 0) {
    throw new RangeError('maxResponseBytes must be a positive integer');
  }
  if (options.model.length === 0) throw new ConfigError('The model name must not be empty.');
  return new LambdaChatProvider(options);
}

/** Where a model route points: an OpenAI-compatible base URL, or a model sidecar Lambda. */
export type ModelRouteTarget = { readonly kind: 'http'; readonly baseUrl: string } | { readonly kind: 'lambda'; readonly functionName: string };

/**
 * Parses a model route setting (e.g. `MODEL_LOCAL_URL`): `lambda:<function-name>` (a name per the AWS Lambda naming
 * rule `^[a-zA-Z0-9-_]{1,64}$`, or a full function ARN, optionally with `:<version-or-alias>`), or an `http://` /
 * `https://` base URL without credentials (returned without trailing slashes).
 * @param variable the setting's name, for the error message (the value itself is never echoed: it may hold a token).
 * @throws {ConfigError} when the value is neither.
 */
export function parseModelRoute(value: string, variable = 'the model route'): ModelRouteTarget {
  if (value.startsWith('lambda:')) {
    const functionName = value.slice('lambda:'.length);
    if (FUNCTION_NAME.test(functionName) || FUNCTION_ARN.test(functionName)) return { kind: 'lambda', functionName };
    throw new ConfigError(`${variable} must be lambda:<function-name or function ARN> or an http(s) URL.`);
  }
  let url: URL | undefined;
  try {
    url = new URL(value);
  } catch {
    url = undefined;
  }
  if (url === undefined || (url.protocol !== 'http:' && url.protocol !== 'https:') || url.hostname === '') {
    throw new ConfigError(`${variable} must be lambda:<function-name or function ARN> or an http(s) URL.`);
  }
  if (url.username !== '' || url.password !== '') throw new ConfigError(`${variable} must not carry credentials in the URL.`);
  // The client appends /chat/completions: a query or fragment would end up before it (and may hold a token).
  if (url.search !== '' || url.hash !== '' || value.includes('?') || value.includes('#')) {
    throw new ConfigError(`${variable} must be a base URL without a query or fragment.`);
  }
  return { kind: 'http', baseUrl: value.replace(/\/+$/, '') };
}
