/**
 * Which backend errors are database faults, and of which kind (storage/faults.ts): what every door
 * answers 503 with Retry-After (507 for a full disk) instead of a 500. Everything else, a constraint
 * or a bug, is no fault and stays what it is. The real faults, on real databases: db-faults-*.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { DatabaseFault } from '../../../src/server/errors.ts';
import { asFault, faultKind } from '../../../src/server/storage/faults.ts';

const err = (code: string | undefined, message = 'x') => Object.assign(new Error(message), code === undefined ? {} : { code });

describe('database faults', () => {
  it.each([
    ['SQLite: disk full', err('SQLITE_FULL', 'database or disk is full'), 'disk_full'],
    ['SQLite: busy past the busy timeout', err('SQLITE_BUSY', 'database is locked'), 'timeout'],
    ['SQLite: a busy snapshot', err('SQLITE_BUSY_SNAPSHOT'), 'timeout'],
    ['SQLite: a read-only file', err('SQLITE_READONLY', 'attempt to write a readonly database'), 'read_only'],
    ['SQLite: a read-only file system under it', err('SQLITE_READONLY_DBMOVED'), 'read_only'],
    ['SQLite: a failed write', err('SQLITE_IOERR_WRITE', 'disk I/O error'), 'io_error'],
    ['SQLite: closed (shutting down)', new TypeError('The database connection is not open'), 'unavailable'],
    ['PostgreSQL: shutting down', err('57P03', 'the database system is shutting down'), 'unavailable'],
    ['PostgreSQL: connection ended by an administrator', err('57P01', 'terminating connection due to administrator command'), 'unavailable'],
    ['PostgreSQL: connection failure', err('08006'), 'unavailable'],
    ['PostgreSQL: too many connections', err('53300'), 'unavailable'],
    ['PostgreSQL: statement timeout', err('57014', 'canceling statement due to statement timeout'), 'timeout'],
    ['PostgreSQL: lock timeout', err('55P03'), 'timeout'],
    ['PostgreSQL: disk full', err('53100', 'could not extend file'), 'disk_full'],
    ['PostgreSQL: a standby, or read-only', err('25006', 'cannot execute INSERT in a read-only transaction'), 'read_only'],
    ['a refused connection', err('ECONNREFUSED'), 'unavailable'],
    ['a reset connection', err('ECONNRESET'), 'unavailable'],
    ['localhost refused on every address', Object.assign(new AggregateError([err('ECONNREFUSED'), err('ECONNREFUSED')]), {}), 'unavailable'],
    ['node-postgres: connection lost', err(undefined, 'Connection terminated unexpectedly'), 'unavailable'],
    ['node-postgres: connect timeout', err(undefined, 'Connection terminated due to connection timeout'), 'unavailable'],
    ['node-postgres: no free connection in time', err(undefined, 'timeout exceeded when trying to connect'), 'unavailable'],
    ['node-postgres: the query timeout', err(undefined, 'Query read timeout'), 'timeout'],
  ])('%s', (_name, e, kind) => {
    expect(faultKind(e)).toBe(kind);
    const fault = asFault(e) as DatabaseFault;
    expect(fault).toBeInstanceOf(DatabaseFault);
    expect(fault.status).toBe(kind === 'disk_full' ? 507 : 503);
    expect(fault.headers['retry-after']).toMatch(/^\d+$/);
    // The database's words go to the log, never into the answer.
    const said = (e as Error).message;
    if (said.length > 1) expect(fault.message).not.toContain(said);
  });

  it.each([
    ['a unique index', err('SQLITE_CONSTRAINT_UNIQUE')],
    ['a foreign key', err('23503')],
    ['a syntax error (a bug)', err('42601')],
    ['a plain bug', new Error('undefined is not a function')],
    ['a string', 'nope'],
  ])('%s is no fault: it stays what it is', (_name, e) => {
    expect(faultKind(e)).toBeUndefined();
    expect(asFault(e)).toBe(e);
  });
});
