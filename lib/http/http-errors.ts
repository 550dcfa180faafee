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

/**
 * Thrown when a route that takes a JSON body receives a non-empty body whose `Content-Type` is not JSON —
 * `application/json` or `application/<anything>+json` (RFC 6839 §3.1), parameters allowed, a `charset` only `utf-8`
 * (RFC 8259 §8.1) — or that has no `Content-Type` at all, which RFC 9110 §8.3 lets a recipient treat as
 * `application/octet-stream` (HTTP 415, RFC 9110 §15.5.16). The body is never parsed.
 */
export class UnsupportedMediaTypeError extends DurableOpsError {
  readonly code = 'unsupported_media_type' as const;
  constructor() {
    super('The request body must be JSON: send it with Content-Type: application/json.');
  }
}

/**
 * Thrown by the local HTTP server when the request's `Host` is not a loopback name nor one of `LOCAL_ALLOWED_HOSTS`
 * (HTTP 421, RFC 9110 §15.5.20): a page on another site that rebinds its DNS name to 127.0.0.1 sends its own name as
 * `Host`, so refusing it keeps such a page from driving the local stack. `host` is the refused name, lower case and
 * without its port, or undefined when `Host` was missing or not a host name (then the message names none).
 */
export class HostNotAllowedError extends DurableOpsError {
  readonly code = 'host_not_allowed' as const;
  constructor(readonly host: string | undefined) {
    super(
      host === undefined
        ? 'The local server answers only requests whose Host header names it: localhost, 127.0.0.1, [::1], *.localhost or a name in LOCAL_ALLOWED_HOSTS.'
        : `The local server does not answer for the host "${host}": only localhost, 127.0.0.1, [::1] and *.localhost are served. ` +
            `To reach it under another name, list the name in LOCAL_ALLOWED_HOSTS (comma-separated, e.g. LOCAL_ALLOWED_HOSTS=${host}).`,
    );
  }
}

/**
 * Thrown by the local HTTP server while it reads a request body that the client abandons — the connection closed or
 * reset before the body ended. Never answered (nobody is left to read it) and never a server fault: the server logs it
 * as a client abort.
 */
export class ClientAbortedError extends DurableOpsError {
  readonly code = 'client_aborted' as const;
  constructor(options?: { readonly cause?: unknown }) {
    super('The client closed the connection before the request body ended.', options);
  }
}
