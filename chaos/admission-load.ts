import { setTimeout as delay } from 'node:timers/promises';
import { answerKey, type ApiClient } from './api-client.js';
import { CHAOS_TASK_TYPE, type ChaosParams } from './chaos-task.js';
import type { AdmittedRecord } from './history.js';
import type { Random } from './random.js';

/** What the admission load counted. */
export interface LoadCounts {
  /** Distinct idempotency keys sent. */
  keys: number;
  /** Keys sent twice at once (a double click). */
  doubleClicks: number;
  /** Keys whose admission was answered 200/201/202 with an id. */
  admitted: number;
  /** Keys refused for capacity (429), not retried. */
  refused: number;
  /** Keys never answered with an id after every retry (5xx or network errors throughout). */
  unanswered: number;
  /** Answers to admissions (`answerKey`: 5xx by exact status), e.g. `{ '2xx': 900, '503': 12, network: 3 }`. */
  answers: Record<string, number>;
}

/** Options of {@link AdmissionLoad}. */
export interface AdmissionLoadOptions {
  readonly clients: readonly ApiClient[];
  readonly random: Random;
  /** Admissions started per second across all loops. */
  readonly perSecond: number;
  /** Loops issuing admissions at once. */
  readonly concurrency: number;
  /** Prefix of every idempotency key (unique per run). */
  readonly keyPrefix: string;
}

/**
 * The client side of the chaos run: owners admitting operations through the HTTP API at a steady rate, with random
 * params (work time, failures, result objects), sometimes double-clicking (the same key sent twice at once), and
 * retrying with the **same key** whenever an answer is lost (5xx, network error) — as a well-behaved client must.
 * Every answer that names an operation is recorded for the checker.
 */
export class AdmissionLoad {
  readonly counts: LoadCounts = { keys: 0, doubleClicks: 0, admitted: 0, refused: 0, unanswered: 0, answers: {} };
  readonly admitted: AdmittedRecord[] = [];
  readonly #options: AdmissionLoadOptions;
  #stopping = false;

  constructor(options: AdmissionLoadOptions) {
    this.#options = options;
  }

  /** Runs until {@link stop}; resolves when every loop has finished its current key. */
  async run(): Promise<void> {
    const { concurrency, perSecond } = this.#options;
    const spacingMs = (1000 * concurrency) / perSecond;
    await Promise.all(
      Array.from({ length: concurrency }, async (_, loop) => {
        await delay((spacingMs * loop) / concurrency);
        while (!this.#stopping) {
          const started = Date.now();
          await this.#admitOne();
          await delay(Math.max(0, spacingMs - (Date.now() - started)));
        }
      }),
    );
  }

  /** Stops starting new keys. */
  stop(): void {
    this.#stopping = true;
  }

  /** One of the 50 operations admitted last (likely still active), with its owner's client: a cancel target. */
  recent(): { readonly id: string; readonly client: ApiClient } | undefined {
    const pool = this.admitted.slice(-50);
    if (pool.length === 0) return undefined;
    const record = pool[this.#options.random.int(pool.length)] as AdmittedRecord;
    const client = this.clientOf(record.ownerUserId);
    return client && { id: record.id, client };
  }

  /** The API client of an owner of the load. */
  clientOf(ownerUserId: string): ApiClient | undefined {
    return this.#options.clients.find((c) => c.ownerUserId === ownerUserId);
  }

  #params(): ChaosParams {
    const r = this.#options.random;
    return {
      workMs: r.chance(0.2) ? 1_000 + r.int(3_000) : 50 + r.int(700),
      failAttempts: r.chance(0.25) ? 1 + r.int(2) : 0,
      permanentFailure: r.chance(0.04),
      writeResult: r.chance(0.2),
    };
  }

  async #admitOne(): Promise<void> {
    const r = this.#options.random;
    const client = this.#options.clients[r.int(this.#options.clients.length)] as ApiClient;
    const key = `${this.#options.keyPrefix}-${this.counts.keys++}`;
    const body = { taskType: CHAOS_TASK_TYPE, subject: { type: 'chaos', id: `s-${r.int(1000)}` }, params: this.#params() };
    const double = r.chance(0.1);
    if (double) this.counts.doubleClicks += 1;
    for (let attempt = 0; attempt < 20 && !this.#stopping; attempt++) {
      const answers = await Promise.all(double && attempt === 0 ? [client.admit(key, body), client.admit(key, body)] : [client.admit(key, body)]);
      let named = false;
      for (const answer of answers) {
        this.counts.answers[answerKey(answer.status)] = (this.counts.answers[answerKey(answer.status)] ?? 0) + 1;
        const id = answer.status >= 200 && answer.status < 300 ? answer.body?.id : undefined;
        if (typeof id === 'string') {
          this.admitted.push({ ownerUserId: client.ownerUserId, key, id });
          named = true;
        }
      }
      if (named) {
        this.counts.admitted += 1;
        return;
      }
      if (answers.every((a) => a.status === 429)) {
        this.counts.refused += 1;
        return;
      }
      if (answers.some((a) => a.status >= 400 && a.status < 500 && a.status !== 409 && a.status !== 429)) {
        // A 4xx other than a concurrent duplicate (409) is the harness's own bug: stop retrying this key.
        this.counts.unanswered += 1;
        return;
      }
      await delay(200 * Math.min(10, attempt + 1));
    }
    this.counts.unanswered += 1;
  }
}
