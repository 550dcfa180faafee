import { LambdaClient } from '@aws-sdk/client-lambda';
import type { Config } from '../config.js';
import { createHttpChatProvider } from '../models/http-chat-provider.js';
import { createLambdaChatProvider, parseModelRoute } from '../models/lambda-chat-provider.js';
import type { ModelProvider } from '../models/model-provider.js';
import { CircuitBreaker } from './circuit-breaker.js';
import type { ModelRouteName } from './model-provenance.js';

/** One configured model route: its provider and its process-local circuit breaker (docs/design.md §5). */
export interface ModelRoute {
  readonly name: ModelRouteName;
  readonly provider: ModelProvider;
  readonly breaker: CircuitBreaker;
}

/** The model routes of this process. Either may be absent: no local route means model tasks never run locally. */
export interface ModelRoutes {
  readonly local?: ModelRoute;
  readonly external?: ModelRoute;
  /** Timeout of one model request, in ms (each call is also capped by its task's remaining time). */
  readonly requestTimeoutMs: number;
  /** Releases the Lambda client, if a `lambda:` route made one. */
  close(): void;
}

/** What {@link createModelRoutes} may be given instead of building it. */
export interface ModelRouteOptions {
  /** Clock of the circuit breakers, ms since the epoch. @default Date.now */
  readonly now?: () => number;
  /** Client for `lambda:` routes. @default one built from `AWS_REGION` (+ `LAMBDA_ENDPOINT`) on first need */
  readonly lambdaClient?: LambdaClient;
}

/**
 * Builds the local and external model routes from `MODEL_LOCAL_*` / `MODEL_EXTERNAL_*` (README "AI operations"): an
 * OpenAI-compatible HTTP base URL, or `lambda:<function-name>` for a model sidecar Lambda in the same account (invoked
 * with `@aws-sdk/client-lambda`; `LAMBDA_ENDPOINT` points it at the local stack's Invoke API). Only the external route
 * gets `MODEL_EXTERNAL_API_KEY`, as a Bearer token. Each route has its own breaker (`MODEL_BREAKER_FAILURES`,
 * `MODEL_BREAKER_COOLDOWN_SECONDS`).
 * @throws {ConfigError} for a malformed route URL (naming the variable, never its value).
 */
export function createModelRoutes(config: Config, options: ModelRouteOptions = {}): ModelRoutes {
  let lambda = options.lambdaClient;
  let ownsLambda = false;
  const lambdaClient = () => {
    if (!lambda) {
      // One attempt per model call: the worker's own attempts and the breaker decide about retries, not the SDK.
      // With an endpoint (the local stack's Invoke API) dummy static credentials, as for S3, so none are looked up.
      lambda = new LambdaClient({
        region: config.AWS_REGION,
        maxAttempts: 1,
        ...(config.LAMBDA_ENDPOINT ? { endpoint: config.LAMBDA_ENDPOINT, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } } : {}),
      });
      ownsLambda = true;
    }
    return lambda;
  };
  const breaker = () =>
    new CircuitBreaker({
      failureThreshold: config.MODEL_BREAKER_FAILURES,
      cooldownMs: config.MODEL_BREAKER_COOLDOWN_SECONDS * 1000,
      ...(options.now ? { now: options.now } : {}),
    });
  const route = (name: ModelRouteName, variable: string, url: string, model: string, apiKey?: string): ModelRoute => {
    const target = parseModelRoute(url, variable);
    const maxResponseBytes = config.MODEL_MAX_RESPONSE_BYTES;
    const provider =
      target.kind === 'lambda'
        ? createLambdaChatProvider({ functionName: target.functionName, model, client: lambdaClient(), maxResponseBytes })
        : createHttpChatProvider({ baseUrl: target.baseUrl, model, maxResponseBytes, ...(apiKey ? { apiKey } : {}) });
    return { name, provider, breaker: breaker() };
  };
  const local = config.MODEL_LOCAL_URL ? route('local', 'MODEL_LOCAL_URL', config.MODEL_LOCAL_URL, config.MODEL_LOCAL_NAME) : undefined;
  const external =
    config.MODEL_EXTERNAL_URL && config.MODEL_EXTERNAL_NAME
      ? route('external', 'MODEL_EXTERNAL_URL', config.MODEL_EXTERNAL_URL, config.MODEL_EXTERNAL_NAME, config.MODEL_EXTERNAL_API_KEY)
      : undefined;
  return {
    ...(local ? { local } : {}),
    ...(external ? { external } : {}),
    requestTimeoutMs: config.MODEL_REQUEST_TIMEOUT_MS,
    close: () => {
      if (ownsLambda) lambda?.destroy();
    },
  };
}
