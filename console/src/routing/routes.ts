/** Where the console is served (Vite `base`, without the trailing slash). */
export const CONSOLE_BASE = '/console';

/** A page of the console, parsed from the location. */
export type Route =
  | { readonly page: 'operations'; readonly query: URLSearchParams }
  | { readonly page: 'operation'; readonly id: string }
  | { readonly page: 'capacity' }
  | { readonly page: 'recovery' }
  | { readonly page: 'sweeper' }
  | { readonly page: 'throughput' }
  | { readonly page: 'not-found' };

/** The path of a page, e.g. `consolePath('capacity')` → `/console/capacity`. */
export function consolePath(...segments: string[]): string {
  return [CONSOLE_BASE, ...segments.map(encodeURIComponent)].join('/');
}

/** Parses `pathname` + `search` into a {@link Route}; anything unknown under `/console` is `not-found`. */
export function parseRoute(pathname: string, search: string): Route {
  const rest = pathname.startsWith(CONSOLE_BASE) ? pathname.slice(CONSOLE_BASE.length) : pathname;
  const segments = rest.split('/').filter((segment) => segment !== '' && segment !== 'index.html');
  const [first, second, ...more] = segments;
  if (more.length > 0) return { page: 'not-found' };
  if (first === undefined || (first === 'operations' && second === undefined)) return { page: 'operations', query: new URLSearchParams(search) };
  if (first === 'operations' && second !== undefined) {
    try {
      return { page: 'operation', id: decodeURIComponent(second) };
    } catch {
      return { page: 'not-found' };
    }
  }
  if (second !== undefined) return { page: 'not-found' };
  if (first === 'capacity' || first === 'recovery' || first === 'sweeper' || first === 'throughput') return { page: first };
  return { page: 'not-found' };
}
