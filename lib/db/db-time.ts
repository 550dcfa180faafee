/**
 * Converts a timestamp string read from either database (`YYYY-MM-DD HH:MM:SS[.fraction]`, UTC) to a Date.
 * Sub-millisecond digits are truncated, never rounded (JS Date stops at milliseconds).
 * @throws {TypeError} when the string is not a database timestamp.
 */
export function parseDbTime(value: string): Date {
  const match = /^(\d{4}-\d{2}-\d{2})[ T](\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?Z?$/.exec(value);
  if (!match) throw new TypeError(`Not a database timestamp: ${JSON.stringify(value)}`);
  const millis = (match[3] ?? '').padEnd(3, '0').slice(0, 3);
  return new Date(`${match[1]}T${match[2]}.${millis}Z`);
}

/** ISO-8601 UTC string (millisecond precision) of a database timestamp, or null. */
export function toIsoOrNull(value: string | null): string | null {
  return value === null ? null : parseDbTime(value).toISOString();
}
