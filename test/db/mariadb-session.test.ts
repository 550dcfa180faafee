import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inTransaction } from '../../lib/db/transaction.js';
import { claimCandidateQuery } from '../../lib/operations/store/operation.repository.js';
import { createTestDatabase, hasMariadb, type TestDatabase } from '../support/test-store.js';

describe.skipIf(!hasMariadb())('MariaDB sessions and the claim plan', () => {
  let t: TestDatabase;
  beforeAll(async () => {
    t = await createTestDatabase('mariadb');
  });
  afterAll(async () => t?.drop());

  it('every transaction runs READ COMMITTED in UTC, set once per session rather than per transaction', async () => {
    const settings = await inTransaction(t.store, async (tx) =>
      (await sql<{ iso: string; tz: string }>`SELECT @@tx_isolation AS iso, @@session.time_zone AS tz`.execute(tx.db)).rows[0],
    );
    expect(settings).toEqual({ iso: 'READ-COMMITTED', tz: '+00:00' });
  });

  it('the claim reads a claim index in claim order: no filesort, no full scan', async () => {
    const compiled = claimCandidateQuery(t.store, { lane: 'L', taskType: 'a.b', ownerUserId: 'alice' }, true).compile();
    // The same statement with the same bound parameters, prefixed with EXPLAIN.
    const explained = await t.store.db.executeQuery<{ key: string | null; type: string; Extra: string | null }>({ ...compiled, sql: `EXPLAIN ${compiled.sql}` });
    const rows = explained.rows;
    // The owner's claim range (test/operations/claim-other-types.test.ts counts the reads with a backlog).
    expect(['operations_owner_claim_idx']).toContain(rows[0]?.key);
    expect(rows[0]?.type).not.toBe('ALL');
    expect(rows[0]?.Extra ?? '').not.toContain('filesort');
  });
});
