import { HostNotAllowedError } from '../http/http-errors.js';

/**
 * The local server's `Host` check, its defence against DNS rebinding: a page on another site can point its own DNS name
 * at 127.0.0.1, but the browser then still sends that name as `Host` (RFC 9110 §7.2), so a server that answers only its
 * loopback names never answers such a page.
 */

/** The names every local server answers for: RFC 6761 §6.3 reserves `localhost` and `*.localhost` for loopback. */
const LOOPBACK_HOSTS: ReadonlySet<string> = new Set(['localhost', '127.0.0.1', '[::1]']);

/** `Host` as RFC 9110 §7.2 writes it: a name, an IPv4 address or a bracketed IPv6 address, then an optional `:port`. */
const HOST_HEADER = /^(\[[0-9a-f:.]+\]|[a-z0-9](?:[a-z0-9.-]{0,251}[a-z0-9])?)(?::[0-9]{1,5})?$/i;

/**
 * Refuses a request whose `Host` the local server must not answer: allowed are `localhost`, `127.0.0.1`, `[::1]` and any
 * `*.localhost` name, on any port, plus each name of `allowedHosts` (`LOCAL_ALLOWED_HOSTS`: exact names, lower case, no
 * port) — also when the server listens on `0.0.0.0`, where the machine's other names must be listed to be reached.
 * Names compare case-insensitively.
 * @param host the `Host` header as received, or undefined when the request had none.
 * @throws {HostNotAllowedError} (421) for a missing or malformed `Host` or one naming any other host.
 */
export function assertLocalHost(host: string | undefined, allowedHosts: readonly string[]): void {
  const name = HOST_HEADER.exec(host ?? '')?.[1]?.toLowerCase();
  if (name === undefined) throw new HostNotAllowedError(undefined);
  if (LOOPBACK_HOSTS.has(name) || name.endsWith('.localhost') || allowedHosts.includes(name)) return;
  throw new HostNotAllowedError(name);
}
