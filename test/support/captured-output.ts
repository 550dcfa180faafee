import { afterEach, beforeEach, vi } from 'vitest';

/** What {@link captureOutput} kept. */
export interface CapturedOutput {
  /** Everything written, as one string, for "never contains" scans. */
  text(): string;
  /** The JSON lines written, one parsed object per line (Powertools log lines and EMF documents). */
  json(): Record<string, unknown>[];
}

/**
 * Captures everything written to stdout and stderr until `vi.restoreAllMocks()` — where Powertools' Logger and Metrics
 * write (through their own `Console` over `process.stdout` / `process.stderr`).
 */
export function captureOutput(): CapturedOutput {
  const chunks: string[] = [];
  const keep = (chunk: unknown) => {
    chunks.push(String(chunk));
    return true;
  };
  vi.spyOn(process.stdout, 'write').mockImplementation(keep);
  vi.spyOn(process.stderr, 'write').mockImplementation(keep);
  const text = () => chunks.join('');
  return {
    text,
    json: () =>
      text()
        .split('\n')
        .filter((line) => line.trim().startsWith('{'))
        .map((line) => JSON.parse(line) as Record<string, unknown>),
  };
}

/** Every POWERTOOLS_* / Lambda variable the output tests depend on; each test file states only what it changes. */
const POWERTOOLS_VARIABLES = [
  'POWERTOOLS_SERVICE_NAME',
  'POWERTOOLS_METRICS_NAMESPACE',
  'POWERTOOLS_LOGGER_SAMPLE_RATE',
  'POWERTOOLS_LOGGER_LOG_EVENT',
  'AWS_LAMBDA_LOG_LEVEL',
] as const;

/**
 * Registers `beforeEach` / `afterEach` hooks that give each test Powertools' output switched on (`POWERTOOLS_DEV` and
 * `POWERTOOLS_METRICS_DISABLED` false), log level `logLevel`, and every other variable of {@link POWERTOOLS_VARIABLES}
 * unset; afterwards the environment and every spy are restored. Call it inside a `describe`.
 */
export function usePowertoolsEnvironment(logLevel: 'DEBUG' | 'INFO'): void {
  beforeEach(() => {
    vi.stubEnv('POWERTOOLS_DEV', 'false');
    vi.stubEnv('POWERTOOLS_METRICS_DISABLED', 'false');
    vi.stubEnv('POWERTOOLS_LOG_LEVEL', logLevel);
    for (const name of POWERTOOLS_VARIABLES) vi.stubEnv(name, undefined);
  });
  afterEach(() => {
    vi.restoreAllMocks();
    vi.unstubAllEnvs();
  });
}
