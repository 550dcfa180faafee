import type { z } from 'zod';
import type { ChatMessage } from '../models/chat-protocol.js';
import { ModelCallError, type ModelFailure } from '../models/model-errors.js';
import { requestStructured } from '../models/structured-output.js';
import type { ClaimedOperation } from '../operations/lease/claim-operation.js';
import type { OwnerScope } from '../operations/scopes.js';
import { PermanentTaskError } from '../tasks/task-definition.js';
import type { BreakerPermit } from './circuit-breaker.js';
import type { ModelRouteName } from './model-provenance.js';
import type { ModelRoute } from './model-routes.js';
import { recordModelAttempt } from './record-model-attempt.js';
import { SpanKind } from '@opentelemetry/api';
import { inSpan, SpanAttr } from '../tracing/spans.js';

/** One structured model request: chat messages, the zod schema the answer must satisfy, its name, a token cap. */
export interface StructuredRequest<S extends z.ZodType> {
  readonly messages: readonly ChatMessage[];
  readonly schema: S;
  /** Name of the JSON schema sent as `response_format.json_schema.name` (`[a-zA-Z0-9_-]{1,64}`). */
  readonly schemaName: string;
  /** Upper bound of generated tokens. */
  readonly maxTokens?: number;
}

/** The model route of one attempt, as a task handler sees it (`TaskContext.model`). */
export interface ModelSession {
  /** `local`, or `external` on a claim from `waiting_for_external_fallback`. */
  readonly route: ModelRouteName;
  /**
   * Makes one structured request on the attempt's route and returns the answer validated against `schema` (docs/design.md §5:
   * nothing is published before full validation). Provenance is stored under the lease and the route's breaker learns
   * the outcome, success or failure.
   * @throws {ModelCallError} with a bounded `failure` code (timeout, server_error, rejected, invalid_output, …).
   * @throws {PermanentTaskError} when the attempt already made its allowed number of calls.
   * @throws {LeaseLostError} when the lease was lost meanwhile (the provenance write is refused).
   */
  requestStructured<S extends z.ZodType>(request: StructuredRequest<S>): Promise<z.output<S>>;
}

/** Failures that say the route is unwell and count towards opening its breaker; the rest prove it answered. */
const ROUTE_FAILURES: ReadonlySet<ModelFailure> = new Set<ModelFailure>(['timeout', 'connection', 'server_error', 'rate_limited', 'invalid_response', 'function_error']);

/** What {@link openModelSession} needs. */
export interface ModelSessionOptions {
  readonly route: ModelRoute;
  /** The breaker permit the claim took for this route; settled by the first call, or released by `close`. */
  readonly permit: BreakerPermit;
  readonly owner: OwnerScope;
  readonly claim: ClaimedOperation;
  /** Aborted on cancel, lease loss, self-fence or task timeout: aborts the request in flight. */
  readonly signal: AbortSignal;
  /**
   * The attempt's synchronous lease check (`TaskContext.leaseHeld`): asked before every request, so a request never
   * starts once the attempt's lease may have ended — not even in a process that was paused past its fence timer.
   * @default always true (no self-fence)
   */
  readonly leaseHeld?: () => boolean;
  /** Ms left before the task's own timeout; each request ends (as `timeout`) a little before it. */
  readonly taskTimeLeftMs: () => number;
  readonly requestTimeoutMs: number;
  /** @default 1 */
  readonly inferencesPerAttempt?: number;
}

/**
 * Runs one model request inside a CLIENT span, `model call`, with the route (`local` | `external`) and the outcome:
 * `ok`, or the `ModelCallError`'s bounded failure code (`timeout`, `server_error`, …). Never the prompt or the answer.
 */
function modelCallSpan<T>(route: ModelRouteName, call: () => Promise<T>): Promise<T> {
  return inSpan('model call', { kind: SpanKind.CLIENT, attributes: { [SpanAttr.modelRoute]: route } }, async (span) => {
    try {
      const result = await call();
      span.setAttribute(SpanAttr.outcome, 'ok');
      return result;
    } catch (error) {
      if (error instanceof ModelCallError) span.setAttribute(SpanAttr.outcome, error.failure);
      throw error;
    }
  });
}

/** Ms a request's own timeout keeps before the task timeout, so a hanging model is reported as a model `timeout`. */
const TASK_TIMEOUT_MARGIN_MS = 50;

/**
 * Opens the {@link ModelSession} of one attempt. `close()` gives the breaker permit back when no call was made (the
 * run ended before its inference), so a half-open breaker is not left waiting for a trial that never happens.
 */
export function openModelSession(options: ModelSessionOptions): { session: ModelSession; close(): void } {
  const { route, owner, claim } = options;
  const limit = options.inferencesPerAttempt ?? 1;
  let calls = 0;
  let settled = false;
  const settle = (outcome: 'ok' | ModelFailure) => {
    settled = true;
    if (outcome === 'aborted') route.breaker.release(options.permit);
    else if (outcome !== 'ok' && ROUTE_FAILURES.has(outcome)) route.breaker.recordFailure();
    else route.breaker.recordSuccess();
  };
  // Provenance names the configured model, never what the endpoint says about itself (an echoing endpoint could put
  // prompt text there).
  const record = async (outcome: 'ok' | ModelFailure) => {
    settle(outcome);
    await recordModelAttempt(owner, claim, { attempt: claim.attempt, route: route.name, provider: route.provider.kind, model: route.provider.model, outcome });
  };
  const session: ModelSession = {
    route: route.name,
    async requestStructured(request) {
      if (calls >= limit) throw new PermanentTaskError(`the task made more than ${limit} model call(s) in one attempt`);
      // Fenced (or aborted otherwise): no request leaves. The abort reason is what the run then sees.
      if (options.leaseHeld?.() === false || options.signal.aborted) throw options.signal.reason ?? new Error('aborted: fenced');
      calls += 1;
      const timeoutMs = Math.max(1, Math.min(options.requestTimeoutMs, options.taskTimeLeftMs() - TASK_TIMEOUT_MARGIN_MS));
      let answer: z.output<typeof request.schema>;
      try {
        const result = await modelCallSpan(route.name, () =>
          requestStructured(
            route.provider,
            { messages: request.messages, schema: request.schema, schemaName: request.schemaName, ...(request.maxTokens ? { maxTokens: request.maxTokens } : {}) },
            { signal: options.signal, timeoutMs },
          ),
        );
        answer = result.output as z.output<typeof request.schema>;
      } catch (error) {
        // Not a model failure (a bad schema name, a schema zod cannot express): the task's own bug. It neither counts
        // against the route nor is recorded as a model call; `close()` gives the permit back.
        if (!(error instanceof ModelCallError)) throw error;
        await record(error.failure);
        throw error;
      }
      await record('ok');
      return answer;
    },
  };
  return {
    session,
    close: () => {
      if (!settled) route.breaker.release(options.permit);
    },
  };
}
