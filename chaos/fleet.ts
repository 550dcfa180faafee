import { fork, type ChildProcess } from 'node:child_process';
import { openSync, closeSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { WorkerControl, WorkerReport } from './worker-control.js';

const WORKER_SCRIPT = fileURLToPath(new URL('./worker-process.ts', import.meta.url));

interface Slot {
  readonly index: number;
  incarnation: number;
  child?: ChildProcess;
  running: number;
  ready: boolean;
  /** Set while the harness itself kills or stops the process, so its exit is not counted as a crash. */
  exitExpected: boolean;
}

/** Options of {@link WorkerFleet}. */
export interface FleetOptions {
  readonly size: number;
  /** Environment of every worker process (configuration: database, queue, bucket, lease…). */
  readonly env: Readonly<Record<string, string>>;
  /** Environment of slot `index`'s process over {@link FleetOptions.env} (its own database proxy). @default none */
  readonly slotEnv?: (index: number) => Readonly<Record<string, string>>;
  /** Directory for each process's log file (`worker-<slot>.log`, appended across incarnations). */
  readonly logDir: string;
}

/**
 * The chaos worker processes (`worker-process.ts`), one per slot: started, SIGKILLed and restarted by the fault
 * injector ({@link WorkerFleet.kill}), told to skew their clock or stall, and stopped gracefully at the end. A process
 * that exits on its own is a crash of the code under test: it is counted ({@link WorkerFleet.unexpectedExits}) and
 * restarted.
 */
export class WorkerFleet {
  /** Runs that began with a stall the injector asked for (delayed heartbeats that happened). */
  stalls = 0;
  /** Clock skews a worker applied. */
  skews = 0;
  /** Worker processes that exited without being told to (each restarted): a crash of the code under test. */
  unexpectedExits = 0;
  #stopping = false;
  readonly #slots: Slot[];
  readonly #options: FleetOptions;

  constructor(options: FleetOptions) {
    this.#options = options;
    this.#slots = Array.from({ length: options.size }, (_, index) => ({ index, incarnation: 0, running: 0, ready: false, exitExpected: false }));
  }

  /** Starts every slot's process and waits until each is polling. */
  async start(): Promise<void> {
    await Promise.all(this.#slots.map((slot) => this.#spawn(slot)));
  }

  /** Slots whose process is running at least one operation right now. */
  busySlots(): number[] {
    return this.#slots.filter((s) => s.ready && s.running > 0).map((s) => s.index);
  }

  /** Slots whose process is up. */
  liveSlots(): number[] {
    return this.#slots.filter((s) => s.ready).map((s) => s.index);
  }

  /** SIGKILLs slot `index`'s process (no cleanup: leases, connections and SQS receipts are left behind) and restarts it. */
  async kill(index: number): Promise<void> {
    const slot = this.#slot(index);
    const child = slot.child;
    slot.ready = false;
    slot.exitExpected = true;
    if (child && child.exitCode === null && child.signalCode === null) {
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      child.kill('SIGKILL');
      await exited;
    }
    await this.#spawn(slot);
  }

  /** Sends a control message to slot `index` (ignored when its process is down). */
  send(index: number, control: WorkerControl): void {
    const slot = this.#slot(index);
    if (slot.ready && slot.child?.connected) slot.child.send(control);
  }

  /** Stops every process gracefully (in-flight runs finish), SIGKILLing any still up after `graceMs`. */
  async stop(graceMs = 30_000): Promise<void> {
    this.#stopping = true;
    await Promise.all(
      this.#slots.map(async (slot) => {
        const child = slot.child;
        slot.ready = false;
        slot.exitExpected = true;
        if (!child || child.exitCode !== null || child.signalCode !== null) return;
        const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
        if (child.connected) child.send({ type: 'stop' } satisfies WorkerControl);
        const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
        await exited;
        clearTimeout(timer);
      }),
    );
  }

  #slot(index: number): Slot {
    const slot = this.#slots[index];
    if (!slot) throw new RangeError(`no worker slot ${index}`);
    return slot;
  }

  #spawn(slot: Slot): Promise<void> {
    slot.incarnation += 1;
    slot.running = 0;
    slot.exitExpected = false;
    const log = openSync(join(this.#options.logDir, `worker-${slot.index}.log`), 'a');
    const child = fork(WORKER_SCRIPT, [], {
      env: { ...process.env, ...this.#options.env, ...this.#options.slotEnv?.(slot.index), CHAOS_WORKER: `worker-${slot.index}#${slot.incarnation}` },
      execArgv: ['--import', 'tsx'],
      stdio: ['ignore', log, log, 'ipc'],
    });
    closeSync(log);
    slot.child = child;
    return new Promise<void>((resolve, reject) => {
      let started = false;
      child.once('exit', (code, signal) => {
        if (slot.child !== child) return;
        slot.ready = false;
        if (!started) reject(new Error(`worker-${slot.index} exited during start (${code ?? signal})`));
        else if (!slot.exitExpected && !this.#stopping) {
          this.unexpectedExits += 1;
          void this.#spawn(slot).catch(() => undefined);
        }
      });
      child.on('message', (message: WorkerReport) => {
        if (slot.child !== child) return;
        if (message.type === 'ready') {
          slot.ready = true;
          started = true;
          resolve();
        } else if (message.type === 'stalled') this.stalls += 1;
        else if (message.type === 'skewed') this.skews += 1;
        else slot.running = Math.max(0, slot.running + message.delta);
      });
    });
  }
}
