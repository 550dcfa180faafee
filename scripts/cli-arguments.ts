import { ValidationError } from '../lib/errors.js';

/**
 * Parses a CLI's arguments with `parse`; on any failure prints what is wrong and the usage text to stderr and exits
 * with code 2 (usage error), before anything is opened.
 */
export function parseArgumentsOrExit<T>(parse: (args: readonly string[]) => T, usage: string): T {
  try {
    return parse(process.argv.slice(2));
  } catch (error) {
    const detail = error instanceof ValidationError ? error.issues.map((issue) => `${issue.path}: ${issue.message}`).join('; ') : (error as Error).message;
    process.stderr.write(`${detail}\n${usage}\n`);
    process.exit(2);
  }
}
