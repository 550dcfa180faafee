import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { databaseNow } from '../../lib/db/database-clock.js';
import { parseDbTime } from '../../lib/db/db-time.js';
import { API_ROUTES } from '../../lib/http/api-routes.js';
import { openApiJson } from '../../lib/http/openapi.js';
import { OperationDtoSchema } from '../../lib/operations/owner/operation-dto.js';
import { FieldLimits } from '../../lib/validation/field-limits.js';
import type { ApiEventInput } from '../support/api-events.js';
import { DIALECTS, hasMariadb } from '../support/test-store.js';
import { createApiTestApp, type ApiTestApp } from './api-test-app.js';

// `POST /api/operations` with a per-operation priority and a delay (docs/design.md §4, §7): `demo.wait` accepts both
// (priority -10..10, a delay of up to one day), `test.claimable` neither.

const admit = (owner: string, key: string, body: unknown): ApiEventInput => ({ method: 'POST', path: '/api/operations', owner, headers: { 'idempotency-key': key }, body });
const waitBody = (extra: Record<string, unknown> = {}) => ({ taskType: 'demo.wait', subject: { type: 'doc', id: 'd1' }, params: { durationMs: 10 }, ...extra });
const claimableBody = (extra: Record<string, unknown> = {}) => ({ taskType: 'test.claimable', subject: { type: 'doc', id: 'd1' }, ...extra });

