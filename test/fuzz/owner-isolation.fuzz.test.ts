import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { capacityPolicy } from '../../lib/capacity/capacity-policy.js';
import { claimNextOperation, enterOwnerScope } from '../../lib/operations/lease/claim-operation.js';
import { completeOperation, failOperation } from '../../lib/operations/lease/lease-operations.js';
import type { OperationStatus } from '../../lib/operations/lifecycle/operation-status.js';
import { WorkerScope } from '../../lib/operations/scopes.js';
import { createApiTestApp, type ApiTestApp } from '../http/api-test-app.js';
import type { ParsedResponse } from '../support/api-events.js';
import { DIALECTS, hasMariadb } from '../support/test-store.js';
import { applicationTables, emptyTables } from './db-snapshot.js';
import { FUZZ_TEST_TIMEOUT_MS, fuzzParameters } from './fuzz-settings.js';

/** The two owners; their ids (and the keys below) are distinctive, so a leak is found by a substring search. */
const OWNERS = ['iso-owner-alpha', 'iso-owner-bravo'] as const;
/** Both owners use the same keys (`iso-shared-key-0` …): each must still get their own operation. */
const KEY_PREFIX = 'iso-shared-key-';

/** Which operation a command names: one of the caller's, one of the other owner's, or an id nobody has. */
interface Target {
  readonly whose: 'own' | 'other' | 'unknown';
  readonly index: number;
}

/** One step of the interleaving: a request by owner `who` (0 or 1), or a worker moving the next operation along. */
type Command =
  | { readonly kind: 'admit'; readonly who: 0 | 1; readonly key: number; readonly subject: number }
  | { readonly kind: 'get' | 'cancel' | 'retry'; readonly who: 0 | 1; readonly target: Target }
  | { readonly kind: 'list'; readonly who: 0 | 1; readonly limit: number; readonly status: OperationStatus | null; readonly foreignCursor: boolean }
  | { readonly kind: 'notifications'; readonly who: 0 | 1; readonly limit: number }
  | { readonly kind: 'work'; readonly outcome: 'complete' | 'fail' | 'keep' };

/** docs/design.md §7: what the owner's own id may answer on each route. */
const OWN_STATUSES = { get: [200], cancel: [200, 409], retry: [202, 409, 429] } as const;

const whoArb = fc.constantFrom<0 | 1>(0, 1);
const targetArb = fc.record({ whose: fc.constantFrom('own', 'other', 'unknown'), index: fc.nat({ max: 9 }) });
const commandArb: fc.Arbitrary<Command> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('admit' as const), who: whoArb, key: fc.nat({ max: 3 }), subject: fc.nat({ max: 2 }) }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constantFrom('get' as const, 'cancel' as const, 'retry' as const), who: whoArb, target: targetArb }) },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('list' as const),
      who: whoArb,
      limit: fc.integer({ min: 1, max: 4 }),
      status: fc.constantFrom<OperationStatus | null>(null, 'queued', 'running', 'cancelled', 'succeeded', 'failed'),
      foreignCursor: fc.boolean(),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('notifications' as const), who: whoArb, limit: fc.integer({ min: 1, max: 4 }) }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('work' as const), outcome: fc.constantFrom('complete', 'fail', 'keep') }) },
);

