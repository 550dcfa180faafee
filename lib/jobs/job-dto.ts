import { z } from 'zod';
import { parseDbTime } from '../db/db-time.js';
import type { JobRow } from './job.repository.js';

/**
 * A job as the owner API shows it (`POST /api/jobs`, `GET /api/jobs/{jobId}`) — exactly these fields: the id, the
 * owner's own text, and ISO-8601 UTC timestamps (millisecond precision). The owner id is implied by the token and
 * never shown.
 */
export const JobDtoSchema = z.strictObject({
  id: z.string(),
  title: z.string(),
  company: z.string(),
  description: z.string(),
  createdAt: z.string().datetime(),
  updatedAt: z.string().datetime(),
}).meta({ id: 'JobDto' });

/** See {@link JobDtoSchema}. */
export type JobDto = z.infer<typeof JobDtoSchema>;

/** The URL of a job, `/api/jobs/{id}` (the `Location` of a created job). */
export function jobUrlOf(jobId: string): string {
  return `/api/jobs/${jobId}`;
}

/** Maps a row to its {@link JobDto}; only allow-listed fields are copied. */
export function toJobDto(row: JobRow): JobDto {
  return {
    id: row.id,
    title: row.title,
    company: row.company,
    description: row.description,
    createdAt: parseDbTime(row.created_at).toISOString(),
    updatedAt: parseDbTime(row.updated_at).toISOString(),
  };
}
