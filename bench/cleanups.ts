/**
 * Where a phase registers the undo of what it changed outside its own process — a database to drop, a schema, Redis
 * settings to restore — while that change is in force, so an interrupted run (SIGINT/SIGTERM) can still undo it. A
 * `Map<string, () => Promise<void>>` is one.
 */
export interface Cleanups {
  set(name: string, cleanup: () => Promise<void>): unknown;
  delete(name: string): unknown;
}

/** Registers nothing (when no one is listening for signals). */
export const noCleanups: Cleanups = Object.freeze({ set: () => undefined, delete: () => undefined });

/** Whether process `pid` exists on this machine: a run whose process is gone left its databases, schemas or keys behind. */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
