import { beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ValidationError } from '../../lib/errors.js';
import { admitOperation } from '../../lib/operations/admission/admit-operation.js';
import { operationPriorityOf } from '../../lib/operations/admission/operation-priority.js';
import { claimNextOperation, type ClaimedOperation } from '../../lib/operations/lease/claim-operation.js';
import { cancelOperation, retryOperation } from '../../lib/operations/owner/owner-commands.js';
import { getOperation } from '../../lib/operations/owner/owner-reads.js';
import { OwnerScope, WorkerScope } from '../../lib/operations/scopes.js';
import { defineTask } from '../../lib/tasks/task-definition.js';
import { TaskRegistry } from '../../lib/tasks/task-registry.js';
import { noopTask, testDeps } from '../support/fixtures.js';
import { implementationDatabase, IMPLEMENTATIONS } from '../support/test-store.js';

// Per-operation priority (docs/design.md §4, fair share: order): it orders one owner's own queue of a task type, and
// nothing else — owners still take turns, whatever priorities their operations carry.


/** A task type whose operations may carry a priority in -5..5. */
const rankedTask = defineTask({
  type: 'test.ranked',
  paramsSchema: z.strictObject({}),
  timeoutMs: 60_000,
  operationPriority: { min: -5, max: 5 },
  async run() {},
});

describe.each(IMPLEMENTATIONS)('per-operation priority with the owner fairness rule: $name', ({ dialect, routines }) => {
  const db = implementationDatabase({ dialect, routines });
  const { skip } = db;
  let deps: ReturnType<typeof testDeps>;
  let seq = 0;
  beforeEach(() => {
    deps = testDeps({}, { perOwner: 100, runningPerOwner: 100 });
    deps.registry.register(rankedTask);
  });

  /** Admits, one after the other (so older first), `ownerUserId`'s operations with these priorities; returns their ids. */
  const admitAll = async (ownerUserId: string, priorities: readonly number[]) => {
    const ids = new Map<number, string>();
    for (const priority of priorities) {
      const { operation } = await admitOperation(new OwnerScope(db.store, ownerUserId), deps, `k-${++seq}`, {
        taskType: rankedTask.type,
        subject: { type: 'doc', id: `d${seq}` },
        priority,
      });
      expect(operation.priority).toBe(priority);
      ids.set(priority, operation.id);
    }
    return ids;
  };
  const claimOne = () => claimNextOperation(new WorkerScope(db.store), deps);
  const label = (claim: ClaimedOperation | null, amy: Map<number, string>, bea: Map<number, string>) => {
    for (const [owner, ids] of [['amy', amy], ['bea', bea]] as const) {
      for (const [priority, id] of ids) if (claim?.operationId === id) return `${owner}:${priority}`;
    }
    return String(claim?.operationId ?? null);
  };

  it.skipIf(skip)("within an owner the higher priority goes first, and owners still alternate: one's high priorities never take the other's turn", async () => {
    // amy's operations all outrank bea's, and amy's lowest is her oldest.
    const amy = await admitAll('amy', [0, 5, -5, 3]);
    const bea = await admitAll('bea', [-5, -4]);
    const order: string[] = [];
    for (let i = 0; i < 7; i++) order.push(label(await claimOne(), amy, bea));
    expect(order).toEqual(['amy:5', 'bea:-4', 'amy:3', 'bea:-5', 'amy:0', 'amy:-5', 'null']);
  });

  it.skipIf(skip)("claims arriving together share the turns fairly, and each owner's share is its highest priorities", async () => {
    const amy = await admitAll('amy', [0, 5, -5, 3]);
    const bea = await admitAll('bea', [-5, 1, -4]);
    const claims = await Promise.all(Array.from({ length: 4 }, () => claimOne()));
    expect(claims.map((claim) => label(claim, amy, bea)).sort()).toEqual(['amy:3', 'amy:5', 'bea:-4', 'bea:1']);
  });

  it.skipIf(skip)('an owner retry keeps the priority the operation was admitted with', async () => {
    const amy = await admitAll('amy', [4]);
    const id = amy.get(4) as string;
    const scope = new OwnerScope(db.store, 'amy');
    await cancelOperation(scope, id);
    expect(await retryOperation(scope, deps, id)).toMatchObject({ status: 'queued', priority: 4 });
    expect((await getOperation(scope, id)).priority).toBe(4);
  });
});

describe('the priority stored at admission', () => {
  const tiered = defineTask({ ...noopTask, type: 'test.tiered', priority: 7 });
  const bounded = (min: number, max: number) => defineTask({ ...noopTask, type: 'test.bounded', operationPriority: { min, max } });

  it('a task type that opts in stores the asked priority, or 0 clamped into its bounds', () => {
    expect(operationPriorityOf(rankedTask, -5)).toBe(-5);
    expect(operationPriorityOf(rankedTask, undefined)).toBe(0);
    expect(operationPriorityOf(bounded(2, 9), undefined)).toBe(2);
    expect(operationPriorityOf(bounded(-9, -3), undefined)).toBe(-3);
  });

  it('outside the bounds, or for a task type that does not opt in, a priority is a 400 naming body.priority', () => {
    for (const [task, priority] of [[rankedTask, 6], [rankedTask, -6], [tiered, 0]] as const) {
      expect(() => operationPriorityOf(task, priority)).toThrow(ValidationError);
      try {
        operationPriorityOf(task, priority);
      } catch (error) {
        expect((error as ValidationError).issues).toEqual([{ path: 'body.priority', message: expect.any(String) }]);
      }
    }
  });

  it("a task type that does not opt in stores its tier, as before per-operation priorities existed", () => {
    expect(operationPriorityOf(tiered, undefined)).toBe(7);
  });

  it('registration refuses bounds outside -1000..1000, inverted bounds and a delay bound beyond 30 days', () => {
    expect(() => new TaskRegistry().register(bounded(3, 2))).toThrow(TypeError);
    expect(() => new TaskRegistry().register(bounded(-1001, 0))).toThrow(TypeError);
    expect(() => new TaskRegistry().register(bounded(0, 0.5))).toThrow(TypeError);
    expect(() => new TaskRegistry().register({ ...noopTask, delay: { maxSeconds: 30 * 86_400 + 1 } })).toThrow(TypeError);
    expect(() => new TaskRegistry().register({ ...noopTask, delay: { maxSeconds: 0 } })).toThrow(TypeError);
    expect(() => new TaskRegistry().register({ ...noopTask, delay: { maxSeconds: 30 * 86_400 }, operationPriority: { min: -1000, max: 1000 } })).not.toThrow();
  });
});
