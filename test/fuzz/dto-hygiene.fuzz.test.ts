import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StrategySnapshotDtoSchema, toStrategySnapshotDto } from '../../lib/features/strategy-snapshot/strategy-snapshot-dto.js';
import type { PublishedSnapshot } from '../../lib/features/strategy-snapshot/strategy-snapshot.js';
import { JobDtoSchema, toJobDto } from '../../lib/jobs/job-dto.js';
import { NotificationDtoSchema, OperationDtoSchema, toNotificationDto, toOperationDto } from '../../lib/operations/owner/operation-dto.js';
import type { OperationRow } from '../../lib/operations/store/operation.repository.js';
import { createApiTestApp, type ApiTestApp } from '../http/api-test-app.js';
import { DIALECTS, hasMariadb } from '../support/test-store.js';
import { applicationTables, emptyTables } from './db-snapshot.js';
import {
  jobRowArb,
  notificationRowArb,
  operationRowArb,
  ownerIdArb,
  PRIVATE_OPERATION_COLUMNS,
  publishedSnapshotArb,
  smuggledFieldsArb,
} from './dto-rows.js';
import { FUZZ_TEST_TIMEOUT_MS, fuzzParameters } from './fuzz-settings.js';

/**
 * Field names no owner-facing body may carry (test/http/dto-privacy.test.ts, plus the lease expiry, heartbeat and model
 * provenance columns): idempotency keys, lease data, owner ids, provider/model/route, results, failure text, params, hashes.
 */
const FORBIDDEN_FIELDS =
  /^(idempotency_?key|lease_?token|lease_?owner|lease_?expires_?at|heartbeat_?at|owner_?user_?id|provider|model|model_?attempts|route|result.*|failure_?message|message|params.*|request_?hash|raw.*)$/i;

function fieldNames(value: unknown): string[] {
  if (Array.isArray(value)) return value.flatMap(fieldNames);
  if (typeof value !== 'object' || value === null) return [];
  return Object.entries(value).flatMap(([name, inner]) => [name, ...fieldNames(inner)]);
}

/** Every string inside `value` (deeply), for the "private value" lists. */
function stringsIn(value: unknown): string[] {
  if (typeof value === 'string') return [value];
  if (Array.isArray(value)) return value.flatMap(stringsIn);
  if (typeof value === 'object' && value !== null) return Object.values(value).flatMap(stringsIn);
  return [];
}

/**
 * Asserts `body` (a DTO or a response's JSON text) names no forbidden field and contains none of `secrets` — as JSON
 * escapes it — unless a value the owner may see (`visible`) holds the same text.
 */
function expectClean(body: unknown, secrets: readonly (string | null)[], visible: readonly string[], label: string): void {
  const json = typeof body === 'string' ? body : JSON.stringify(body);
  const parsed: unknown = typeof body === 'string' ? JSON.parse(body) : body;
  expect(fieldNames(parsed).filter((name) => FORBIDDEN_FIELDS.test(name)), label).toEqual([]);
  for (const secret of secrets) {
    if (secret === null || visible.some((value) => value.includes(secret))) continue;
    expect(json.includes(JSON.stringify(secret).slice(1, -1)), `${label}: contains ${JSON.stringify(secret).slice(0, 80)}`).toBe(false);
  }
}

const privateValuesOf = (row: OperationRow) => PRIVATE_OPERATION_COLUMNS.map((column) => row[column]).filter((value): value is string => typeof value === 'string' && value.length >= 16);
const visibleOf = (row: OperationRow) => [row.id, row.task_type, row.subject_type, row.subject_id, row.progress_stage ?? '', row.failure_code ?? ''];
const keysOf = (schema: { shape: object }) => Object.keys(schema.shape).sort();

