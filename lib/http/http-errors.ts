import { DurableOpsError } from '../errors.js';

/**
 * Errors that exist only at the HTTP edge (routing and transport limits). They extend the one error base class
 * (`DurableOpsError`) so `problem-details.ts` maps them like every other typed error; domain services never throw them.
 */

/**
 * Thrown when no route of the API (docs/design.md §7) matches the request path, for any method — or when the path names an
 * operator route and the caller lacks its scope, which must look exactly the same (HTTP 404).
 */
export class RouteNotFoundError extends DurableOpsError {
  readonly code = 'route_not_found' as const;
  constructor() {
    super('No resource matches this path.');
  }
}

/**
 * Thrown when the path names a route of the owner API but not for this method (HTTP 405). `allowedMethods` becomes
 * the `Allow` response header, which RFC 9110 §15.5.6 requires on a 405.
 */
export class MethodNotAllowedError extends DurableOpsError {
  readonly code = 'method_not_allowed' as const;
  constructor(readonly allowedMethods: readonly string[]) {
    super(`This resource allows ${allowedMethods.join(', ')} only.`);
  }
}

/**
 * Thrown by the local HTTP server when a request body exceeds its cap, before the body is read further
 * (HTTP 413, RFC 9110 §15.5.14). `limitBytes` is the cap in **bytes**.
 */
export class ContentTooLargeError extends DurableOpsError {
  readonly code = 'content_too_large' as const;
  constructor(readonly limitBytes: number) {
    super(`The request body must be at most ${limitBytes} bytes.`);
  }
}
