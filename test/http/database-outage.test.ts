import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import type { Connection } from 'mysql2/promise';
import { openStore, type Store } from '../../lib/db/store.js';
import { withRoutines } from '../support/test-store.js';
import { createApiHandler, type ApiDeps } from '../../lib/http/api-handler.js';
import { DATABASE_UNAVAILABLE_RETRY_AFTER_SECONDS, ProblemSchema } from '../../lib/http/problem-details.js';
import { apiEvent, lambdaContext, parseResponse, type ParsedResponse } from '../support/api-events.js';
import { startCommitCuttingProxy } from '../support/commit-cutting-proxy.js';
import { freePort } from '../support/free-port.js';
import { connectAdmin } from '../support/mariadb-server.js';
import { RecordingLogger } from '../support/recording-observability.js';
import { hasMariadb } from '../support/test-store.js';
import { waitFor } from '../support/wait-for.js';
import { createApiTestApp, type ApiTestApp } from './api-test-app.js';

const body = { taskType: 'test.claimable', subject: { type: 'doc', id: 'doc-1' } };

/** The API over `store` (every other dependency the test app's), logging into a fresh recording logger. */
function apiOn(app: ApiTestApp, store: Store) {
  const logger = new RecordingLogger();
  const deps: ApiDeps = { ...app.deps, store, logger };
  const handler = createApiHandler(deps);
  return { logger, admit: async (owner: string, key: string) => parseResponse(await handler(apiEvent({ method: 'POST', path: '/api/operations', owner, headers: { 'idempotency-key': key }, body }), lambdaContext())) };
}

/** `app.db.url` with another port, user or password. */
function urlWith(app: ApiTestApp, change: { port?: number; user?: string; password?: string }): string {
  const url = new URL(app.db.url);
  if (change.port !== undefined) url.port = String(change.port);
  if (change.user !== undefined) url.username = change.user;
  if (change.password !== undefined) url.password = change.password;
  return url.toString();
}

function expectOutageAnswer(response: ParsedResponse, logger: RecordingLogger, reason: RegExp): void {
  expect(response.status, response.text).toBe(503);
  expect(response.headers['content-type']).toBe('application/problem+json');
  expect(response.headers['retry-after']).toBe(String(DATABASE_UNAVAILABLE_RETRY_AFTER_SECONDS));
  expect(ProblemSchema.parse(response.json)).toMatchObject({ status: 503, code: 'database_unavailable', type: 'https://durable-ops.dev/problems/database-unavailable' });
  // No driver text, host or port reaches the client.
  expect(response.text).not.toMatch(/ECONN|127\.0\.0\.1|ER_|killed|mysql/i);
  // Logged once as an outage (WARN with the driver's code), never as an ERROR with a stack.
  expect(logger.lines.filter((line) => line.level === 'ERROR')).toEqual([]);
  expect(logger.lines.filter((line) => line.level === 'WARN')).toEqual([expect.objectContaining({ fields: expect.objectContaining({ code: 'database_unavailable', reason: expect.stringMatching(reason) }) })]);
}

