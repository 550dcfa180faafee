import { randomUUID } from 'node:crypto';
import type { Selectable } from 'kysely';
import type { AiWorkspaceNotesTable, DbContext, TxContext } from '../db/database.js';

/**
 * SQL for the `ai_workspace_notes` table. Every query filters by `owner_user_id` (docs/design.md §3), and a note is
 * written only for a job its owner holds. One note per (owner, job, note kind): the unique constraint
 * `ai_workspace_notes_kind_uq` makes a second one impossible.
 */

/** A row of `ai_workspace_notes` as read. */
export type WorkspaceNoteRow = Selectable<AiWorkspaceNotesTable>;

/**
 * What {@link upsertNote} writes. `contentJson` is JSON text of at most `JobLimits.noteContentJson` characters and
 * `noteKind` at most `JobLimits.noteKind` (the caller validates: the schema refuses longer ones with a driver error);
 * `operationId` is the operation that produced the note.
 */
export interface NoteWrite {
  readonly ownerUserId: string;
  readonly jobId: string;
  readonly noteKind: string;
  readonly contentJson: string;
  readonly operationId: string;
}

/**
 * What {@link upsertNote} did: `inserted` the owner's first note of this kind for the job; `replaced` the content and
 * producing operation of the existing one (its `id` and `created_at` stay); `job_not_found` wrote nothing, because the
 * job does not exist or is another owner's.
 */
export type NoteUpsertOutcome = 'inserted' | 'replaced' | 'job_not_found';

/** The owner's note of `noteKind` for job `jobId`, if any (another owner's note is `undefined`, like a missing one). */
export async function findNote(ctx: DbContext, ownerUserId: string, jobId: string, noteKind: string): Promise<WorkspaceNoteRow | undefined> {
  return ctx.db
    .selectFrom('ai_workspace_notes')
    .selectAll()
    .where('owner_user_id', '=', ownerUserId)
    .where('job_id', '=', jobId)
    .where('note_kind', '=', noteKind)
    .executeTakeFirst();
}

/**
 * Writes the owner's note of `noteKind` for a job, replacing the one there is: an UPDATE by (owner, job, kind), then —
 * when it matched nothing — an `INSERT … SELECT` from the owner's job row, so no note is ever written for a job that is
 * missing or another owner's. Portable: the same two statements on MariaDB and SQLite, no dialect upsert syntax.
 *
 * Call it inside the caller's transaction, after `lockOwnedJob` (`job.repository.ts`) on the job: the lock makes concurrent writers of
 * the same job take turns, so the second one's UPDATE sees the first one's committed row. Without the lock, two first
 * writes racing both find nothing to update and the unique constraint fails the second INSERT with the driver's
 * duplicate-key error — never a second note.
 * @returns what was written ({@link NoteUpsertOutcome}).
 */
export async function upsertNote(tx: TxContext, note: NoteWrite): Promise<NoteUpsertOutcome> {
  const updated = await tx.db
    .updateTable('ai_workspace_notes')
    .set({ content_json: note.contentJson, operation_id: note.operationId, updated_at: tx.timeAt() })
    .where('owner_user_id', '=', note.ownerUserId)
    .where('job_id', '=', note.jobId)
    .where('note_kind', '=', note.noteKind)
    .executeTakeFirst();
  if (Number(updated.numUpdatedRows) > 0) return 'replaced';
  const now = tx.timeAt();
  const inserted = await tx.db
    .insertInto('ai_workspace_notes')
    .columns(['id', 'owner_user_id', 'job_id', 'note_kind', 'content_json', 'operation_id', 'created_at', 'updated_at'])
    .expression((eb) =>
      eb
        .selectFrom('jobs')
        .select((s) => [
          s.val(randomUUID()).as('id'),
          'jobs.owner_user_id',
          'jobs.id',
          s.val(note.noteKind).as('note_kind'),
          s.val(note.contentJson).as('content_json'),
          s.val(note.operationId).as('operation_id'),
          now.as('created_at'),
          now.as('updated_at'),
        ])
        .where('jobs.id', '=', note.jobId)
        .where('jobs.owner_user_id', '=', note.ownerUserId),
    )
    .executeTakeFirst();
  return Number(inserted.numInsertedOrUpdatedRows ?? 0) > 0 ? 'inserted' : 'job_not_found';
}
