import { describe, expect, it, vi } from 'vitest';
import { GO_ALONE, GroupCommit } from '../../lib/db/group-commit.js';

/** One turn of the event loop: what a group waits for company before it starts. */
const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** A GroupCommit whose commits are recorded and held open until the test lets them finish. */
function recorder(
  options: { failTogetherWhen?: (items: readonly string[]) => boolean; failAlone?: string; leaveOut?: string; maxGroup?: number; maxConcurrent?: number } = {},
) {
  const commits: { kind: 'together' | 'alone'; items: readonly string[] }[] = [];
  const open: (() => void)[] = [];
  const hold = () => new Promise<void>((resolve) => open.push(resolve));
  const group = new GroupCommit<string, string>(
    async (items) => {
      commits.push({ kind: 'together', items });
      await hold();
      if (options.failTogetherWhen?.(items)) throw new Error('group refused');
      return items.map((item) => (item === options.leaveOut ? GO_ALONE : `${item}+`));
    },
    async (item) => {
      commits.push({ kind: 'alone', items: [item] });
      await hold();
      if (item === options.failAlone) throw new Error(`${item} failed`);
      return `${item}!`;
    },
    { maxGroup: options.maxGroup, maxConcurrent: options.maxConcurrent },
  );
  const releaseAll = async () => {
    await turn();
    while (open.length > 0) {
      for (const release of open.splice(0)) release();
      await turn();
    }
  };
  return { group, commits, releaseAll };
}

describe('GroupCommit', () => {
  it('a lone item is committed alone within one event-loop turn, waiting for no company', async () => {
    const { group, commits, releaseAll } = recorder();
    const done = group.submit('a');
    await turn();
    expect(commits).toEqual([{ kind: 'alone', items: ['a'] }]);
    await releaseAll();
    await expect(done).resolves.toBe('a!');
  });

  it('fake timers in the caller\'s tests do not stall a commit (the turn is node:timers\', not the global setImmediate)', async () => {
    vi.useFakeTimers();
    try {
      const group = new GroupCommit<string, string>(
        async (items) => items.map((item) => `${item}+`),
        async (item) => `${item}!`,
      );
      await expect(group.submit('a')).resolves.toBe('a!');
    } finally {
      vi.useRealTimers();
    }
  });

  it('items submitted in the same turn (the records of one SQS batch) start as one group, each resolving with its own result', async () => {
    const { group, commits, releaseAll } = recorder();
    const all = ['a', 'b', 'c'].map((item) => group.submit(item));
    await releaseAll();
    expect(await Promise.all(all)).toEqual(['a+', 'b+', 'c+']);
    expect(commits).toEqual([{ kind: 'together', items: ['a', 'b', 'c'] }]);
  });

  it('items submitted while a commit runs go together in the next one', async () => {
    const { group, commits, releaseAll } = recorder();
    const first = group.submit('a');
    await turn();
    const rest = ['b', 'c', 'd'].map((item) => group.submit(item));
    await releaseAll();
    expect(await Promise.all([first, ...rest])).toEqual(['a!', 'b+', 'c+', 'd+']);
    expect(commits).toEqual([
      { kind: 'alone', items: ['a'] },
      { kind: 'together', items: ['b', 'c', 'd'] },
    ]);
  });

  it('a group that throws is retried item by item, and each caller gets its own item’s outcome', async () => {
    const { group, commits, releaseAll } = recorder({ failTogetherWhen: (items) => items.includes('c'), failAlone: 'c' });
    const outcomes = ['a', 'b', 'c', 'd'].map((item) => group.submit(item).catch((error: Error) => error.message));
    await releaseAll();
    expect(await Promise.all(outcomes)).toEqual(['a!', 'b!', 'c failed', 'd!']);
    expect(commits.map((c) => `${c.kind}:${c.items.join('')}`)).toEqual(['together:abcd', 'alone:a', 'alone:b', 'alone:c', 'alone:d']);
  });

  it('a group holds at most maxGroup items; the rest wait for the next', async () => {
    const { group, commits, releaseAll } = recorder({ maxGroup: 2 });
    const all = ['a', 'b', 'c', 'd', 'e'].map((item) => group.submit(item));
    await releaseAll();
    await Promise.all(all);
    expect(commits.map((c) => c.items.join(''))).toEqual(['ab', 'cd', 'e']);
  });

  it('with maxConcurrent 2, a second group starts beside a first still committing; later items wait for one of them', async () => {
    const { group, commits, releaseAll } = recorder({ maxConcurrent: 2, maxGroup: 2 });
    const all = ['a', 'b', 'c', 'd', 'e', 'f'].map((item) => group.submit(item));
    await turn();
    expect(commits.map((c) => c.items.join(''))).toEqual(['ab', 'cd']);
    await releaseAll();
    await Promise.all(all);
    expect(commits.map((c) => c.items.join(''))).toEqual(['ab', 'cd', 'ef']);
  });

  it('an item the group leaves out (GO_ALONE) is committed alone after it; the others keep the group\'s results', async () => {
    const { group, commits, releaseAll } = recorder({ leaveOut: 'c' });
    const all = ['a', 'b', 'c', 'd'].map((item) => group.submit(item));
    await releaseAll();
    expect(await Promise.all(all)).toEqual(['a+', 'b+', 'c!', 'd+']);
    expect(commits.map((c) => `${c.kind}:${c.items.join('')}`)).toEqual(['together:abcd', 'alone:c']);
  });
});
