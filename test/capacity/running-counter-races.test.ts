import { describe, expect, it } from 'vitest';
import { admitOperation } from '../../lib/operations/admission/admit-operation.js';
import { claimNextOperation, enterOwnerScope, type ClaimedOperation } from '../../lib/operations/lease/claim-operation.js';
import { completeOperation } from '../../lib/operations/lease/lease-operations.js';
import { OwnerScope, WorkerScope } from '../../lib/operations/scopes.js';
import { expectCapacityMatchesActive } from '../support/capacity-invariant.js';
import { testDeps } from '../support/fixtures.js';
import { implementationDatabase, IMPLEMENTATIONS } from '../support/test-store.js';

// The owner's running limit is its `owner_capacity.running` counter (docs/design.md §4): a claim reads it without a
// lock and raises it at its end, guarded by the limit. Claimers of one owner must never serialise on that row, never
// take more than the limit together, and never pass an owner over because another transaction holds its row.


/** Real concurrent rounds: several claimers, each its own process (its own deps: no shared claim group), at once. */
const ROUNDS = 25;

describe.each(IMPLEMENTATIONS)('claims racing for one owner\'s running counter: $name', ({ dialect, routines }) => {
  const db = implementationDatabase({ dialect, routines }, { poolSize: 24 });
  const { skip } = db;
  let seq = 0;

  const admitFor = (deps: ReturnType<typeof testDeps>, owner: string) =>
    admitOperation(new OwnerScope(db.store, owner), deps, `k-${++seq}`, { taskType: 'test.noop', subject: { type: 'doc', id: `d${seq}` }, params: {} });
  const completeAll = async (claims: readonly (ClaimedOperation | null)[]) => {
    const worker = new WorkerScope(db.store);
    for (const claim of claims) if (claim) await completeOperation(enterOwnerScope(worker, claim), claim);
  };
  const running = async () => Number((await db.store.db.selectFrom('owner_capacity').select('running').where('owner_user_id', '=', 'amy').executeTakeFirst())?.running ?? 0);

  it.skipIf(skip)('claimers of one owner below its limit all get work at once: none waits for, or is passed over by, another', async () => {
    const processes = Array.from({ length: 4 }, () => testDeps({}, { perOwner: 100, runningPerOwner: 4 }));
    for (let round = 0; round < ROUNDS; round++) {
      for (let i = 0; i < 4; i++) await admitFor(processes[0]!, 'amy');
      const claims = await Promise.all(processes.map((deps) => claimNextOperation(new WorkerScope(db.store), deps)));
      expect({ round, claimed: claims.filter((claim) => claim !== null).length }).toEqual({ round, claimed: 4 });
      expect(await running()).toBe(4);
      await completeAll(claims);
    }
    await expectCapacityMatchesActive(db.store);
  });

  it.skipIf(skip)('claimers racing for the last room of an owner take exactly its limit together, never more', async () => {
    const processes = Array.from({ length: 4 }, () => testDeps({}, { perOwner: 100, runningPerOwner: 2 }));
    for (let round = 0; round < ROUNDS; round++) {
      for (let i = 0; i < 4; i++) await admitFor(processes[0]!, 'amy');
      const claims = await Promise.all(processes.map((deps) => claimNextOperation(new WorkerScope(db.store), deps)));
      expect({ round, claimed: claims.filter((claim) => claim !== null).length, running: await running() }).toEqual({ round, claimed: 2, running: 2 });
      await completeAll(claims);
      // The two left are claimed as room frees.
      await completeAll(await Promise.all(processes.slice(0, 2).map((deps) => claimNextOperation(new WorkerScope(db.store), deps))));
      expect(await running()).toBe(0);
    }
    await expectCapacityMatchesActive(db.store);
  });
  it.skipIf(skip)('a claimer raced for an owner at its limit takes another owner\'s work: 20 claimers over 20 owners with a running limit of 1 claim 20, one each', async () => {
    const processes = Array.from({ length: 20 }, () => testDeps({}, { perOwner: 1000, runningPerOwner: 1 }));
    const owners = Array.from({ length: 20 }, (_, i) => `owner-${i}`);
    for (let i = 0; i < 5; i++) for (const owner of owners) await admitFor(processes[0]!, owner);
    for (let round = 0; round < 3; round++) {
      const claims = await Promise.all(processes.map((deps) => claimNextOperation(new WorkerScope(db.store), deps)));
      const claimedOwners = claims.flatMap((claim) => (claim ? [claim.ownerUserId] : []));
      expect({ round, claimed: claimedOwners.length, owners: new Set(claimedOwners).size }).toEqual({ round, claimed: 20, owners: 20 });
      await completeAll(claims);
    }
    await expectCapacityMatchesActive(db.store);
  });
});
