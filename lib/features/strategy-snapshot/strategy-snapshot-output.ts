import { z } from 'zod';
import { isWellFormedText } from '../../jobs/job-limits.js';

/** The note kind a strategy snapshot is stored under: one note per owner + job + kind (`ai_workspace_notes_kind_uq`). */
export const STRATEGY_SNAPSHOT_NOTE_KIND = 'strategy_snapshot';

/** Model text: trimmed, bounded, and well-formed Unicode (a lone surrogate could not be served as valid JSON text). */
const text = (max: number) => z.string().trim().min(1).max(max).refine(isWellFormedText, 'must be well-formed Unicode text');
const point = text(240);

/**
 * What the model must answer for `strategy.snapshot`, validated in full before anything is published (docs/design.md §5):
 * a summary of how to approach the job (≤ 800 characters) and bounded lists of strengths to lead with, gaps or risks to
 * prepare for, questions to ask and next steps (each item ≤ 240 characters), all well-formed Unicode. Strict: an answer
 * with any other key is invalid output.
 */
export const StrategySnapshotSchema = z.strictObject({
  summary: text(800),
  strengths: z.array(point).min(1).max(5),
  risks: z.array(point).max(5),
  questionsToAsk: z.array(point).max(5),
  nextSteps: z.array(point).min(1).max(5),
});

/** See {@link StrategySnapshotSchema}. */
export type StrategySnapshot = z.infer<typeof StrategySnapshotSchema>;
