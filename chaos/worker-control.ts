import { z } from 'zod';

/** What the fault injector may tell a worker process over IPC. Times in **ms**. */
export const WorkerControlSchema = z.discriminatedUnion('type', [
  /** Run the process's clock this far ahead (positive) or behind (negative) the real one. */
  z.object({ type: z.literal('skew'), ms: z.number().int().min(-3_600_000).max(3_600_000) }),
  /** Block the whole process this long at the start of its next run (no heartbeats meanwhile). */
  z.object({ type: z.literal('stall'), ms: z.number().int().min(0).max(120_000) }),
  /** Stop polling, let in-flight runs finish, exit 0. */
  z.object({ type: z.literal('stop') }),
]);
/** See {@link WorkerControlSchema}. */
export type WorkerControl = z.infer<typeof WorkerControlSchema>;

/** @throws {z.ZodError} for anything but a {@link WorkerControl}. */
export function parseControl(raw: unknown): WorkerControl {
  return WorkerControlSchema.parse(raw);
}

/**
 * What a worker process reports to the harness: it is polling; a run started (+1) or ended (−1); a run began with the
 * stall it was told; its clock is skewed as it was told.
 */
export type WorkerReport =
  | { readonly type: 'ready' }
  | { readonly type: 'stalled' }
  | { readonly type: 'skewed' }
  | { readonly type: 'running'; readonly delta: 1 | -1 };
