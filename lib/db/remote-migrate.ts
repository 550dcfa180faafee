import { InvokeCommand, type InvokeCommandOutput, type LambdaClient } from '@aws-sdk/client-lambda';
import { ConfigError } from '../errors.js';
import { MigrateFunctionResultSchema } from './migrate-function.js';
import { MigrateFunctionError, MigrateInvokeError, MigrateResponseError, MigrationFailedError } from './migration-errors.js';
import type { MigrationReport } from './migrate.js';

/** A function name, a partial (`123456789012:function:name`) or full function ARN, each with an optional qualifier. */
/** A Lambda function name, partial or full ARN, with an optional version or alias qualifier (AWS Lambda Invoke API). */
export const LAMBDA_FUNCTION_PATTERN = /^(arn:aws[a-zA-Z-]*:lambda:[a-z0-9-]+:)?(\d{12}:function:)?[a-zA-Z0-9_-]{1,64}(:(\$LATEST|[a-zA-Z0-9_-]{1,128}))?$/;
/** Largest migrate-function answer read, in bytes (a report of thousands of migrations is far smaller). */
const MAX_PAYLOAD_BYTES = 1024 * 1024;

/** Options of {@link migrateRemote}. */
export interface MigrateRemoteOptions {
  /** Aborts the Invoke call (the function itself runs on: migrations are serialised by a lock and idempotent). */
  readonly abortSignal?: AbortSignal;
}

function text(payload: Uint8Array): string {
  return Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength).toString('utf8');
}

/** The `errorType` of a Lambda error payload (`{errorType, errorMessage, trace}`), never its message or trace. */
function errorTypeOf(payload: Uint8Array, fallback: string): string {
  try {
    const errorType = (JSON.parse(text(payload)) as { errorType?: unknown } | null)?.errorType;
    return typeof errorType === 'string' && /^[\w.:-]{1,100}$/.test(errorType) ? errorType : fallback;
  } catch {
    return fallback;
  }
}

function invokeFailure(functionName: string, error: unknown): MigrateInvokeError {
  const name = error instanceof Error && /^[\w.]{1,100}$/.test(error.name) ? error.name : 'Error';
  const status = (error as { $metadata?: { httpStatusCode?: unknown } } | null)?.$metadata?.httpStatusCode;
  // AWS service messages name the principal and the resource, never a credential; bounded all the same.
  const message = error instanceof Error ? error.message.slice(0, 300) : undefined;
  return new MigrateInvokeError(functionName, name, typeof status === 'number' ? status : undefined, { cause: error, ...(message ? { detail: message } : {}) });
}

/**
 * Runs the pending migrations in AWS (docs/design.md §9): invokes the migrate Lambda (`functions/migrate.ts`, the stack output
 * `MigrateFunctionName`) synchronously with `InvokeCommand` (`InvocationType: RequestResponse`, payload `{}`; AWS Lambda
 * API reference, "Invoke") and returns each migration's result, in order. Nothing pending: an empty report.
 *
 * Give `client` `maxAttempts: 1` or accept that the SDK may re-invoke after a throttle or 5xx (harmless: a second run
 * finds nothing pending, and runs are serialised by the migration lock). The call waits for the function, up to its
 * timeout (300 s in serverless.yml).
 *
 * @param functionName a function name or ARN, optionally with a version or alias.
 * @throws {ConfigError} when `functionName` is not a function name or ARN.
 * @throws {MigrationFailedError} when the function ran but a migration (or the connection to the database) failed —
 * with the results so far and the function's bounded reason.
 * @throws {MigrateFunctionError} when the function failed (`FunctionError`: crashed, timed out, out of memory).
 * @throws {MigrateResponseError} when the answer is not a migration report.
 * @throws {MigrateInvokeError} when the Invoke call itself failed (no such function, access denied, network).
 */
export async function migrateRemote(client: LambdaClient, functionName: string, options: MigrateRemoteOptions = {}): Promise<MigrationReport> {
  if (!LAMBDA_FUNCTION_PATTERN.test(functionName)) throw new ConfigError('The migrate function must be a Lambda function name or ARN.');
  const command = new InvokeCommand({ FunctionName: functionName, InvocationType: 'RequestResponse', Payload: new TextEncoder().encode('{}') });
  let output: InvokeCommandOutput;
  try {
    output = await client.send(command, options.abortSignal ? { abortSignal: options.abortSignal } : {});
  } catch (error) {
    throw invokeFailure(functionName, error);
  }
  const payload = output.Payload ?? new Uint8Array(0);
  if (output.FunctionError !== undefined) throw new MigrateFunctionError(functionName, errorTypeOf(payload, output.FunctionError));
  if (payload.byteLength > MAX_PAYLOAD_BYTES) throw new MigrateResponseError(functionName);
  let body: unknown;
  try {
    body = JSON.parse(text(payload));
  } catch {
    throw new MigrateResponseError(functionName);
  }
  const parsed = MigrateFunctionResultSchema.safeParse(body);
  if (!parsed.success) throw new MigrateResponseError(functionName);
  if (parsed.data.error !== undefined) throw new MigrationFailedError(functionName, parsed.data.results, parsed.data.error);
  return parsed.data.results;
}
