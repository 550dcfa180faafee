/**
 * The logging surface durable-ops uses: structured messages with a context object. Powertools' `Logger` satisfies
 * it; {@link consoleLogger} is the default. Never pass lease tokens, idempotency keys, secrets or raw content.
 */
export interface Logger {
  info(message: string, context?: Record<string, unknown>): void;
  warn(message: string, context?: Record<string, unknown>): void;
  error(message: string, context?: Record<string, unknown>): void;
}

function line(level: string, message: string, context?: Record<string, unknown>): string {
  return JSON.stringify({ level, message, time: new Date().toISOString(), ...context });
}

/** A {@link Logger} writing one JSON object per line to stdout/stderr. */
export const consoleLogger: Logger = Object.freeze({
  info: (message: string, context?: Record<string, unknown>) => console.log(line('INFO', message, context)),
  warn: (message: string, context?: Record<string, unknown>) => console.warn(line('WARN', message, context)),
  error: (message: string, context?: Record<string, unknown>) => console.error(line('ERROR', message, context)),
});

/** A {@link Logger} that drops everything (tests). */
export const silentLogger: Logger = Object.freeze({ info() {}, warn() {}, error() {} });

/** Serialisable summary of an unknown error for a log line: its class name and message, never its stack. */
export function describeError(error: unknown): Record<string, unknown> {
  return error instanceof Error ? { errorName: error.name, errorMessage: error.message } : { errorMessage: String(error) };
}
