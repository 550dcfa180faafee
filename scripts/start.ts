/**
 * `npm start`: the whole stack locally (DESIGN §9). SQLite by default; DATABASE_URL=mysql://… for MariaDB;
 * SQS_QUEUE_URL (+ SQS_ENDPOINT) for an external queue. DEMO_TASKS and AI_TASKS default to 1 here; without
 * MODEL_LOCAL_URL the local model route is the deterministic stand-in.
 */
import { loadConfig, type Config } from '../lib/config.js';
import { startLocalStack } from '../lib/local/local-stack.js';
import { isStandIn } from '../lib/local/local-models.js';
import { describeError } from '../lib/logger.js';
import { createObservability } from '../lib/observability/observability.js';

// The SDK version is pinned for Node 20 (shared/TOOLING.md); its "newer releases will need Node 22" notice is noise here.
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
const stack = await startLocalStack(config, createObservability()).catch(failed);

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
