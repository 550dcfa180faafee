import { z } from 'zod';
import { ConfigError } from '../errors.js';

/** The service name spans carry when neither `OTEL_SERVICE_NAME` nor `POWERTOOLS_SERVICE_NAME` is set. */
export const DEFAULT_SERVICE_NAME = 'durable-ops';

/**
 * How a process traces, read once from its environment by {@link tracingSettingsFromEnv}.
 * - `exporter`: where finished spans go besides the trace file — `otlp` (OTLP/HTTP protobuf to `otlpUrl`), `console`
 *   (stdout, for debugging) or `none`.
 * - `otlpUrl`: the full OTLP/HTTP traces URL, e.g. `http://localhost:4318/v1/traces`; unset means the exporter's own
 *   default (`http://localhost:4318/v1/traces`, where the ADOT Lambda layer's collector listens).
 * - `traceFile`: a path that receives one JSON line per finished span (`FileSpanExporter`), or unset.
 * - `serviceName`: the resource's `service.name`.
 */
export interface TracingSettings {
  readonly exporter: 'otlp' | 'console' | 'none';
  readonly otlpUrl?: string;
  readonly traceFile?: string;
  readonly serviceName: string;
}

const optional = z.preprocess((value) => (value === '' ? undefined : value), z.string().min(1).optional());

const TracingEnvSchema = z.object({
  OTEL_TRACES_EXPORTER: z.preprocess((value) => (value === '' ? undefined : value), z.enum(['otlp', 'console', 'none']).optional()),
  OTEL_EXPORTER_OTLP_ENDPOINT: optional,
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: optional,
  DURABLE_OPS_TRACE_FILE: optional,
  OTEL_SERVICE_NAME: optional,
  POWERTOOLS_SERVICE_NAME: optional,
});

/**
 * Reads {@link TracingSettings} from `env` (empty strings count as unset, as in `loadConfig`), with the variable names
 * of the OpenTelemetry SDK environment variable specification:
 * - `OTEL_TRACES_EXPORTER` — `otlp` | `console` | `none`. @default `otlp` when `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` or
 *   `OTEL_EXPORTER_OTLP_ENDPOINT` is set, else `none` (the specification's default is `otlp`; ours is `none` so that a
 *   Lambda without a collector sends nothing to a port no one listens on). Only one exporter name is accepted.
 * - `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` — used as is; else `OTEL_EXPORTER_OTLP_ENDPOINT` + `/v1/traces` (the
 *   specification's rule for the signal-less variable).
 * - `DURABLE_OPS_TRACE_FILE` — the JSON-lines trace file, independent of the exporter. @default none
 * - `OTEL_SERVICE_NAME`, else `POWERTOOLS_SERVICE_NAME` (the name the logs and metrics use). @default `durable-ops`
 * @throws {ConfigError} when `OTEL_TRACES_EXPORTER` is anything else (e.g. `zipkin`, or a list).
 */
export function tracingSettingsFromEnv(env: Readonly<Record<string, string | undefined>>): TracingSettings {
  const parsed = TracingEnvSchema.safeParse(env);
  if (!parsed.success) throw new ConfigError('OTEL_TRACES_EXPORTER must be one of otlp, console, none');
  const e = parsed.data;
  const otlpUrl = e.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? (e.OTEL_EXPORTER_OTLP_ENDPOINT ? `${e.OTEL_EXPORTER_OTLP_ENDPOINT.replace(/\/+$/, '')}/v1/traces` : undefined);
  return Object.freeze({
    exporter: e.OTEL_TRACES_EXPORTER ?? (otlpUrl ? 'otlp' : 'none'),
    ...(otlpUrl ? { otlpUrl } : {}),
    ...(e.DURABLE_OPS_TRACE_FILE ? { traceFile: e.DURABLE_OPS_TRACE_FILE } : {}),
    serviceName: e.OTEL_SERVICE_NAME ?? e.POWERTOOLS_SERVICE_NAME ?? DEFAULT_SERVICE_NAME,
  });
}