describe.each(DIALECTS)('POST /api/operations with priority and delay on %s', (dialect) => {
  const skip = dialect === 'mariadb' && !hasMariadb();
  let app: ApiTestApp;
  let seq = 0;
  beforeAll(async () => {
    if (!skip) app = await createApiTestApp(dialect);
  });
  afterAll(async () => app?.drop());

  it.skipIf(skip)('a delayed admission answers 202 with a queued operation whose nextAttemptAt is the asked time, read back and listed alike', async () => {
    const response = await app.call(admit('dee', 'later-1', waitBody({ delaySeconds: 3_600, priority: 7 })));
    expect(response.status).toBe(202);
    const dto = OperationDtoSchema.parse(response.json);
    expect(dto.status).toBe('queued');
    expect(Date.parse(dto.nextAttemptAt ?? '') - Date.parse(dto.createdAt)).toBe(3_600_000);
    expect(Date.parse(dto.deadlineAt)).toBeGreaterThan(Date.parse(dto.nextAttemptAt ?? ''));
    const read = await app.call({ method: 'GET', path: dto.statusUrl, owner: 'dee' });
    expect(read.json).toEqual(dto);
    const listed = await app.call({ method: 'GET', path: '/api/operations?status=queued', owner: 'dee' });
    expect(listed.json.items).toEqual([dto]);
    const cancelled = await app.call({ method: 'POST', path: `${dto.statusUrl}/cancel`, owner: 'dee' });
    expect(cancelled.json).toMatchObject({ status: 'cancelled', nextAttemptAt: null });
  });

  it.skipIf(skip)('the same key with the same delay and priority replays; another delay, runAt or priority is a 422', async () => {
    const first = await app.call(admit('rue', 'same', waitBody({ delaySeconds: 60, priority: -2 })));
    const again = await app.call(admit('rue', 'same', waitBody({ priority: -2, delaySeconds: 60 })));
    expect([first.status, again.status]).toEqual([202, 200]);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.json.id).toBe(first.json.id);
    for (const changed of [{ delaySeconds: 61, priority: -2 }, { delaySeconds: 60 }, { priority: -2 }, { delaySeconds: 60, priority: 0 }]) {
      const reused = await app.call(admit('rue', 'same', waitBody(changed)));
      expect(reused.status).toBe(422);
      expect(reused.json).toMatchObject({ code: 'idempotency_key_reused' });
    }
    expect(await app.countOperations('rue')).toBe(1);
  });

  const invalid: Array<[string, unknown, string]> = [
    ['a priority for a task type that takes none', claimableBody({ priority: 1 }), 'body.priority'],
    ['a delaySeconds for a task type that takes none', claimableBody({ delaySeconds: 5 }), 'body.delaySeconds'],
    ['a runAt for a task type that takes none', claimableBody({ runAt: '2030-01-01T00:00:00Z' }), 'body.runAt'],
    ['a priority above the task type’s bound (demo.wait: 10)', waitBody({ priority: 11 }), 'body.priority'],
    ['a priority below the task type’s bound (demo.wait: -10)', waitBody({ priority: -11 }), 'body.priority'],
    ['a priority beyond -1000..1000', waitBody({ priority: 1_001 }), 'body.priority'],
    ['a priority that is not an integer', waitBody({ priority: 1.5 }), 'body.priority'],
    ['a delaySeconds above the task type’s bound (demo.wait: one day)', waitBody({ delaySeconds: 86_401 }), 'body.delaySeconds'],
    ['a delaySeconds beyond 30 days', waitBody({ delaySeconds: FieldLimits.delaySeconds.max + 1 }), 'body.delaySeconds'],
    ['a negative delaySeconds', waitBody({ delaySeconds: -1 }), 'body.delaySeconds'],
    ['a delaySeconds that is not an integer', waitBody({ delaySeconds: 0.5 }), 'body.delaySeconds'],
    ['a delaySeconds given as a string', waitBody({ delaySeconds: '60' }), 'body.delaySeconds'],
    ['a runAt without an offset', waitBody({ runAt: '2030-01-01T00:00:00' }), 'body.runAt'],
    ['a runAt that is no date', waitBody({ runAt: 'tomorrow' }), 'body.runAt'],
    ['a runAt more than a day ahead of the database clock', waitBody({ runAt: '2999-01-01T00:00:00Z' }), 'body.runAt'],
    ['both delaySeconds and runAt', waitBody({ delaySeconds: 5, runAt: '2030-01-01T00:00:00Z' }), 'body.runAt'],
  ];
  it.skipIf(skip).each(invalid)('%s answers 400 naming the field and writes no row', async (_name, body, path) => {
    const owner = `invalid-${++seq}`;
    const response = await app.call(admit(owner, `bad-${seq}`, body));
    expect(response.status).toBe(400);
    expect(response.headers['content-type']).toBe('application/problem+json');
    expect(response.json).toMatchObject({ status: 400, code: 'validation_failed' });
    expect(response.json.errors.map((error: { path: string }) => error.path)).toContain(path);
    expect(await app.countOperations(owner)).toBe(0);
  });

  it.skipIf(skip)('a runAt a minute ahead of the database clock is accepted, and a past one starts at once', async () => {
    const now = parseDbTime(await databaseNow(app.db.store)).getTime();
    const soon = await app.call(admit('max', 'soon', waitBody({ runAt: new Date(now + 60_000).toISOString() })));
    expect(soon.status).toBe(202);
    expect(Date.parse(soon.json.nextAttemptAt)).toBeGreaterThanOrEqual(now + 60_000);
    const past = await app.call(admit('max', 'past', waitBody({ runAt: new Date(now - 60_000).toISOString() })));
    expect(past.status).toBe(202);
    expect(past.json.nextAttemptAt).toBeNull();
  });
});

describe('the OpenAPI document of the admission body', () => {
  const doc = JSON.parse(openApiJson(API_ROUTES));
  const properties = doc.components.schemas.AdmitRequest.properties;

  it('documents priority, delaySeconds and runAt with their bounds, and nextAttemptAt of the operation', () => {
    expect(properties.priority).toMatchObject({ type: 'integer', minimum: FieldLimits.priority.min, maximum: FieldLimits.priority.max });
    expect(properties.delaySeconds).toMatchObject({ type: 'integer', minimum: 0, maximum: FieldLimits.delaySeconds.max });
    expect(properties.runAt).toMatchObject({ type: 'string', format: 'date-time' });
    for (const field of ['priority', 'delaySeconds', 'runAt']) expect(properties[field].description).toMatch(/task type/);
    expect(doc.components.schemas.AdmitRequest.required).toEqual(['taskType', 'subject']);
    expect(JSON.stringify(doc.components.schemas.OperationDto.properties.nextAttemptAt)).toMatch(/delayed admission/);
  });
});
