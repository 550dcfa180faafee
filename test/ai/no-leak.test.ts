import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../lib/config.js';
import { strategySnapshotTask } from '../../lib/features/strategy-snapshot/strategy-snapshot-task.js';
import { createApiHandler } from '../../lib/http/api-handler.js';
import type { Logger } from '../../lib/logger.js';
import { updateOwnSettings } from '../../lib/owners/owner-settings.js';
import { OwnerScope } from '../../lib/operations/scopes.js';
import { processWakeup } from '../../lib/worker/worker-handler.js';
import { createApiTestApp, type ApiTestApp } from '../http/api-test-app.js';
import { allowListedTask, EXTERNAL_KEY, OUTPUT_MARKER, PROMPT_MARKER, startAiRig, type AiRig } from '../support/ai-rig.js';
import { apiEvent, lambdaContext, parseResponse, type ApiEventInput } from '../support/api-events.js';
import { DIALECTS, hasMariadb } from '../support/test-store.js';

/** Text the owner pasted into a job posting: it may reach the model, never an operation row, a log line or a DTO. */
const JOB_TEXT_MARKER = 'JOB-TEXT-MARKER-51d0';

const FORBIDDEN = [EXTERNAL_KEY, PROMPT_MARKER, OUTPUT_MARKER, JOB_TEXT_MARKER];

/** Keeps every log line as the JSON a real logger would print. */
function recordingLogger(lines: string[]): Logger {
  const keep = (level: string) => (message: string, context?: Record<string, unknown>) => lines.push(JSON.stringify({ level, message, ...context }));
  return { debug: keep('DEBUG'), info: keep('INFO'), warn: keep('WARN'), error: keep('ERROR') };
}

describe.each(DIALECTS)('no API key, prompt or model output leaks on %s', (dialect) => {
  // The MariaDB cases need a reachable server: CI has one, and the global setup starts one when mariadbd is installed;
  // only a machine with neither skips them (SQLite always runs).
  const skip = dialect === 'mariadb' && !hasMariadb();
  let app: ApiTestApp;
  let rig: AiRig;
  const logs: string[] = [];
  const responses: string[] = [];
  let call: (input: ApiEventInput) => Promise<ReturnType<typeof parseResponse>>;

  beforeAll(async () => {
    if (skip) return;
    app = await createApiTestApp(dialect);
    app.deps.registry.register(strategySnapshotTask).register(allowListedTask);
  });
  afterAll(async () => app?.drop());
  beforeEach(async () => {
    if (skip) return;
    rig = await startAiRig(app.db.store, { requestTimeoutMs: 500 });
    const handler = createApiHandler({ ...app.deps, logger: recordingLogger(logs) });
    call = async (input) => {
      const response = parseResponse(await handler(apiEvent(input), lambdaContext()));
      responses.push(response.text);
      return response;
    };
  });
  afterEach(async () => rig?.close());

  const work = async () => {
    const deps = { ...rig.deps, registry: app.deps.registry, logger: recordingLogger(logs) };
    while ((await processWakeup(deps, () => 60_000)) !== 'idle') {
      // Past any retry delay and breaker cool-down, well inside the 15-minute queued deadline.
      app.db.clock.advance(60_000);
      rig.advanceBreakerClock(60_000);
    }
  };

  it.skipIf(skip)('through fallback, invalid output echoing the prompt, a hang and a published snapshot, the key, prompts and outputs stay out', async () => {
    const owner = 'leak-owner';
    await updateOwnSettings(new OwnerScope(app.db.store, owner), { privacyMode: 'external_allowed' });
    const admit = (key: string) =>
      call({ method: 'POST', path: '/api/operations', owner, headers: { 'idempotency-key': key }, body: { taskType: 'test.ai-fallback', subject: { type: 'doc', id: key } } });

    // 1. Local 503 → external (with the key) answers with the output marker.
    rig.local.fail(503);
    rig.external.respondWith(JSON.stringify({ answer: OUTPUT_MARKER }));
    await admit('leak-1');
    await work();
    // 2. The local model answers garbage that echoes the prompt and an output marker: invalid output.
    rig.local.respondWith((request) => `not json: ${JSON.stringify(request)} ${OUTPUT_MARKER}`);
    await admit('leak-2');
    await work();
    // 3. The local model hangs: timeout; the external one fails with a 500.
    rig.local.hang();
    rig.external.fail(500);
    await admit('leak-3');
    await work();
    // 4. A strategy snapshot of a job whose text carries a marker, answered with an output marker.
    rig.local.respondWith(
      JSON.stringify({ summary: OUTPUT_MARKER, strengths: [OUTPUT_MARKER], risks: [], questionsToAsk: [], nextSteps: [OUTPUT_MARKER] }),
    );
    const job = await call({ method: 'POST', path: '/api/jobs', owner, body: { title: 'SRE', company: 'Acme', description: `Posting ${JOB_TEXT_MARKER}` } });
    responses.pop(); // the job's own DTO returns its text to its owner, by design
    await call({ method: 'POST', path: `/api/jobs/${job.json.id}/strategy-snapshot`, owner, headers: { 'idempotency-key': 'leak-4' } });
    await work();

    // The model did see the prompt and the job text, and the external route the key: the markers were really in play.
    expect(JSON.stringify(rig.local.calls.map((c) => c.body))).toContain(JOB_TEXT_MARKER);
    expect(rig.external.calls.some((c) => c.headers.authorization === `Bearer ${EXTERNAL_KEY}`)).toBe(true);
    expect((await call({ method: 'GET', path: `/api/jobs/${job.json.id}/strategy-snapshot`, owner })).text).toContain(OUTPUT_MARKER);
    responses.pop(); // the note itself is the product: it may hold model output

    const list = await call({ method: 'GET', path: '/api/operations?limit=100', owner });
    expect(list.json.items.map((i: { status: string }) => i.status).sort()).toEqual(['failed', 'failed', 'succeeded', 'succeeded']);
    for (const item of list.json.items as { id: string }[]) await call({ method: 'GET', path: `/api/operations/${item.id}`, owner });
    await call({ method: 'GET', path: '/api/notifications?limit=100', owner });

    const rows = JSON.stringify(await app.db.store.db.selectFrom('operations').selectAll().execute());
    const notifications = JSON.stringify(await app.db.store.db.selectFrom('operation_notifications').selectAll().execute());
    expect(rows).toContain('invalid_output');
    for (const secret of FORBIDDEN) {
      expect(rows, `operations rows hold ${secret}`).not.toContain(secret);
      expect(notifications, `notifications hold ${secret}`).not.toContain(secret);
      expect(logs.join('\n'), `a log line holds ${secret}`).not.toContain(secret);
      expect(responses.join('\n'), `a DTO holds ${secret}`).not.toContain(secret);
    }
    for (const field of ['provider', 'model', 'route', 'modelAttempts', 'model_attempts']) expect(list.text).not.toContain(`"${field}"`);
  });

  it('a configuration error names the variable, never the key', () => {
    expect(() => loadConfig({ MODEL_EXTERNAL_URL: 'ftp://x', MODEL_EXTERNAL_API_KEY: EXTERNAL_KEY })).toThrow(/MODEL_EXTERNAL_NAME/);
    try {
      loadConfig({ MODEL_EXTERNAL_URL: 'ftp://x', MODEL_EXTERNAL_API_KEY: EXTERNAL_KEY });
    } catch (error) {
      expect(String(error)).not.toContain(EXTERNAL_KEY);
    }
  });
});
