import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { admitOperation } from '../../lib/operations/admission/admit-operation.js';
import { findOwnedOperation } from '../../lib/operations/store/operation.repository.js';
import { OwnerScope } from '../../lib/operations/scopes.js';
import { testDeps } from '../support/fixtures.js';
import { createTestDatabase, DIALECTS, hasMariadb, type TestDatabase } from '../support/test-store.js';

/** RFC 9562 §5.7: version nibble 7, variant bits 10. */
const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe.each(DIALECTS)('the admitted row on %s', (dialect) => {
  const skip = dialect === 'mariadb' && !hasMariadb();
  let t: TestDatabase;
  let seq = 0;

  beforeAll(async () => {
    if (!skip) t = await createTestDatabase(dialect);
  });
  afterAll(async () => t?.drop());

  const admit = (owner: OwnerScope, deps = testDeps()) =>
    admitOperation(owner, deps, `row-${++seq}`, { taskType: 'test.noop', subject: { type: 'doc', id: `d${seq}` }, params: {} });

  it.skipIf(skip)('admission answers the row exactly as stored (INSERT … RETURNING), database-clock times included', async () => {
    const owner = new OwnerScope(t.store, 'row-owner');
    const { operation } = await admit(owner);
    expect(operation.status).toBe('queued');
    expect(operation).toEqual(await findOwnedOperation(t.store, 'row-owner', operation.id));
  });

  it.skipIf(skip)('operation ids are UUIDv7, ascending in admission order (new rows append to every index that ends in the id)', async () => {
    const owner = new OwnerScope(t.store, 'id-owner');
    const ids: string[] = [];
    for (let i = 0; i < 20; i++) ids.push((await admit(owner)).operation.id);
    for (const id of ids) expect(id).toMatch(UUID_V7);
    expect([...ids].sort()).toEqual(ids);
    expect(new Set(ids).size).toBe(ids.length);
  });
});
