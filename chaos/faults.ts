import { DeleteMessageCommand, ReceiveMessageCommand, SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { Connection } from 'mysql2/promise';
import type { AdmissionLoad } from './admission-load.js';
import type { WorkerFleet } from './fleet.js';
import type { MariadbInstance } from './mariadb-instance.js';
import type { Random } from './random.js';
import type { TcpProxy } from './tcp-proxy.js';

/** The kinds of fault the injector knows (as README's Reliability section lists them), in the summary's order. */
export const FAULT_KINDS = [
  'sigkill_worker',
  'kill_connection',
  'restart_mariadb',
  'drop_message',
  'duplicate_message',
  'delay_heartbeat',
  'network_partition',
  'clock_skew',
  'cancel',
  'retry',
] as const;
/** One of the {@link FAULT_KINDS}. */
export type FaultKind = (typeof FAULT_KINDS)[number];

/** What the injector needs to reach. */
export interface FaultTargets {
  readonly fleet: WorkerFleet;
  readonly mariadb: MariadbInstance;
  /** A connection to the chaos server (reopened after a restart). */
  readonly admin: () => Promise<Connection>;
  /** The chaos database's name: only its connections are killed. */
  readonly database: string;
  readonly sqs: SQSClient;
  readonly queueUrl: string;
  readonly load: AdmissionLoad;
  /** A random operation that ended failed or cancelled, for an owner retry. */
  readonly pickEnded: () => Promise<{ id: string; ownerUserId: string } | undefined>;
  readonly random: Random;
  /**
   * The chaos task's lease, in **ms**: a delayed heartbeat stalls a worker 1–11 s longer than this, so it often wakes
   * while the next attempt runs; a network partition lasts 2–5 s longer than this.
   */
  readonly leaseMs: number;
  /** Slot `i`'s worker process reaches MariaDB only through `proxies[i]`. */
  readonly proxies: readonly TcpProxy[];
  /** Told of each partition as it starts (which worker, how long), for the run's log. @default silent */
  readonly log?: (line: string) => void;
}

/**
 * Injects one fault at a time, at random, and counts those that took effect: a kind with no target at that moment (no
 * busy worker, no message in the queue, a connection that was already gone) or refused (a cancel or retry answered
 * 409) is not counted. Delayed heartbeats and clock skews are counted by the fleet when the worker reports them
 * applied. MariaDB restarts are scheduled by the caller ({@link FaultInjector.restartMariadb}), not drawn at random:
 * each takes the whole system down for seconds. So are network partitions ({@link FaultInjector.partition}), which
 * take one worker off the database for longer than a lease and run in the background.
 */
export class FaultInjector {
  readonly counts: Record<FaultKind, number> = Object.fromEntries(FAULT_KINDS.map((k) => [k, 0])) as Record<FaultKind, number>;
  /** Faults that failed to inject (e.g. the admin connection was down), by kind. */
  readonly errors: Record<string, number> = {};
  readonly #t: FaultTargets;
  /** Partitions in progress: each ends by restoring its proxy. */
  readonly #partitions = new Map<TcpProxy, { readonly heal: () => void; readonly done: Promise<void> }>();

  constructor(targets: FaultTargets) {
    this.#t = targets;
  }

  /** Draws a kind other than the scheduled ones (a MariaDB restart, a network partition) and injects it. */
  async injectRandom(): Promise<void> {
    const kind = this.#t.random.pick(FAULT_KINDS.filter((k) => k !== 'restart_mariadb' && k !== 'network_partition'));
    await this.inject(kind);
  }

  /** Injects one fault of `kind`; errors are counted, never thrown. */
  async inject(kind: FaultKind): Promise<void> {
    try {
      if (await this.#apply(kind)) this.counts[kind] += 1;
    } catch {
      this.errors[kind] = (this.errors[kind] ?? 0) + 1;
    }
  }

  /** Crashes MariaDB (SIGKILL) and starts it again. */
  restartMariadb(): Promise<void> {
    return this.inject('restart_mariadb');
  }

  /**
   * Starts a network partition between one worker process and MariaDB — a busy one if any (it holds a lease), else
   * any live one not cut already — and returns at once: its proxy is cut (every byte stops both ways; open connections
   * hang, new ones too) for the lease plus 2–5 s, so that the lease ends and the sweeper hands the operation to
   * another attempt while the worker is still cut off, then restored (the held connections reset). Counted when it
   * has lasted that long ({@link healPartitions} ends it early, uncounted).
   */
  partition(): Promise<void> {
    return this.inject('network_partition');
  }

  /** Ends every partition in progress now (their proxies restored) and waits for them. */
  async healPartitions(): Promise<void> {
    const partitions = [...this.#partitions.values()];
    for (const p of partitions) p.heal();
    await Promise.all(partitions.map((p) => p.done));
  }

  /** Cuts slot `slot`'s proxy for `ms` in the background; counts the partition if it lasted. */
  #cut(slot: number, ms: number): void {
    const proxy = this.#t.proxies[slot];
    if (!proxy) throw new RangeError(`no database proxy for worker slot ${slot}`);
    let heal = () => {};
    proxy.cut();
    this.#t.log?.(`network partition: worker-${slot} cut off from MariaDB for ${(ms / 1000).toFixed(1)} s`);
    const done = new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(true), ms);
      heal = () => {
        clearTimeout(timer);
        resolve(false);
      };
    }).then((lasted) => {
      proxy.restore();
      this.#partitions.delete(proxy);
      if (lasted) this.counts.network_partition += 1;
    });
    this.#partitions.set(proxy, { heal, done });
  }

  async #apply(kind: FaultKind): Promise<boolean> {
    const t = this.#t;
    switch (kind) {
      case 'sigkill_worker': {
        const busy = t.fleet.busySlots();
        if (busy.length === 0) return false;
        await t.fleet.kill(t.random.pick(busy));
        return true;
      }
      case 'kill_connection': {
        const admin = await t.admin();
        // Prefer a connection in the middle of a statement or a transaction; else any (an idle pooled one).
        const [rows] = await admin.query(
          `SELECT p.ID AS id, (p.COMMAND <> 'Sleep' OR t.trx_id IS NOT NULL) AS busy
             FROM information_schema.PROCESSLIST p LEFT JOIN information_schema.INNODB_TRX t ON t.trx_mysql_thread_id = p.ID
            WHERE p.DB = ? AND p.ID <> CONNECTION_ID()`,
          [t.database],
        );
        const all = rows as Array<{ id: number; busy: number }>;
        const busy = all.filter((r) => Number(r.busy) === 1);
        const target = (busy.length > 0 ? busy : all).map((r) => r.id);
        if (target.length === 0) return false;
        try {
          await admin.query(`KILL CONNECTION ${Number(t.random.pick(target))}`);
          return true;
        } catch (error) {
          if ((error as { code?: string }).code === 'ER_NO_SUCH_THREAD') return false;
          throw error;
        }
      }
      case 'restart_mariadb':
        await t.mariadb.crashAndRestart();
        return true;
      case 'drop_message':
      case 'duplicate_message': {
        const received = await t.sqs.send(new ReceiveMessageCommand({ QueueUrl: t.queueUrl, MaxNumberOfMessages: 1, WaitTimeSeconds: 0, VisibilityTimeout: 30 }));
        const message = received.Messages?.[0];
        if (!message?.ReceiptHandle || message.Body === undefined) return false;
        if (kind === 'duplicate_message') {
          await t.sqs.send(new SendMessageCommand({ QueueUrl: t.queueUrl, MessageBody: message.Body }));
          await t.sqs.send(new SendMessageCommand({ QueueUrl: t.queueUrl, MessageBody: message.Body }));
        }
        await t.sqs.send(new DeleteMessageCommand({ QueueUrl: t.queueUrl, ReceiptHandle: message.ReceiptHandle }));
        return true;
      }
      case 'delay_heartbeat': {
        const live = t.fleet.liveSlots();
        if (live.length === 0) return false;
        // Counted when the worker reports the stall (WorkerFleet.stalls), not here: it happens at its next run.
        t.fleet.send(t.random.pick(live), { type: 'stall', ms: t.leaseMs + 1_000 + t.random.int(10_000) });
        return false;
      }
      case 'network_partition': {
        const free = (slots: number[]) => slots.filter((slot) => t.proxies[slot] !== undefined && !t.proxies[slot].isCut);
        const busy = free(t.fleet.busySlots());
        const targets = busy.length > 0 ? busy : free(t.fleet.liveSlots());
        if (targets.length === 0) return false;
        // Counted when it has lasted (#cut), not here.
        this.#cut(t.random.pick(targets), t.leaseMs + 2_000 + t.random.int(3_000));
        return false;
      }
      case 'clock_skew': {
        const live = t.fleet.liveSlots();
        if (live.length === 0) return false;
        // Counted when the worker reports it applied (WorkerFleet.skews).
        t.fleet.send(t.random.pick(live), { type: 'skew', ms: (t.random.chance(0.5) ? 1 : -1) * 120_000 });
        return false;
      }
      case 'cancel': {
        const target = t.load.recent();
        if (!target) return false;
        const answer = await target.client.cancel(target.id);
        return answer.status >= 200 && answer.status < 300;
      }
      case 'retry': {
        const ended = await t.pickEnded();
        const client = ended && t.load.clientOf(ended.ownerUserId);
        if (!ended || !client) return false;
        const answer = await client.retry(ended.id);
        return answer.status >= 200 && answer.status < 300;
      }
    }
  }
}
