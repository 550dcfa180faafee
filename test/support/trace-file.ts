import { existsSync, readFileSync } from 'node:fs';
import type { TraceFileLine } from '../../lib/tracing/file-span-exporter.js';

/** Every span the trace file at `path` holds so far (none when it does not exist yet). */
export function readTraceFile(path: string): TraceFileLine[] {
  if (!existsSync(path)) return [];
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as TraceFileLine);
}

/** The one span of `spans` that matches, or an error naming what was looked for and what there is. */
export function onlySpan(spans: readonly TraceFileLine[], match: (span: TraceFileLine) => boolean, what: string): TraceFileLine {
  const found = spans.filter(match);
  if (found.length !== 1) throw new Error(`expected one ${what}, found ${found.length} among: ${spans.map((s) => s.name).join(', ')}`);
  return found[0] as TraceFileLine;
}

/** Every attribute value of every span, as strings: what a secret must not appear in. */
export function attributeValues(spans: readonly TraceFileLine[]): string[] {
  return spans.flatMap((span) => Object.values(span.attributes).flatMap((value) => (Array.isArray(value) ? value.map(String) : [String(value)])));
}
