import type { DurableOpsApp } from '../app/durable-ops-app.js';
import { createApiHandler, type ApiHandler } from '../http/api-handler.js';
import { createObservability } from '../observability/observability.js';
import { lazyRuntime } from './lambda-runtime.js';

/**
 * The owner API Lambda (docs/design.md §7, and the operator routes of §8) serving `app`'s task types, behind an API
 * Gateway HTTP API (payload 2.0) and its JWT authorizer. Call it once, at module level of the function's entry file:
 *
 * ```ts
 * export const handler = apiLambda(app);
 * ```
 *
 * It builds only the observability (a Powertools logger and EMF metrics; it reads `POWERTOOLS_*`); the runtime —
 * configuration from the environment, database pool, SQS client, registry — is built on the first authenticated
 * invocation, so an unauthenticated request is refused (401) before any configuration is read. Errors are RFC 9457
 * problem+json; a configuration or start-up failure (`ConfigError`, e.g. `SQS_QUEUE_URL is required`) answers 500,
 * is logged, and is retried on the next invocation.
 */
export function apiLambda(app: DurableOpsApp): ApiHandler {
  const observability = createObservability();
  return createApiHandler(lazyRuntime(app, observability), observability);
}
