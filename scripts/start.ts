/**
 * `npm start`: the whole stack locally (docs/design.md §9). SQLite by default; DATABASE_URL=mysql://… for MariaDB;
 * SQS_QUEUE_URL (+ SQS_ENDPOINT) for an external queue. DEMO_TASKS and AI_TASKS default to 1 here; without
 * MODEL_LOCAL_URL the local model route is the deterministic stand-in; spans go to .data/traces.jsonl (README "Tracing").
 * It first builds the operator console (`dist/console`, served at /console); a failed console build is reported and the
 * API starts anyway.
 */
import { join } from 'node:path';
import { loadConfig, type Config } from '../lib/config.js';
import { localDataDir } from '../lib/local/dev-secret.js';
import { startLocalStack } from '../lib/local/local-stack.js';
import { isStandIn } from '../lib/local/local-models.js';
import { describeError } from '../lib/logger.js';
import { createObservability } from '../lib/observability/observability.js';
import { startTracing } from '../lib/tracing/start-tracing.js';
import { tracingSettingsFromEnv, type TracingSettings } from '../lib/tracing/tracing-settings.js';

/**
 * Where `npm start` writes its spans unless `DURABLE_OPS_TRACE_FILE` says otherwise: `traces.jsonl` in the local data
 * directory — the SQLite database's (`.data/` by default), or `.data/` for a MariaDB or in-memory database.
 */
function localTraceFile(databaseUrl: string): string {
  return join(localDataDir(databaseUrl), 'traces.jsonl');
}

// The AWS SDK is pinned to exact releases that run on Node 20; its "newer releases will need Node 22" notice is noise.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
const failed = (error: unknown): never => {
  console.error(`durable-ops failed to start: ${describeError(error).errorMessage}`);
  process.exit(1);
};
const config: Config = (() => {
  try {
    return loadConfig({ DEMO_TASKS: '1', AI_TASKS: '1', ...process.env });
  } catch (error) {
    return failed(error);
  }
})();
const tracing: TracingSettings = (() => {
  try {
    return tracingSettingsFromEnv({ DURABLE_OPS_TRACE_FILE: localTraceFile(config.DATABASE_URL), ...process.env });
  } catch (error) {
    return failed(error);
  }
})();
const consoleLine = await buildConsoleFor();
const stack = await startLocalStack(config, createObservability(startTracing(tracing))).catch(failed);

const { local, external } = stack.runtime.models;
const modelRoutes = [
  local ? `local ${local.provider.kind} ${local.provider.model}${isStandIn(config) ? ' (deterministic stand-in, not a model)' : ''}` : '',
  external ? `external ${external.provider.kind} ${external.provider.model}` : '',
]
  .filter(Boolean)
  .join('; ') || '(none)';
const database = withoutPassword(config.DATABASE_URL);
console.log(`
durable-ops local stack is listening on ${stack.url}
  database: ${database}
  tasks:    ${stack.runtime.registry.types().join(', ') || '(none)'}
  models:   ${modelRoutes}
  console:  ${stack.url}/console  ${consoleLine}
  traces:   ${tracing.traceFile ? `${tracing.traceFile} (one span per JSON line; DURABLE_OPS_TRACE_FILE= turns it off)` : '(no trace file)'}${tracing.exporter === 'none' ? '' : `; also exported: ${tracing.exporter}`}
  cors:     ${config.CORS_ALLOWED_ORIGINS.join(', ') || '(none: same-origin only; set CORS_ALLOWED_ORIGINS)'}

Get a token and admit a demo operation:
  TOKEN=$(npm run --silent token -- alice)
  curl -s -X POST ${stack.url}/api/operations -H "Authorization: Bearer $TOKEN" \\
    -H 'Idempotency-Key: demo-1' -H 'Content-Type: application/json' \\
    -d '{"taskType":"demo.wait","subject":{"type":"demo","id":"1"},"params":{"durationMs":3000}}'
See README.md for the full walk-through. Ctrl-C stops.
`);

let stopping = false;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    if (stopping) process.exit(1);
    stopping = true;
    console.log('stopping (waiting for in-flight operations; press Ctrl-C again to force)…');
    stack.stop().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  });
}

/** Builds the operator console (a few seconds); returns how it went, for the start-up lines. Never throws. */
async function buildConsoleFor(): Promise<string> {
  const started = Date.now();
  try {
    // Imported here, not at the top: the build needs Vite, a dev dependency, and the API must start without it.
    const { buildConsole } = await import('../console/build-console.js');
    await buildConsole();
    return `(built in ${((Date.now() - started) / 1000).toFixed(1)} s; sign in with: npm run --silent token -- <you> --scope ops:read,ops:write)`;
  } catch (error) {
    console.error(`the operator console did not build: ${describeError(error).errorMessage}`);
    return '(NOT BUILT: see the error above; the API runs without it)';
  }
}

/** The URL with any password replaced by `***` (parsed, so `user:p@ss@host` and `:pw@host` are masked too). */
function withoutPassword(databaseUrl: string): string {
  try {
    const url = new URL(databaseUrl);
    if (url.password === '') return databaseUrl;
    url.password = '***';
    return url.toString();
  } catch {
    return databaseUrl.startsWith('sqlite:') ? databaseUrl : '(unparsable DATABASE_URL)';
  }
}