describe('owner-facing DTO builders on random rows', () => {
  it('an operation DTO has exactly its fields, depends on no private column, and shows no private or smuggled value', () => {
    fc.assert(
      fc.property(operationRowArb, operationRowArb, smuggledFieldsArb, (row, other, smuggled) => {
        const dto = toOperationDto({ ...row, ...smuggled } as OperationRow);
        expect(Object.keys(dto).sort()).toEqual(keysOf(OperationDtoSchema));
        expect(OperationDtoSchema.safeParse(dto).success).toBe(true);
        expectClean(dto, [...privateValuesOf(row), ...stringsIn(smuggled)], visibleOf(row), 'operation DTO');
        // Swapping every private column for another row's value changes nothing: the DTO cannot reveal them.
        const swapped = Object.fromEntries(PRIVATE_OPERATION_COLUMNS.map((column) => [column, other[column]]));
        expect(toOperationDto({ ...row, ...swapped } as OperationRow)).toEqual(dto);
      }),
      fuzzParameters(300),
    );
  });

  it('a notification DTO and a job DTO never show the owner id, and have exactly their fields', () => {
    fc.assert(
      fc.property(notificationRowArb, jobRowArb, ownerIdArb, smuggledFieldsArb, (notification, job, otherOwner, smuggled) => {
        const notificationDto = toNotificationDto({ ...notification, ...smuggled });
        expect(Object.keys(notificationDto).sort()).toEqual(keysOf(NotificationDtoSchema));
        expect(NotificationDtoSchema.safeParse(notificationDto).success).toBe(true);
        const notificationVisible = [notification.operation_id, notification.task_type, notification.failure_code ?? ''];
        expectClean(notificationDto, [notification.owner_user_id, ...stringsIn(smuggled)], notificationVisible, 'notification DTO');
        expect(toNotificationDto({ ...notification, owner_user_id: otherOwner })).toEqual(notificationDto);

        const jobDto = toJobDto({ ...job, ...smuggled });
        expect(Object.keys(jobDto).sort()).toEqual(keysOf(JobDtoSchema));
        expect(JobDtoSchema.safeParse(jobDto).success).toBe(true);
        expectClean(jobDto, [job.owner_user_id, ...stringsIn(smuggled)], [job.id, job.title, job.company, job.description], 'job DTO');
        expect(toJobDto({ ...job, owner_user_id: otherOwner })).toEqual(jobDto);
      }),
      fuzzParameters(300),
    );
  });

  it('a strategy snapshot DTO copies only its own fields, whatever else the published result carries', () => {
    fc.assert(
      fc.property(publishedSnapshotArb, smuggledFieldsArb, (published, smuggled) => {
        const dto = toStrategySnapshotDto({ ...published, ...smuggled } as PublishedSnapshot);
        expect(Object.keys(dto).sort()).toEqual(keysOf(StrategySnapshotDtoSchema));
        expect(StrategySnapshotDtoSchema.safeParse(dto).success).toBe(true);
        expectClean(dto, stringsIn(smuggled), stringsIn(published), 'strategy snapshot DTO');
      }),
      fuzzParameters(300),
    );
  });
});

describe.each(DIALECTS)('random rows read back through the owner API on %s', (dialect) => {
  const skip = dialect === 'mariadb' && !hasMariadb();
  let app: ApiTestApp;
  let tables: string[];
  beforeAll(async () => {
    if (skip) return;
    app = await createApiTestApp(dialect);
    tables = await applicationTables(app.db.store);
  });
  afterAll(async () => app?.drop());

  /** An owner id the API accepts as a JWT `sub` (1–128 UTF-16 units) and the scope accepts as an owner. */
  const apiOwnerArb = ownerIdArb.filter((owner) => owner.length <= 128);

  it.skipIf(skip)(
    'reading them by id, by listing and as notifications answers 200 bodies without a private value or a forbidden field',
    async () => {
      const runArb = fc.record({
        owner: apiOwnerArb,
        rows: fc.array(operationRowArb, { minLength: 1, maxLength: 3 }),
        notified: fc.nat({ max: 3 }),
        job: jobRowArb,
      });
      await fc.assert(
        fc.asyncProperty(runArb, async ({ owner, rows, notified, job }) => {
          await emptyTables(app.db.store, tables);
          const stored = rows.map((row, n) => ({ ...row, owner_user_id: owner, idempotency_key: `${row.idempotency_key.slice(0, 120)}-${n}` }));
          for (const { claim_lane: _lane, ...row } of stored) await app.db.store.db.insertInto('operations').values(row).execute();
          const notifications = stored.slice(0, notified).map((row, cycle) => ({ ...row, cycle }));
          for (const row of notifications) {
            await app.db.store.db
              .insertInto('operation_notifications')
              .values({ operation_id: row.id, owner_user_id: owner, task_type: row.task_type, status: 'failed', failure_code: row.failure_code, cycle: row.cycle, created_at: row.created_at })
              .execute();
          }
          await app.db.store.db.insertInto('jobs').values({ ...job, owner_user_id: owner }).execute();
          const secrets = [owner, ...stored.flatMap(privateValuesOf)];
          const visible = [...stored.flatMap(visibleOf), job.title, job.company, job.description, job.id];
          const paths = [...stored.map((row) => `/api/operations/${row.id}`), '/api/operations?limit=100', '/api/notifications?limit=100', `/api/jobs/${job.id}`];
          for (const path of paths) {
            const response = await app.call({ method: 'GET', path, owner });
            expect(response.status, `${path} → ${response.text.slice(0, 300)}`).toBe(200);
            expectClean(response.text, secrets, visible, `GET ${path}`);
          }
        }),
        fuzzParameters(60),
      );
    },
    FUZZ_TEST_TIMEOUT_MS,
  );
});
