import { z } from 'zod';
import { StrategySnapshotSchema } from './strategy-snapshot-output.js';
import type { PublishedSnapshot } from './strategy-snapshot.js';

/**
 * `GET /api/jobs/{jobId}/strategy-snapshot` 200 body: the job id, the validated snapshot, the operation that produced it
 * and when it was first and last written (ISO-8601 UTC). No model, provider or route: provenance is operator-only.
 */
export const StrategySnapshotDtoSchema = z.strictObject({
  jobId: z.string(),
  snapshot: StrategySnapshotSchema,
  operationId: z.string(),
  createdAt: z.string(),
  updatedAt: z.string(),
}).meta({ id: 'StrategySnapshotDto' });

/** See {@link StrategySnapshotDtoSchema}. */
export type StrategySnapshotDto = z.infer<typeof StrategySnapshotDtoSchema>;

/** The DTO of a published snapshot (field for field). */
export function toStrategySnapshotDto(published: PublishedSnapshot): StrategySnapshotDto {
  return {
    jobId: published.jobId,
    snapshot: published.snapshot,
    operationId: published.operationId,
    createdAt: published.createdAt,
    updatedAt: published.updatedAt,
  };
}