describe.each(DIALECTS)('two owners interleaving every owner route on %s', (dialect) => {
  const skip = dialect === 'mariadb' && !hasMariadb();
  let app: ApiTestApp;
  let tables: string[];

  beforeAll(async () => {
    if (skip) return;
    app = await createApiTestApp(dialect, { capacity: capacityPolicy({ perOwner: 6, global: 20, retryAfterSeconds: 7 }) });
    tables = await applicationTables(app.db.store);
  });
  afterAll(async () => app?.drop());

  /** Ids of the operations each owner holds, newest first, as the database says (the ground truth). */
  async function idsOf(owner: string, status: OperationStatus | null = null): Promise<string[]> {
    let query = app.db.store.db.selectFrom('operations').select('id').where('owner_user_id', '=', owner);
    if (status !== null) query = query.where('status', '=', status);
    return (await query.orderBy('created_at', 'desc').orderBy('id', 'desc').execute()).map((row) => row.id);
  }

  /** Every row `owner` holds (operations and notifications), as JSON: what another owner's requests must never change. */
  async function rowsOf(owner: string): Promise<string> {
    const db = app.db.store.db;
    const operations = await db.selectFrom('operations').selectAll().where('owner_user_id', '=', owner).orderBy('id').execute();
    const notifications = await db.selectFrom('operation_notifications').selectAll().where('owner_user_id', '=', owner).orderBy('operation_id').orderBy('cycle').execute();
    return JSON.stringify({ operations, notifications });
  }

  /** Sends one request as `owner` and checks it shows nothing of the other owner's. */
  async function call(owner: string, method: string, path: string, extra: { key?: string; body?: unknown } = {}): Promise<ParsedResponse> {
    const response = await app.call({
      method,
      path,
      owner,
      ...(extra.key ? { headers: { 'idempotency-key': extra.key } } : {}),
      ...(extra.body === undefined ? {} : { body: extra.body }),
    });
    const label = `${method} ${path} as ${owner} → ${response.status} ${response.text.slice(0, 300)}`;
    expect(response.status, label).toBeLessThan(500);
    const others = OWNERS.filter((name) => name !== owner);
    for (const other of others) {
      for (const id of await idsOf(other)) expect(response.text, `${label}: shows ${other}'s operation ${id}`).not.toContain(id);
    }
    expect(response.text, `${label}: shows an owner id`).not.toMatch(/iso-owner-/);
    expect(response.text, `${label}: shows an idempotency key`).not.toContain(KEY_PREFIX);
    return response;
  }

  /** Follows `nextCursor` to the end (at most 50 pages) and returns every item. */
  async function everyPage(owner: string, path: string, first: string | null = null): Promise<Record<string, unknown>[]> {
    const items: Record<string, unknown>[] = [];
    let cursor = first;
    for (let page = 0; page < 50; page++) {
      const separator = path.includes('?') ? '&' : '?';
      const response = await call(owner, 'GET', cursor === null ? path : `${path}${separator}cursor=${encodeURIComponent(cursor)}`);
      expect(response.status, `GET ${path} as ${owner}`).toBe(200);
      items.push(...(response.json.items as Record<string, unknown>[]));
      cursor = response.json.nextCursor;
      if (cursor === null) return items;
    }
    throw new Error(`GET ${path} as ${owner}: more than 50 pages`);
  }

  async function idFor(owner: string, target: Target): Promise<string> {
    if (target.whose === 'unknown') return randomUUID();
    const ids = await idsOf(target.whose === 'own' ? owner : OWNERS.find((name) => name !== owner)!);
    return ids.length === 0 ? randomUUID() : ids[target.index % ids.length]!;
  }

  /** Runs `command`; one owner's command leaves every row of the other owner exactly as it was. */
  async function run(command: Command): Promise<void> {
    if (command.kind === 'work') return work(command.outcome);
    const other = OWNERS[1 - command.who]!;
    const theirsBefore = await rowsOf(other);
    await request(command);
    expect(await rowsOf(other), `${JSON.stringify(command)} changed ${other}'s rows`).toBe(theirsBefore);
  }

  /** A worker claims the next operation and completes it, fails it, or keeps it running. */
  async function work(outcome: 'complete' | 'fail' | 'keep'): Promise<void> {
    const worker = new WorkerScope(app.db.store);
    const claim = await claimNextOperation(worker, app.deps);
    if (!claim || outcome === 'keep') return;
    const scope = enterOwnerScope(worker, claim);
    if (outcome === 'complete') await completeOperation(scope, claim);
    else await failOperation(scope, claim, { kind: 'permanent', message: 'fuzz' }, 0, 0);
  }

  /** Sends the command's request(s) as its owner and checks the answers against the database. */
  async function request(command: Exclude<Command, { kind: 'work' }>): Promise<void> {
    const owner = OWNERS[command.who];
    const other = OWNERS[1 - command.who]!;
    switch (command.kind) {
      case 'admit': {
        const body = { taskType: 'test.claimable', subject: { type: 'doc', id: `doc-${command.subject}` } };
        const response = await call(owner, 'POST', '/api/operations', { key: `${KEY_PREFIX}${command.key}`, body });
        expect([200, 202, 422, 429]).toContain(response.status);
        return;
      }
      case 'get':
      case 'cancel':
      case 'retry': {
        const id = await idFor(owner, command.target);
        const method = command.kind === 'get' ? 'GET' : 'POST';
        const route = (operationId: string) => (command.kind === 'get' ? `/api/operations/${operationId}` : `/api/operations/${operationId}/${command.kind}`);
        const response = await call(owner, method, route(id));
        if ((await idsOf(owner)).includes(id)) {
          expect(OWN_STATUSES[command.kind], `${method} ${route(id)} as ${owner}`).toContain(response.status);
          return;
        }
        // Another owner's id answers exactly as an id nobody has: the same 404, the same headers, the same body.
        const unknown = await call(owner, method, route(randomUUID()));
        expect({ status: response.status, headers: response.headers, json: response.json }, `${method} ${route(id)}`).toEqual({
          status: unknown.status,
          headers: unknown.headers,
          json: unknown.json,
        });
        expect(response.status).toBe(404);
        return;
      }
      case 'list': {
        const filter = command.status === null ? '' : `&status=${command.status}`;
        const path = `/api/operations?limit=${command.limit}${filter}`;
        // A cursor made for the other owner's listing still only pages through the caller's own operations.
        const foreign = command.foreignCursor ? ((await call(other, 'GET', '/api/operations?limit=1')).json.nextCursor as string | null) : null;
        const seen = (await everyPage(owner, path, foreign)).map((item) => item.id);
        const own = await idsOf(owner, command.status);
        if (foreign === null) expect(seen, `${path} as ${owner}: exactly the owner's operations`).toEqual(own);
        else expect(own, `${path} as ${owner} from a foreign cursor`).toEqual(expect.arrayContaining(seen));
        return;
      }
      case 'notifications': {
        const seen = (await everyPage(owner, `/api/notifications?limit=${command.limit}`)).map((item) => item.operationId);
        const own = await idsOf(owner);
        const count = await app.db.store.db.selectFrom('operation_notifications').select('operation_id').where('owner_user_id', '=', owner).execute();
        expect(seen.length, `notifications of ${owner}`).toBe(count.length);
        expect(own, `notifications of ${owner}`).toEqual(expect.arrayContaining(seen));
        return;
      }
    }
  }

  it.skipIf(skip)(
    "no answer to one owner names the other's operations, keys or owner id, and the other's ids answer exactly like unknown ids",
    async () => {
      await fc.assert(
        fc.asyncProperty(fc.integer({ min: 1, max: 3 }), fc.array(commandArb, { minLength: 5, maxLength: 25, size: 'medium' }), async (initial, commands) => {
          await emptyTables(app.db.store, tables);
          // Both owners start with operations under the same keys, so every command has ids of both to name.
          for (let n = 0; n < initial; n++) for (const who of [0, 1] as const) await run({ kind: 'admit', who, key: n, subject: n });
          for (const command of commands) await run(command);
        }),
        fuzzParameters(40),
      );
    },
    FUZZ_TEST_TIMEOUT_MS,
  );
});
