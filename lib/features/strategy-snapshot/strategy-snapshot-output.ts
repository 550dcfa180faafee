import { z } from 'zod';

/** The note kind a strategy snapshot is stored under: one note per owner + job + kind (DESIGN §7 feature producers). */
export const STRATEGY_SNAPSHOT_NOTE_KIND = 'strategy_snapshot';

const point = z.string().trim().min(1).max(240);

/**
 * What the model must answer for `strategy.snapshot`, validated in full before anything is published (DESIGN §5):
 * a summary of how to approach the job (≤ 800 characters) and bounded lists of strengths to lead with, gaps or risks to
 * prepare for, questions to ask and next steps (each item ≤ 240 characters). Strict: an answer with any other key is
 * invalid output.
 */
export const StrategySnapshotSchema = z.strictObject({
  summary: z.string().trim().min(1).max(800),
  strengths: z.array(point).min(1).max(5),
  risks: z.array(point).max(5),
  questionsToAsk: z.array(point).max(5),
  nextSteps: z.array(point).min(1).max(5),
});

/** See {@link StrategySnapshotSchema}. */
export type StrategySnapshot = z.infer<typeof StrategySnapshotSchema>;
