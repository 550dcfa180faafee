import { setImmediate as nextTurn } from 'node:timers/promises';

/**
 * What `together` answers for an item it left out of its transaction (say, a row another transaction holds): the item
 * is then committed `alone`, after the group.
 */
export const GO_ALONE: unique symbol = Symbol('GO_ALONE');

/** One submitted item and its caller's promise. */
interface Waiting<T, R> {
  readonly item: T;
  readonly resolve: (result: R) => void;
  readonly reject: (error: unknown) => void;
}

/**
 * Group commit: items submitted in the same event-loop turn, or while a previous group is still being committed, go
 * together in one transaction (up to `maxGroup` of them) — so under load N writes share one transaction, one round
 * trip per statement and one log flush. A group starts one turn (`setImmediate`) after the first item that found no
 * group running, so the records of one SQS batch, handled concurrently, start as one group rather than one alone and
 * the rest after it. A lone item waits only that turn, never for company — unless `maxConcurrent` groups are already
 * committing, when it waits for one of them to end, like any other item.
 *
 * ```
 *   submit(a), submit(b) ─ one turn ─ together([a, b]) ──────┐ submit(c), submit(d) arrive meanwhile
 *                                                            └─ together([c, d]) ── ok: both resolve
 *                                                                               └─ throws: alone(c), alone(d), each
 *                                                                                  with its own outcome
 * ```
 * `together` must be all-or-nothing (one transaction that throws when any item cannot go as the others do) and
 * answers one result per item, in order — or {@link GO_ALONE} for an item it left out, which then goes `alone`; when
 * it throws, for any reason, every item of the group is retried with `alone`, and each caller gets the outcome of its
 * own item. So a caller sees what `alone(item)` would have given it.
 * At most `maxConcurrent` groups are being committed at a time per instance (default 1). The same holds for reads:
 * `together` may be one statement reading for every item.
 */
export class GroupCommit<T, R = void> {
  readonly #together: (items: readonly T[]) => Promise<readonly (R | typeof GO_ALONE)[]>;
  readonly #alone: (item: T) => Promise<R>;
  readonly #maxGroup: number;
  readonly #maxConcurrent: number;
  #queue: Waiting<T, R>[] = [];
  #draining = 0;

  /**
   * @param together commits a group of two or more items in one transaction and answers each item's result (or
   * {@link GO_ALONE}), in order, or throws having changed nothing.
   * @param alone commits one item; its result (or error) is the caller's.
   * @param options `maxGroup`: most items per group (default 32); `maxConcurrent`: most groups being committed at
   * once (default 1) — more lets an item that arrives while a slow group commits start at once, at the price of
   * smaller groups.
   */
  constructor(
    together: (items: readonly T[]) => Promise<readonly (R | typeof GO_ALONE)[]>,
    alone: (item: T) => Promise<R>,
    options: { readonly maxGroup?: number; readonly maxConcurrent?: number } = {},
  ) {
    this.#together = together;
    this.#alone = alone;
    this.#maxGroup = Math.max(1, options.maxGroup ?? 32);
    this.#maxConcurrent = Math.max(1, options.maxConcurrent ?? 1);
  }

  /** Commits `item`, alone or with others; settles once it is committed, with its result or `alone`'s error. */
  submit(item: T): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.#queue.push({ item, resolve, reject });
      if (this.#draining < this.#maxConcurrent) void this.#drain();
    });
  }

  async #drain(): Promise<void> {
    this.#draining++;
    try {
      // Company submitted in this same turn (the other records of an SQS batch) joins the first group. From
      // `node:timers/promises`, not the global: fake timers in a user's tests replace the global, which would stall
      // every claim and completion.
      await nextTurn();
      while (this.#queue.length > 0) await this.#commit(this.#queue.splice(0, this.#maxGroup));
    } finally {
      this.#draining--;
    }
  }

  async #commit(group: readonly Waiting<T, R>[]): Promise<void> {
    let alone = group;
    if (group.length > 1) {
      let results: readonly (R | typeof GO_ALONE)[] | undefined;
      try {
        results = await this.#together(group.map((waiting) => waiting.item));
      } catch {
        // Some item cannot go as the others do (or the group failed as a whole): each goes alone, below.
      }
      if (results) {
        alone = [];
        group.forEach((waiting, i) => {
          const result = results[i] as R | typeof GO_ALONE;
          if (result === GO_ALONE) (alone as Waiting<T, R>[]).push(waiting);
          else waiting.resolve(result);
        });
      }
    }
    await Promise.all(
      alone.map(async (waiting) => {
        try {
          waiting.resolve(await this.#alone(waiting.item));
        } catch (error) {
          waiting.reject(error);
        }
      }),
    );
  }
}
