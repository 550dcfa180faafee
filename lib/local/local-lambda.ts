import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { readBoundedRequest } from '../models/bounded-body.js';

/**
 * A minimal local **AWS Lambda Invoke API** (synchronous invocations only), so `@aws-sdk/client-lambda` — the client the
 * `lambda:` model routes use — can be run for real locally and in tests, against in-process functions.
 * Source: AWS Lambda API reference, "Invoke" (`POST /2015-03-31/functions/{FunctionName}/invocations`), its errors
 * and the "Lambda quotas" page (6 MB synchronous request and response payloads).
 */

/** Largest request or response payload of a synchronous invocation, in bytes (Lambda's 6 MB quota: 6,291,456 bytes). */
export const LAMBDA_SYNC_PAYLOAD_LIMIT_BYTES = 6 * 1024 * 1024;

/** A local function: gets the parsed JSON event, resolves to a JSON-serialisable result; a throw is a function error. */
export type LocalFunction = (payload: unknown) => Promise<unknown>;

/** Options of {@link startLocalLambda}. */
export interface LocalLambdaOptions {
  /** TCP port on 127.0.0.1; `0` picks a free one (tests). */
  port: number;
  /** The functions, by name. An ARN or a `name:qualifier` in a request resolves to its function name. */
  functions: Record<string, LocalFunction>;
}

/** A running local Invoke API. */
export interface LocalLambda {
  /** Base URL to give a `LambdaClient` as `endpoint`, e.g. `http://127.0.0.1:41234`. */
  readonly endpoint: string;
  /** Closes every connection (including invocations still running) and stops listening. */
  close(): Promise<void>;
}

const INVOKE_PATH = /^\/2015-03-31\/functions\/([^/]+)\/invocations$/;
const ARN_FUNCTION = /^arn:[^:]+:lambda:[^:]*:[^:]*:function:([^:]+)(:.+)?$/;

/** An API error as Lambda sends it: the error name in `x-amzn-ErrorType`, `{Type, message}` in the body. */
function sendApiError(response: ServerResponse, status: number, errorType: string, message: string): void {
  const body = JSON.stringify({ Type: status >= 500 ? 'Service' : 'User', message, Message: message });
  response
    .writeHead(status, {
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(body),
      'x-amzn-errortype': errorType,
      'x-amzn-requestid': randomUUID(),
      ...(status === 413 ? { connection: 'close' } : {}),
    })
    .end(body);
}

function sendResult(response: ServerResponse, body: string, functionError: boolean): void {
  response
    .writeHead(200, {
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(body),
      'x-amzn-requestid': randomUUID(),
      'x-amz-executed-version': '$LATEST',
      ...(functionError ? { 'x-amz-function-error': 'Unhandled' } : {}),
    })
    .end(body);
}

function functionNameOf(raw: string): string {
  const name = decodeURIComponent(raw);
  const arn = ARN_FUNCTION.exec(name);
  if (arn) return arn[1]!;
  return name.split(':')[0]!;
}

async function invoke(fn: LocalFunction, payload: unknown, response: ServerResponse): Promise<void> {
  let result: unknown;
  try {
    result = await fn(payload);
  } catch (error) {
    const errorType = error instanceof Error ? error.name : 'Error';
    const errorMessage = error instanceof Error ? error.message : String(error);
    return sendResult(response, JSON.stringify({ errorType, errorMessage, trace: [] }), true);
  }
  const body = JSON.stringify(result) ?? 'null';
  if (Buffer.byteLength(body) > LAMBDA_SYNC_PAYLOAD_LIMIT_BYTES) {
    const errorMessage = `Response payload size exceeded maximum allowed payload size (${LAMBDA_SYNC_PAYLOAD_LIMIT_BYTES} bytes).`;
    return sendResult(response, JSON.stringify({ errorType: 'Function.ResponseSizeTooLarge', errorMessage }), true);
  }
  sendResult(response, body, false);
}

async function handle(functions: Record<string, LocalFunction>, request: IncomingMessage, response: ServerResponse): Promise<void> {
  const match = INVOKE_PATH.exec((request.url ?? '/').split('?')[0] ?? '/');
  if (request.method !== 'POST' || !match) return sendApiError(response, 404, 'UnknownOperationException', 'Unknown operation.');
  const name = functionNameOf(match[1]!);
  const fn = Object.hasOwn(functions, name) ? functions[name] : undefined;
  if (fn === undefined) return sendApiError(response, 404, 'ResourceNotFoundException', `Function not found: ${name}`);
  const invocationType = request.headers['x-amz-invocation-type'] ?? 'RequestResponse';
  if (invocationType !== 'RequestResponse') {
    return sendApiError(response, 400, 'InvalidParameterValueException', 'The local Invoke API supports only RequestResponse invocations.');
  }
  const body = await readBoundedRequest(request, LAMBDA_SYNC_PAYLOAD_LIMIT_BYTES);
  if (!body.ok) {
    return sendApiError(response, 413, 'RequestTooLargeException', `Request must be smaller than ${LAMBDA_SYNC_PAYLOAD_LIMIT_BYTES} bytes for the InvokeFunction operation`);
  }
  let payload: unknown = {};
  if (body.bytes.length > 0) {
    try {
      payload = JSON.parse(body.bytes.toString('utf8'));
    } catch {
      return sendApiError(response, 400, 'InvalidRequestContentException', 'Could not parse request body into json.');
    }
  }
  await invoke(fn, payload, response);
}

/**
 * Serves the Invoke API for `functions` on 127.0.0.1, as Lambda answers it (and as the SDK parses it):
 *
 * - 200 with the function's JSON result (an empty request payload is the event `{}`);
 * - a function that throws: 200 with `X-Amz-Function-Error: Unhandled` and `{errorType, errorMessage, trace}` (the
 *   SDK's `InvokeCommandOutput.FunctionError`); a result above 6 MB likewise, as `Function.ResponseSizeTooLarge`;
 * - an unknown function: 404, `x-amzn-ErrorType: ResourceNotFoundException` (the SDK throws
 *   `ResourceNotFoundException`);
 * - a payload above 6 MB: 413 `RequestTooLargeException`; a payload that is not JSON: 400
 *   `InvalidRequestContentException`; an `Event` or `DryRun` invocation: 400 `InvalidParameterValueException`.
 *
 * No authentication: requests are accepted whatever their SigV4 signature (clients need some credentials to sign,
 * e.g. `{accessKeyId: 'local', secretAccessKey: 'local'}`). Functions run in this process, unbounded in time.
 * @throws {Error} when the port cannot be bound.
 */
export async function startLocalLambda(options: LocalLambdaOptions): Promise<LocalLambda> {
  const server = createServer((request, response) => {
    handle(options.functions, request, response).catch(() => {
      if (!response.headersSent) sendApiError(response, 500, 'ServiceException', 'The local Invoke API failed.');
      else response.destroy();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address();
  if (address === null || typeof address === 'string') {
    server.close();
    throw new Error('The local Invoke API did not report a TCP address.');
  }
  return {
    endpoint: `http://127.0.0.1:${address.port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