describe.skipIf(!hasMariadb())('a database outage answers 503 and writes nothing', () => {
  let app: ApiTestApp;
  let admin: Connection;
  beforeAll(async () => {
    app = await createApiTestApp('mariadb');
    admin = await connectAdmin(inject('mariadbAdminUrl'));
  });
  afterAll(async () => {
    await admin?.end();
    await app?.drop();
  });

  it('a store whose server refuses connections (a closed port) answers 503 + Retry-After, problem+json database_unavailable', async () => {
    const store = openStore(urlWith(app, { port: await freePort() }), { poolSize: 1 });
    try {
      const { logger, admit } = apiOn(app, store);
      expectOutageAnswer(await admit('refused', 'k-refused'), logger, /^ECONNREFUSED$/);
    } finally {
      await store.destroy();
    }
  });

  it.each([
    ['stored procedures', true],
    ['in-process statements', false],
  ])('an admission (%s) whose connection is killed after its insert, before its commit, answers 503 and leaves no row; the same key then admits once', async (_name, routines) => {
    const owner = `killed-${routines}`;
    const store = withRoutines(openStore(app.db.url, { poolSize: 2 }), routines);
    try {
      const { logger, admit } = apiOn(app, store);
      // One admission first, so the owner's capacity row exists; the admission under test updates it after its insert.
      expect((await admit(owner, 'k-first')).status).toBe(202);
      await admin.query('BEGIN');
      await admin.query('SELECT * FROM ??.owner_capacity WHERE owner_user_id = ? FOR UPDATE', [new URL(app.db.url).pathname.slice(1), owner]);
      const answer = admit(owner, 'k-cut');
      const waiting = await waitFor(async () => {
        const [rows] = await admin.query<import('mysql2').RowDataPacket[]>(
          // This test's database only: other test files share the server.
          "SELECT t.trx_mysql_thread_id AS id, t.trx_rows_modified AS modified FROM information_schema.INNODB_TRX t JOIN information_schema.PROCESSLIST p ON p.ID = t.trx_mysql_thread_id WHERE t.trx_state = 'LOCK WAIT' AND p.DB = ?",
          [new URL(app.db.url).pathname.slice(1)],
        );
        return rows[0] as { id: number; modified: number } | undefined;
        // InnoDB refreshes its INNODB_TRX cache only after 100 ms without a read: poll slower than that.
      }, { what: 'the admission waiting on the held capacity row', intervalMs: 250 });
      // Mid-transaction: the operation row is inserted, not committed.
      expect(Number(waiting.modified)).toBeGreaterThan(0);
      await admin.query(`KILL CONNECTION ${Number(waiting.id)}`);
      await admin.query('ROLLBACK');
      expectOutageAnswer(await answer, logger, /^(ER_CONNECTION_KILLED|PROTOCOL_CONNECTION_LOST|ECONNRESET|EPIPE|CR_SERVER_LOST|2013)$/);
      expect(await app.countOperations(owner)).toBe(1);
      // Nothing was written, so the client's retry with the same key is a fresh admission, once.
      expect((await admit(owner, 'k-cut')).status).toBe(202);
      expect(await app.countOperations(owner)).toBe(2);
    } finally {
      await admin.query('ROLLBACK').catch(() => undefined);
      await store.destroy();
    }
  });

  it('a commit in doubt (connection lost after COMMIT was sent) answers 503; the retry with the same Idempotency-Key gets the replay, not a second operation', async () => {
    const owner = 'in-doubt';
    const target = new URL(app.db.url);
    const proxy = await startCommitCuttingProxy(target.hostname, Number(target.port || 3306), 'insert into `operations`');
    // In-process statements: the admission is an explicit transaction ending in a COMMIT the proxy can cut.
    const store = withRoutines(openStore(urlWith(app, { port: proxy.port }), { poolSize: 2 }), false);
    try {
      const { logger, admit } = apiOn(app, store);
      expectOutageAnswer(await admit(owner, 'k-doubt'), logger, /^(PROTOCOL_CONNECTION_LOST|ECONNRESET|EPIPE)$/);
      expect(proxy.cuts).toBe(1);
      // The server ran the commit it was sent: the row is there although the client never heard so.
      await waitFor(async () => (await app.countOperations(owner)) === 1, { what: 'the in-doubt commit' });
      const replay = await app.call({ method: 'POST', path: '/api/operations', owner, headers: { 'idempotency-key': 'k-doubt' }, body });
      expect(replay.status).toBe(200);
      expect(replay.headers['idempotent-replayed']).toBe('true');
      expect(await app.countOperations(owner)).toBe(1);
    } finally {
      await store.destroy();
      await proxy.close();
    }
  });

  it('too many connections (a user with MAX_USER_CONNECTIONS 1, its one connection held) answers 503', async () => {
    const database = new URL(app.db.url).pathname.slice(1);
    const user = `dop_one_${database.slice(4, 10)}`;
    await admin.query(`CREATE USER ?@'%' IDENTIFIED BY 'one-pw' WITH MAX_USER_CONNECTIONS 1`, [user]);
    let held: Connection | undefined;
    const store = openStore(urlWith(app, { user, password: 'one-pw' }), { poolSize: 1 });
    try {
      await admin.query(`GRANT ALL ON ??.* TO ?@'%'`, [database, user]);
      held = await connectAdmin(urlWith(app, { user, password: 'one-pw' }));
      const { logger, admit } = apiOn(app, store);
      expectOutageAnswer(await admit('crowded', 'k-crowded'), logger, /^(ER_USER_LIMIT_REACHED|ER_TOO_MANY_USER_CONNECTIONS|ER_CON_COUNT_ERROR)$/);
      expect(await app.countOperations('crowded')).toBe(0);
    } finally {
      await held?.end();
      await store.destroy();
      await admin.query(`DROP USER IF EXISTS ?@'%'`, [user]);
    }
  });
});
