import { DatabaseUnavailableError } from '../errors.js';

/**
 * Socket and mysql2 codes of a connection that could not be made or was lost: refused, reset, broken pipe, timed out
 * (`connectTimeout`, 10 s by default), unreachable, name lookup failing for now, and mysql2's "Connection lost: The
 * server closed the connection" (`PROTOCOL_CONNECTION_LOST`).
 */
const UNAVAILABLE_CODES: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
  'PROTOCOL_CONNECTION_LOST',
]);

/**
 * Server and client error numbers that mean "the database cannot serve this now" (MariaDB error reference):
 * 1040 `ER_CON_COUNT_ERROR` (too many connections — also what RDS Proxy answers when its connection or connection-rate
 * limit is hit), 1203 `ER_TOO_MANY_USER_CONNECTIONS` (the server-wide `max_user_connections`), 1226
 * `ER_USER_LIMIT_REACHED` (a user's own `MAX_USER_CONNECTIONS` or hourly limit, which MariaDB answers instead), 1053 `ER_SERVER_SHUTDOWN`, 1927 `ER_CONNECTION_KILLED`, 2006
 * `CR_SERVER_GONE_ERROR`, 2013 `CR_SERVER_LOST` (lost during a query), and RDS Proxy's 9501 "Timed-out waiting to
 * acquire database connection" (Amazon RDS User Guide, "Troubleshooting for RDS Proxy").
 */
const UNAVAILABLE_ERRNOS: ReadonlySet<number> = new Set([1040, 1203, 1226, 1053, 1927, 2006, 2013, 9501]);

/** mysql2's errors, without a code, for a command given to a connection it already knows is dead. */
const CLOSED_CONNECTION = /^Can't (add new command when connection is|write) in closed state/;

/**
 * Why a mysql2 error says the database is unavailable — its `code` (`ECONNREFUSED`, `ER_CON_COUNT_ERROR`, …), else its
 * `errno` as a string (RDS Proxy's `9501` has no name), else `connection_closed` — or `undefined` when it says
 * something else (a duplicate key, a deadlock, bad SQL: those keep their own handling). Pure: looks only at the error.
 */
export function databaseUnavailableReason(error: unknown): string | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const { code, errno, message } = error as { code?: unknown; errno?: unknown; message?: unknown };
  if (typeof code === 'string' && UNAVAILABLE_CODES.has(code)) return code;
  if (typeof errno === 'number' && UNAVAILABLE_ERRNOS.has(errno)) return typeof code === 'string' && code !== '' ? code : String(errno);
  if (typeof message === 'string' && CLOSED_CONNECTION.test(message)) return 'connection_closed';
  return undefined;
}

/**
 * `error` as a {@link DatabaseUnavailableError} (the driver error as its `cause`) when {@link databaseUnavailableReason}
 * names a reason, else `error` itself, untouched.
 */
export function translateUnavailable(error: unknown): unknown {
  if (error instanceof DatabaseUnavailableError) return error;
  const reason = databaseUnavailableReason(error);
  return reason === undefined ? error : new DatabaseUnavailableError(reason, { cause: error });
}
