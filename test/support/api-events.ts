import { randomUUID } from 'node:crypto';
import type { APIGatewayProxyEventV2WithJWTAuthorizer, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import { DEV_OPERATOR_GROUP, DEV_OPERATOR_GROUP_CLAIM } from '../../lib/local/dev-operator.js';
import { localLambdaContext } from '../../lib/local/lambda-context.js';

/** What a test says about one API request; everything else gets API Gateway's payload 2.0 defaults. */
export interface ApiEventInput {
  readonly method: string;
  /** Path with an optional query string, e.g. `/api/operations?limit=5`. */
  readonly path: string;
  /** The verified `sub` claim; `null` builds an event with no authorizer claims at all. */
  readonly owner: string | null;
  /**
   * Header names are lower-cased, as API Gateway HTTP APIs deliver them. With a body, `content-type: application/json`
   * is added unless a `content-type` of any case is given here.
   */
  readonly headers?: Record<string, string>;
  /** A string is sent as is; anything else as its JSON. */
  readonly body?: unknown;
  /** The verified `scope` claim (space-separated OAuth scopes), also passed as the authorizer's `scopes` list. */
  readonly scope?: string;
  /**
   * More verified claims, as API Gateway passes them (an array claim as `[a b]`), over the defaults.
   * @default with an `ops:` scope, {@link OPERATOR_CLAIMS} (as `signDevToken` signs an ops-scoped token); `{}` otherwise —
   * pass `{}` for an ops-scoped non-operator
   */
  readonly claims?: Readonly<Record<string, string>>;
}

/**
 * The claims that make a test event an operator's under the local stack's operator rule (the API test app's): the dev
 * operator group, as API Gateway passes an array claim (`lib/local/dev-operator.ts`).
 */
export const OPERATOR_CLAIMS: Readonly<Record<string, string>> = Object.freeze({ [DEV_OPERATOR_GROUP_CLAIM]: `[${DEV_OPERATOR_GROUP}]` });

/** An API Gateway HTTP API payload 2.0 event as the JWT authorizer hands it to the Lambda. */
export function apiEvent(input: ApiEventInput): APIGatewayProxyEventV2WithJWTAuthorizer {
  const [rawPath = '/', rawQueryString = ''] = input.path.split('?');
  const query = new URLSearchParams(rawQueryString);
  const queryStringParameters = Object.fromEntries([...new Set(query.keys())].map((name) => [name, query.getAll(name).join(',')]));
  const body = input.body === undefined ? undefined : typeof input.body === 'string' ? input.body : JSON.stringify(input.body);
  // A body goes as JSON, as every client of the API sends it, unless the test names its own Content-Type.
  const json = body === undefined ? {} : { 'content-type': 'application/json' };
  const headers = Object.fromEntries(Object.entries({ host: 'api.test', ...json, ...input.headers }).map(([name, value]) => [name.toLowerCase(), value]));
  const now = Date.now();
  const event = {
    version: '2.0',
    routeKey: '$default',
    rawPath,
    rawQueryString,
    headers,
    ...(rawQueryString ? { queryStringParameters } : {}),
    requestContext: {
      accountId: '123456789012',
      apiId: 'test',
      domainName: 'api.test',
      domainPrefix: 'api',
      http: { method: input.method, path: rawPath, protocol: 'HTTP/1.1', sourceIp: '192.0.2.1', userAgent: 'vitest' },
      requestId: randomUUID(),
      routeKey: '$default',
      stage: '$default',
      time: new Date(now).toUTCString(),
      timeEpoch: now,
      ...(input.owner === null
        ? {}
        : {
            authorizer: {
              principalId: '',
              integrationLatency: 0,
              jwt: {
                claims: {
                  sub: input.owner,
                  iss: 'https://issuer.test',
                  ...(input.scope === undefined ? {} : { scope: input.scope }),
                  ...(input.claims ?? (input.scope?.includes('ops:') ? OPERATOR_CLAIMS : {})),
                },
                scopes: input.scope ? input.scope.split(' ') : null,
              },
            },
          }),
    },
    ...(body === undefined ? {} : { body }),
    isBase64Encoded: false,
  };
  return event as APIGatewayProxyEventV2WithJWTAuthorizer;
}

/** A Lambda context with a generous remaining time (60 s). */
export function lambdaContext(): Context {
  return localLambdaContext({ functionName: 'durable-ops-api-test', timeoutMs: 60_000 });
}

/** A handler response with its body parsed as JSON (`undefined` when there is none). */
export interface ParsedResponse {
  readonly status: number;
  readonly headers: Record<string, string>;
  /** The raw body text, for "never contains" assertions. */
  readonly text: string;
  readonly json: any;
}

/** Normalises a handler result for assertions. */
export function parseResponse(result: APIGatewayProxyStructuredResultV2): ParsedResponse {
  const text = result.body ?? '';
  const headers = Object.fromEntries(Object.entries(result.headers ?? {}).map(([name, value]) => [name.toLowerCase(), String(value)]));
  return { status: result.statusCode ?? 200, headers, text, json: text === '' ? undefined : JSON.parse(text) };
}
