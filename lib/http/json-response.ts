import type { APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import type { z } from 'zod';

/**
 * A successful JSON response whose body is `schema.parse(body)`: every body the API sends has passed its DTO schema
 * (docs/design.md §7), so a mapping bug that adds a field (a lease token, a failure message) fails loudly as a 500
 * instead of leaking. Headers: `content-type: application/json`, `cache-control: no-store` (owner data must not be
 * cached by shared caches, RFC 9111 §5.2.2.5), plus `headers`. Header names are lower-case, as API Gateway HTTP APIs
 * deliver them.
 * @throws {z.ZodError} when `body` does not match `schema` (a server bug; answered as a generic 500).
 */
export function jsonResponse<S extends z.ZodType>(
  statusCode: number,
  schema: S,
  body: z.input<S>,
  headers: Record<string, string> = {},
): APIGatewayProxyStructuredResultV2 {
  return {
    statusCode,
    headers: { 'content-type': 'application/json', 'cache-control': 'no-store', ...headers },
    body: JSON.stringify(schema.parse(body)),
  };
}
