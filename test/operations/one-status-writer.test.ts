import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const LIB = path.resolve(import.meta.dirname, '../../lib');
const REPOSITORY = 'operations/lifecycle/lifecycle.repository.ts';
const TRANSITIONS = 'operations/lifecycle/transitions.ts';

/** Source text without its comments (TSDoc may name the statements it describes). */
const code = (text: string) => text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`])\/\/.*$/gm, '$1');

/** Every `.ts` file under lib/, as a path relative to lib/ and its code. */
function libFiles(dir = LIB): { file: string; text: string }[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return libFiles(full);
    return entry.name.endsWith('.ts') ? [{ file: path.relative(LIB, full), text: code(readFileSync(full, 'utf8')) }] : [];
  });
}

describe('one place writes an operation status', () => {
  const files = libFiles();

  it('every INSERT and UPDATE of operations is in lifecycle.repository.ts', () => {
    const writers = files.filter(({ text }) => /(updateTable|insertInto)\(\s*'operations'\s*\)|\b(UPDATE|INSERT INTO)\s+operations\b/.test(text)).map(({ file }) => file);
    expect(writers).toEqual([REPOSITORY]);
  });

  it('only transitions.ts calls the statements that set a status', () => {
    const statusWrites = /\b(insertQueued|markClaimed|updateStatus)\b/;
    const callers = files.filter(({ file, text }) => file !== REPOSITORY && statusWrites.test(text)).map(({ file }) => file);
    expect(callers).toEqual([TRANSITIONS]);
  });
});
