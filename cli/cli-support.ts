import { ValidationError } from '../lib/errors.js';

/**
 * One `durable-ops` subcommand: its name, a one-line summary and usage text, and `run`, which gets the arguments after
 * the name and resolves to the process exit code — 0 done, 1 failed (a database, configuration or AWS failure, or what
 * the command defines), 2 bad arguments (printed with the usage text before anything is opened).
 */
export interface CliCommand {
  readonly name: string;
  readonly summary: string;
  readonly usage: string;
  run(args: readonly string[]): Promise<number>;
}

/** Thrown by a command's argument parser for arguments it cannot accept: answered with exit code 2 and the usage. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

/**
 * Parses `args` with `parse`; on any failure prints what is wrong and `usage` to stderr and returns `undefined` (the
 * caller exits 2), before anything is opened.
 */
export function parseArguments<T>(parse: (args: readonly string[]) => T, args: readonly string[], usage: string): T | undefined {
  try {
    return parse(args);
  } catch (error) {
    const detail = error instanceof ValidationError ? error.issues.map((issue) => `${issue.path}: ${issue.message}`).join('; ') : (error as Error).message;
    process.stderr.write(`${detail}\n${usage}\n`);
    return undefined;
  }
}

/** Runs `work`; a thrown error is printed as `<what> failed: <message>` (plus `hint`) and becomes exit code 1. */
export async function reportFailure(what: string, work: () => Promise<number>, hint = ''): Promise<number> {
  try {
    return await work();
  } catch (error) {
    process.stderr.write(`${what} failed: ${error instanceof Error ? error.message : String(error)}\n${hint ? `${hint}\n` : ''}`);
    return 1;
  }
}

/** The hint printed after a database failure of a command that never migrates. */
export const MIGRATE_HINT = '(Is DATABASE_URL set and migrated? See durable-ops migrate.)';

/** Writes one line to stdout. */
export function print(text: string): void {
  process.stdout.write(`${text}\n`);
}

/** Left-aligned columns, two spaces apart, with a header row: the human-readable output of every list. */
export function table(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((cell, i) => Math.max(cell.length, ...rows.map((row) => (row[i] ?? '').length)));
  return [header, ...rows].map((row) => row.map((cell, i) => cell.padEnd(widths[i] ?? 0)).join('  ').trimEnd()).join('\n');
}
