import { Logger as PowertoolsLogger } from '@aws-lambda-powertools/logger';

/**
 * The logging surface durable-ops uses: structured messages with a context object whose keys become top-level JSON
 * fields. {@link createProcessLogger} backs it with Powertools' `Logger`; {@link silentLogger} drops everything.
 * Never pass lease tokens, idempotency keys, request hashes, params, failure text, secrets or raw content (README
 * "Logs and metrics" lists the fields lifecycle lines carry). Context keys Powertools reserves (`level`, `message`,
 * `service`, `timestamp`, `sampling_rate`) are dropped by it with a warning: do not use them.
 */
export interface Logger {
  /** Detail for an operator chasing a problem: printed only at `DEBUG` (`POWERTOOLS_LOG_LEVEL`, or a sampled invocation). */
  debug(message: string, context?: Record<string, unknown>): void;
  info(message: string, context?: Record<string, unknown>): void;
  warn(message: string, context?: Record<string, unknown>): void;
  error(message: string, context?: Record<string, unknown>): void;
}

/**
 * The default service name: the `service` of every log line and the `service` dimension of every metric when
 * `POWERTOOLS_SERVICE_NAME` is unset or blank (see {@link serviceName}).
 */
export const SERVICE_NAME = 'durable-ops';

/**
 * The service name in effect: `POWERTOOLS_SERVICE_NAME` (trimmed) when set and not blank, else {@link SERVICE_NAME}.
 * Powertools' own fallback would be `service_undefined`, so durable-ops resolves the name itself and passes it to the
 * Logger and to Metrics (Powertools for AWS Lambda (TypeScript) v2, "Environment variables").
 * @param env where to read it. @default process.env
 */
export function serviceName(env: NodeJS.ProcessEnv = process.env): string {
  return env.POWERTOOLS_SERVICE_NAME?.trim() || SERVICE_NAME;
}

/**
 * A Powertools `Logger` for durable-ops: one JSON object per line (`debug`/`info` on stdout, `warn`/`error` on
 * stderr), `service` from {@link serviceName}. Everything else is left to Powertools, which reads its own variables
 * here, when called, never at import (Powertools for AWS Lambda (TypeScript) v2, Logger "Utility settings", "Log
 * levels", "Sampling debug logs"):
 * - level: `POWERTOOLS_LOG_LEVEL` (or `LOG_LEVEL`) — `TRACE`, `DEBUG`, `INFO`, `WARN`, `ERROR`, `CRITICAL`, `SILENT` —
 *   default `INFO`; Lambda's Advanced Logging Controls (`AWS_LAMBDA_LOG_LEVEL`) win over it;
 * - `POWERTOOLS_LOGGER_SAMPLE_RATE` (0–1, default 0): that share of invocations log at `DEBUG` — decided here for the
 *   first (cold-start) invocation and again at the start of every later one by `injectLambdaContext`;
 * - `POWERTOOLS_LOGGER_LOG_EVENT` (`true` to enable): read into `getLogEvent()`; durable-ops never lets Powertools log
 *   the raw event and logs a redacted copy instead (`createObservability`, `redactEvent`);
 * - `POWERTOOLS_DEV=true`: pretty-printed JSON.
 */
export function createPowertoolsLogger(): PowertoolsLogger {
  return new PowertoolsLogger({ serviceName: serviceName() });
}

/**
 * Our {@link Logger} over a Powertools `Logger`: `context` becomes top-level keys of the JSON line (Powertools'
 * "extra keys"), next to `level`, `message`, `timestamp`, `service` and, inside a handler wrapped with
 * `injectLambdaContext`, the Lambda context (`function_request_id`, `function_name`, `cold_start`, …).
 */
export function loggerOver(powertools: PowertoolsLogger): Logger {
  return Object.freeze({
    debug: (message: string, context?: Record<string, unknown>) => (context ? powertools.debug(message, context) : powertools.debug(message)),
    info: (message: string, context?: Record<string, unknown>) => (context ? powertools.info(message, context) : powertools.info(message)),
    warn: (message: string, context?: Record<string, unknown>) => (context ? powertools.warn(message, context) : powertools.warn(message)),
    error: (message: string, context?: Record<string, unknown>) => (context ? powertools.error(message, context) : powertools.error(message)),
  });
}

/**
 * The process logger outside a Lambda handler chain (CLI, local helpers, the API's fallback before its runtime is
 * built): {@link loggerOver} a fresh {@link createPowertoolsLogger}.
 */
export function createProcessLogger(): Logger {
  return loggerOver(createPowertoolsLogger());
}

/** A {@link Logger} that drops everything (tests, and CLI commands whose stdout is their output). */
export const silentLogger: Logger = Object.freeze({ debug() {}, info() {}, warn() {}, error() {} });

/** Serialisable summary of an unknown error for a log line: its class name and message, never its stack. */
export function describeError(error: unknown): Record<string, unknown> {
  return error instanceof Error ? { errorName: error.name, errorMessage: error.message } : { errorMessage: String(error) };
}
