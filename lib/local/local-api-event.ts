import type { IncomingHttpHeaders } from 'node:http';
import type { APIGatewayProxyEventV2, APIGatewayProxyEventV2WithJWTAuthorizer } from 'aws-lambda';
import type { DevTokenClaims } from './dev-token.js';

/** One HTTP request as the local server received it, body already read (UTF-8). */
export interface LocalRequest {
  readonly method: string;
  /** The request target: path plus optional query, e.g. `/api/operations?limit=5`. */
  readonly target: string;
  /** Node's headers: names already lower-case. */
  readonly headers: IncomingHttpHeaders;
  /** The body as text, or undefined when there was none. */
  readonly body: string | undefined;
  readonly sourceIp: string;
  readonly requestId: string;
  readonly receivedAt: Date;
}

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/** `requestContext.time` as API Gateway writes it: `12/Mar/2020:19:03:58 +0000` (UTC). */
function gatewayTime(date: Date): string {
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${pad(date.getUTCDate())}/${MONTHS[date.getUTCMonth()]}/${date.getUTCFullYear()}:${pad(date.getUTCHours())}:${pad(date.getUTCMinutes())}:${pad(date.getUTCSeconds())} +0000`;
}

/** Claim values as the JWT authorizer passes them: strings, arrays as `[a b]`, objects as JSON. */
function gatewayClaims(claims: DevTokenClaims): Record<string, string> {
  return Object.fromEntries(
    Object.entries(claims).map(([name, value]) => [
      name,
      typeof value === 'string' ? value : Array.isArray(value) ? `[${value.join(' ')}]` : typeof value === 'object' ? JSON.stringify(value) : String(value),
    ]),
  );
}

/** Header values as payload 2.0 carries them: one string per name, repeated headers joined with commas; no cookies. */
function gatewayHeaders(headers: IncomingHttpHeaders): Record<string, string> {
  const result: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || name === 'cookie') continue;
    result[name] = Array.isArray(value) ? value.join(',') : value;
  }
  return result;
}

/** Query parameters as payload 2.0 carries them: decoded, repeated names joined with commas; undefined when none. */
function gatewayQuery(rawQueryString: string): Record<string, string> | undefined {
  const params = new URLSearchParams(rawQueryString);
  const result: Record<string, string> = {};
  for (const name of new Set(params.keys())) result[name] = params.getAll(name).join(',');
  return Object.keys(result).length > 0 ? result : undefined;
}

/**
 * Builds the API Gateway HTTP API payload 2.0 event that the JWT authorizer would hand the Lambda for `request`
 * (AWS docs, "Working with AWS Lambda proxy integrations for HTTP APIs", payload format 2.0): `rawPath`,
 * `rawQueryString`, decoded `queryStringParameters`, lower-cased `headers`, `cookies`, the body as a string with
 * `isBase64Encoded: false`, `routeKey: '$default'`, and `requestContext.authorizer.jwt` with the **verified** claims
 * and the scopes of the `scope` claim (`null` without one,
 * as API Gateway sends). With no `claims` (a public route, deployed without the authorizer) the event has no
 * `requestContext.authorizer` at all, as API Gateway sends it; its type still says JWT authorizer, which every reader
 * of the claims already treats as possibly absent.
 */
export function toApiGatewayEvent(request: LocalRequest, claims: DevTokenClaims | undefined): APIGatewayProxyEventV2WithJWTAuthorizer {
  const queryAt = request.target.indexOf('?');
  const rawPath = queryAt < 0 ? request.target : request.target.slice(0, queryAt);
  const rawQueryString = queryAt < 0 ? '' : request.target.slice(queryAt + 1);
  const cookie = request.headers.cookie;
  const headers = gatewayHeaders(request.headers);
  const queryStringParameters = gatewayQuery(rawQueryString);
  const event: APIGatewayProxyEventV2 = {
    version: '2.0',
    routeKey: '$default',
    rawPath,
    rawQueryString,
    ...(cookie ? { cookies: cookie.split(/;\s*/) } : {}),
    headers,
    ...(queryStringParameters ? { queryStringParameters } : {}),
    requestContext: {
      accountId: 'local',
      apiId: 'local',
      domainName: headers.host ?? 'localhost',
      domainPrefix: (headers.host ?? 'localhost').split('.')[0] ?? 'localhost',
      http: {
        method: request.method,
        path: rawPath,
        protocol: 'HTTP/1.1',
        sourceIp: request.sourceIp,
        userAgent: headers['user-agent'] ?? '',
      },
      requestId: request.requestId,
      routeKey: '$default',
      stage: '$default',
      time: gatewayTime(request.receivedAt),
      timeEpoch: request.receivedAt.getTime(),
    },
    ...(request.body !== undefined ? { body: request.body } : {}),
    isBase64Encoded: false,
  };
  if (!claims) return event as APIGatewayProxyEventV2WithJWTAuthorizer;
  const jwt = { claims: gatewayClaims(claims), scopes: claims.scope ? claims.scope.split(' ').filter(Boolean) : null };
  return { ...event, requestContext: { ...event.requestContext, authorizer: { principalId: '', integrationLatency: 0, jwt } } };
}
