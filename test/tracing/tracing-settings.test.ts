import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../lib/errors.js';
import { tracer } from '../../lib/tracing/spans.js';
import { startTracing } from '../../lib/tracing/start-tracing.js';
import { tracingSettingsFromEnv } from '../../lib/tracing/tracing-settings.js';

describe('tracing settings from the environment', () => {
  it('traces nothing by default: no exporter, no file, service durable-ops', () => {
    expect(tracingSettingsFromEnv({})).toEqual({ exporter: 'none', serviceName: 'durable-ops' });
  });

  it('an OTLP endpoint alone turns OTLP on; the traces endpoint wins and is used as is', () => {
    expect(tracingSettingsFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://localhost:4318/' })).toMatchObject({ exporter: 'otlp', otlpUrl: 'http://localhost:4318/v1/traces' });
    expect(
      tracingSettingsFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://a:4318', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://b:4318/custom' }),
    ).toMatchObject({ exporter: 'otlp', otlpUrl: 'http://b:4318/custom' });
    expect(tracingSettingsFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://a:4318', OTEL_TRACES_EXPORTER: 'none' }).exporter).toBe('none');
  });

  it('the trace file, the console exporter and the service name are read; empty strings count as unset', () => {
    expect(tracingSettingsFromEnv({ DURABLE_OPS_TRACE_FILE: '/tmp/t.jsonl', OTEL_TRACES_EXPORTER: 'console', POWERTOOLS_SERVICE_NAME: 'billing' })).toEqual({
      exporter: 'console',
      traceFile: '/tmp/t.jsonl',
      serviceName: 'billing',
    });
    expect(tracingSettingsFromEnv({ OTEL_SERVICE_NAME: 'otel-name', POWERTOOLS_SERVICE_NAME: 'billing' }).serviceName).toBe('otel-name');
    expect(tracingSettingsFromEnv({ DURABLE_OPS_TRACE_FILE: '', OTEL_TRACES_EXPORTER: '' })).toEqual({ exporter: 'none', serviceName: 'durable-ops' });
  });

  it('an unknown exporter is a ConfigError naming the accepted values', () => {
    expect(() => tracingSettingsFromEnv({ OTEL_TRACES_EXPORTER: 'zipkin' })).toThrow(ConfigError);
    expect(() => tracingSettingsFromEnv({ OTEL_TRACES_EXPORTER: 'otlp,console' })).toThrow(/otlp, console, none/);
  });

  it('with nothing to export, tracing registers nothing: spans are the API’s non-recording no-ops', () => {
    const tracing = startTracing(tracingSettingsFromEnv({}));
    expect(tracing.enabled).toBe(false);
    const span = tracer.startSpan('anything');
    expect(span.isRecording()).toBe(false);
    expect(span.spanContext().traceId).toBe('00000000000000000000000000000000');
    span.end();
  });
});
