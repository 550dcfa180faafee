import { appendFileSync } from 'node:fs';
import type { Logger } from '../lib/logger.js';

/** A {@link Logger} that appends JSON lines to `path` (the harness keeps stdout for its summary). */
export function fileLogger(path: string): Logger {
  const write = (level: string) => (message: string, fields: Record<string, unknown> = {}) => {
    appendFileSync(path, `${JSON.stringify({ level, message, timestamp: new Date().toISOString(), ...fields })}\n`);
  };
  return { debug: write('DEBUG'), info: write('INFO'), warn: write('WARN'), error: write('ERROR') };
}
