import { DurableOpsError } from '../errors.js';
import type { MigrationReport } from './migrate.js';

/**
 * Errors of running migrations in AWS through the migrate Lambda (`migrateRemote`, docs/design.md §9). Each names the
 * function it invoked; none carries a stack, SQL text or a credential — only names, codes and bounded messages.
 */

/**
 * Thrown when the migrate function ran but the migration run failed: a migration threw (its result has status
 * `Error`; the ones after it `NotExecuted`), or the function could not reach the database or read its configuration
 * (`results` empty). `reason` is the function's bounded summary, e.g.
 * `20261130000100_create_operations failed: ER_TABLE_EXISTS_ERROR (errno 1050)`; the full error is in the function's
 * CloudWatch log. On MariaDB (no transactional DDL) the migrations reported `Success` stay applied; on SQLite kysely
 * runs the whole batch in one transaction, so they were rolled back with the failure.
 */
export class MigrationFailedError extends DurableOpsError {
  readonly code = 'migration_failed' as const;
  constructor(
    readonly functionName: string,
    readonly results: MigrationReport,
    readonly reason: string,
  ) {
    super(`Migrations in ${functionName} failed: ${reason}`);
  }
}

/**
 * Thrown when the migrate function itself failed (Lambda `FunctionError`: it threw, timed out, ran out of memory or
 * could not start). `errorType` is the error payload's `errorType` (e.g. `Sandbox.Timedout`), never its message or
 * trace.
 */
export class MigrateFunctionError extends DurableOpsError {
  readonly code = 'migrate_function_error' as const;
  constructor(
    readonly functionName: string,
    readonly errorType: string,
  ) {
    super(`The migrate function ${functionName} failed (${errorType}); see its CloudWatch log.`);
  }
}

/** Thrown when the migrate function answered something that is not a migration report (wrong function?). */
export class MigrateResponseError extends DurableOpsError {
  readonly code = 'migrate_response_invalid' as const;
  constructor(readonly functionName: string) {
    super(`${functionName} did not answer a migration report: is it the migrate function?`);
  }
}

/**
 * Thrown when the Lambda Invoke call failed before the function ran: no such function
 * (`ResourceNotFoundException`), no permission (`AccessDeniedException`), throttling, no credentials, no network.
 * `errorName` is the SDK error's name; `httpStatus` the service's status, when it answered.
 */
export class MigrateInvokeError extends DurableOpsError {
  readonly code = 'migrate_invoke_failed' as const;
  constructor(
    readonly functionName: string,
    readonly errorName: string,
    readonly httpStatus: number | undefined,
    options: { cause?: unknown; detail?: string } = {},
  ) {
    super(`Invoking ${functionName} failed: ${errorName}${options.detail ? ` (${options.detail})` : ''}`, { cause: options.cause });
  }
}
