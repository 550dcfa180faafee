import { Logger as PowertoolsLogger } from '@aws-lambda-powertools/logger';

/**
 * The logging surface durable-ops uses: structured messages with a context object whose keys become top-level JSON
 * fields. {@link createProcessLogger} backs it with Powertools' `Logger`; {@link silentLogger} drops everything.
 * Never pass lease tokens, idempotency keys, request hashes, params, failure text, secrets or raw content (README
 * "Logs and metrics" lists the fields lifecycle lines carry). Context keys Powertools reserves (`level`, `message`,
 * `service`, `timestamp`, `sampling_rate`) are dropped by it with a warning: do not use them.
 */
export interface Logger {
  info(message: string, context?: Record<string, unknown>): void;
  warn(message: string, context?: Record<string, unknown>): void;
  error(message: string, context?: Record<string, unknown>): void;
}

/** The `service` of every log line and the `service` dimension of every metric (Powertools `serviceName`). */
export const SERVICE_NAME = 'durable-ops';

/**
 * A Powertools `Logger` for durable-ops: one JSON object per line (`info` on stdout, `warn`/`error` on stderr),
 * `service: durable-ops`, level from `POWERTOOLS_LOG_LEVEL` (or `LOG_LEVEL`; Lambda's Advanced Logging Controls
 * `AWS_LAMBDA_LOG_LEVEL` win), default `INFO`. Reads the environment when called, never at
 * import. Source: Powertools for AWS Lambda (TypeScript) v2, Logger ("Utility settings", "Log levels").
 */
export function createPowertoolsLogger(): PowertoolsLogger {
  return new PowertoolsLogger({ serviceName: SERVICE_NAME });
}

/**
 * Our {@link Logger} over a Powertools `Logger`: `context` becomes top-level keys of the JSON line (Powertools'
 * "extra keys"), next to `level`, `message`, `timestamp`, `service` and, inside a handler wrapped with
 * `injectLambdaContext`, the Lambda context (`function_request_id`, `function_name`, `cold_start`, …).
 */
export function loggerOver(powertools: PowertoolsLogger): Logger {
  return Object.freeze({
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
export const silentLogger: Logger = Object.freeze({ info() {}, warn() {}, error() {} });

/** Serialisable summary of an unknown error for a log line: its class name and message, never its stack. */
export function describeError(error: unknown): Record<string, unknown> {
  return error instanceof Error ? { errorName: error.name, errorMessage: error.message } : { errorMessage: String(error) };
}
