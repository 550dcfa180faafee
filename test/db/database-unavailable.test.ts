import { describe, expect, it } from 'vitest';
import { databaseUnavailableReason, translateUnavailable } from '../../lib/db/database-unavailable.js';
import { DatabaseUnavailableError } from '../../lib/errors.js';

const driverError = (fields: Record<string, unknown>, message = 'driver error') => Object.assign(new Error(message), fields);

describe('which driver errors mean the database is unavailable', () => {
  it.each([
    ['connection refused', { code: 'ECONNREFUSED', errno: -111 }, 'ECONNREFUSED'],
    ['connection reset', { code: 'ECONNRESET', errno: -104 }, 'ECONNRESET'],
    ['broken pipe', { code: 'EPIPE' }, 'EPIPE'],
    ['connect timeout', { code: 'ETIMEDOUT' }, 'ETIMEDOUT'],
    ['server closed the connection', { code: 'PROTOCOL_CONNECTION_LOST', fatal: true }, 'PROTOCOL_CONNECTION_LOST'],
    ['too many connections (also RDS Proxy at its limit)', { code: 'ER_CON_COUNT_ERROR', errno: 1040 }, 'ER_CON_COUNT_ERROR'],
    ['too many user connections', { code: 'ER_TOO_MANY_USER_CONNECTIONS', errno: 1203 }, 'ER_TOO_MANY_USER_CONNECTIONS'],
    ["a user's MAX_USER_CONNECTIONS", { code: 'ER_USER_LIMIT_REACHED', errno: 1226 }, 'ER_USER_LIMIT_REACHED'],
    ['server shutdown in progress', { code: 'ER_SERVER_SHUTDOWN', errno: 1053 }, 'ER_SERVER_SHUTDOWN'],
    ['connection killed', { code: 'ER_CONNECTION_KILLED', errno: 1927 }, 'ER_CONNECTION_KILLED'],
    ['server gone away', { errno: 2006 }, '2006'],
    ['lost connection during query', { errno: 2013 }, '2013'],
    ['RDS Proxy timed out acquiring a database connection', { errno: 9501, code: '' }, '9501'],
  ])('%s is unavailable (reason %s)', (_what, fields, reason) => {
    expect(databaseUnavailableReason(driverError(fields))).toBe(reason);
    const translated = translateUnavailable(driverError(fields));
    expect(translated).toBeInstanceOf(DatabaseUnavailableError);
    expect(translated).toMatchObject({ code: 'database_unavailable', reason, cause: expect.objectContaining(fields) });
  });

  it("mysql2's closed-state answers (no code) are unavailable", () => {
    expect(databaseUnavailableReason(driverError({ fatal: true }, "Can't add new command when connection is in closed state"))).toBe('connection_closed');
  });

  it.each([
    ['a duplicate key', { code: 'ER_DUP_ENTRY', errno: 1062 }],
    ['a deadlock (retried by retryTransient instead)', { code: 'ER_LOCK_DEADLOCK', errno: 1213 }],
    ['a lock wait timeout', { code: 'ER_LOCK_WAIT_TIMEOUT', errno: 1205 }],
    ['a missing routine', { code: 'ER_SP_DOES_NOT_EXIST', errno: 1305 }],
    ['bad SQL', { code: 'ER_PARSE_ERROR', errno: 1064 }],
    ['a closed pool (a programming error)', {}],
  ])('%s keeps its own handling: returned untouched', (_what, fields) => {
    const error = driverError(fields, 'Pool is closed.');
    expect(databaseUnavailableReason(error)).toBeUndefined();
    expect(translateUnavailable(error)).toBe(error);
  });
});
