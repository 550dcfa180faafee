import { describe, expect, it } from 'vitest';
import { appendModelAttempt, MODEL_ATTEMPTS_KEPT, MODEL_ATTEMPTS_MAX_CHARS, parseModelAttempts, type ModelAttempt } from '../../lib/ai/model-provenance.js';

const entry = (attempt: number, model = 'm'): ModelAttempt => ({ attempt, route: 'local', provider: 'http', model, outcome: 'ok' });

describe('model provenance', () => {
  it('keeps the newest entries, at most 8, in order', () => {
    let stored: string | null = null;
    for (let i = 1; i <= 12; i++) stored = appendModelAttempt(stored, entry(i));
    expect(parseModelAttempts(stored).map((a) => a.attempt)).toEqual([5, 6, 7, 8, 9, 10, 11, 12]);
    expect(MODEL_ATTEMPTS_KEPT).toBe(8);
  });

  it('always fits the column, dropping the oldest entries when long model names would overflow it', () => {
    let stored: string | null = null;
    for (let i = 1; i <= 10; i++) stored = appendModelAttempt(stored, { ...entry(i, 'x'.repeat(64)), route: 'external', provider: 'lambda', outcome: 'response_too_large' });
    expect(stored?.length).toBeLessThanOrEqual(MODEL_ATTEMPTS_MAX_CHARS);
    expect(parseModelAttempts(stored).at(-1)?.attempt).toBe(10);
  });

  it('refuses a malformed entry (a model name over 64 characters, an outcome that is not a bounded code)', () => {
    expect(() => appendModelAttempt(null, entry(1, 'x'.repeat(65)))).toThrow();
    expect(() => appendModelAttempt(null, { ...entry(1), outcome: 'Something bad: with text' })).toThrow();
  });

  it('reads an unreadable stored value as empty (evidence, never an input)', () => {
    expect(parseModelAttempts('not json')).toEqual([]);
    expect(parseModelAttempts('[{"attempt":"x"}]')).toEqual([]);
    expect(parseModelAttempts(null)).toEqual([]);
  });
});
