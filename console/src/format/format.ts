/**
 * A time as the console shows it: UTC, to the second (`2026-11-01 12:00:05Z`) — the API's clock, the same in every
 * operator's browser. `null` reads as an en dash.
 */
export function formatTime(iso: string | null | undefined): string {
  if (!iso) return '–';
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : `${date.toISOString().slice(0, 19).replace('T', ' ')}Z`;
}

/** The `HH:MM` (UTC) of a time, for chart axes. */
export function formatMinute(iso: string): string {
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : date.toISOString().slice(11, 16);
}

/** A duration between two times, e.g. `1.2 s` or `350 ms`; an en dash when either is missing. */
export function formatDuration(fromIso: string | null, toIso: string | null): string {
  if (!fromIso || !toIso) return '–';
  const ms = new Date(toIso).getTime() - new Date(fromIso).getTime();
  if (!Number.isFinite(ms)) return '–';
  return ms < 1000 ? `${Math.max(0, ms)} ms` : `${(ms / 1000).toFixed(1)} s`;
}

/** A state or code (`waiting_for_retry`) as words (`waiting for retry`). */
export function humanize(value: string): string {
  return value.replace(/_/g, ' ');
}

/**
 * The last 8 characters of an id, for tables; the full id stays in the link and its title. The last, not the first:
 * an operation id is a UUIDv7, whose first 8 hex digits are the same for every id made in the same ~65 s.
 */
export function shortId(id: string): string {
  return id.length > 8 ? id.slice(-8) : id;
}

/**
 * Who asked for a cancel, in words: the owner, an operator (by their `sub`) or the CLI (by OS user and host); cancels
 * recorded before the actor was are "not recorded".
 */
export function cancellerText(by: string | null): string {
  if (by === null) return 'not recorded';
  if (by === 'owner') return 'the owner';
  if (by.startsWith('operator:')) return `operator ${by.slice('operator:'.length)}`;
  if (by.startsWith('cli:')) return `the CLI (${by.slice('cli:'.length)})`;
  return by;
}
