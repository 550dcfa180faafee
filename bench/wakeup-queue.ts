import type { WakeupMessage } from '../lib/index.js';

/**
 * The benchmark's in-memory stand-in for the SQS wake-up queue: FIFO, each message delivered to exactly one taker,
 * takers waiting (without polling) until a message arrives or their wait times out. `T` is what it carries: the
 * wake-up itself, or the SQS record that wraps it (`bench/handler-path-rig.ts`).
 */
export class WakeupQueue<T = WakeupMessage> {
  #items: T[] = [];
  #head = 0;
  readonly #waiters: ((message: T | null) => void)[] = [];

  /** Messages waiting to be taken. */
  get length(): number {
    return this.#items.length - this.#head;
  }

  /** Delivers one message to the longest-waiting taker, or keeps it for the next one. */
  push(message: T): void {
    const waiter = this.#waiters.shift();
    if (waiter) waiter(message);
    else this.#items.push(message);
  }

  /**
   * Up to `max` messages, as an SQS receive with long polling returns them to the Lambda poller: whatever is waiting,
   * at once; when nothing is, the first message to arrive within `timeoutMs` (an empty array after it).
   */
  async takeBatch(max: number, timeoutMs: number): Promise<T[]> {
    const first = await this.take(timeoutMs);
    if (first === null) return [];
    const batch: T[] = [first as T];
    while (batch.length < max && this.length > 0) batch.push((await this.take(0)) as T);
    return batch;
  }

  /** The next message, or null when none arrived within `timeoutMs`. */
  take(timeoutMs: number): Promise<T | null> {
    if (this.#head < this.#items.length) {
      const message = this.#items[this.#head++] as T;
      if (this.#head > 1024 && this.#head * 2 > this.#items.length) {
        this.#items = this.#items.slice(this.#head);
        this.#head = 0;
      }
      return Promise.resolve(message);
    }
    return new Promise((resolve) => {
      const waiter = (message: T | null) => {
        clearTimeout(timer);
        resolve(message);
      };
      const timer = setTimeout(() => {
        const at = this.#waiters.indexOf(waiter);
        if (at >= 0) this.#waiters.splice(at, 1);
        resolve(null);
      }, timeoutMs);
      this.#waiters.push(waiter);
    });
  }
}
