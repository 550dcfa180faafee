import { z } from 'zod';
import { ValidationError } from '../errors.js';

const CursorSchema = z.tuple([
  z.string().regex(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(\.\d{1,6})?$/),
  z.string().regex(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/),
  z.number().int().min(0).max(100_000).optional(),
]);

/** A keyset position: the last row shown (created_at as stored, id, and for notifications the cycle). */
export interface CursorPosition {
  readonly createdAt: string;
  readonly id: string;
  readonly cycle?: number | undefined;
}

/** Encodes a keyset position as an opaque base64url cursor (clients must not parse it). */
export function encodeCursor(position: CursorPosition): string {
  const tuple = position.cycle === undefined ? [position.createdAt, position.id] : [position.createdAt, position.id, position.cycle];
  return Buffer.from(JSON.stringify(tuple), 'utf8').toString('base64url');
}

/**
 * Decodes a cursor made by {@link encodeCursor}.
 * @throws {ValidationError} for anything else.
 */
export function decodeCursor(cursor: string): CursorPosition {
  try {
    if (cursor.length > 200) throw new Error('too long');
    const [createdAt, id, cycle] = CursorSchema.parse(JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')));
    return { createdAt, id, cycle };
  } catch {
    throw new ValidationError('The cursor is not valid.', [{ path: 'cursor', message: 'not a cursor from a previous page' }]);
  }
}
