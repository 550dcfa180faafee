import { useEffect, useState } from 'preact/hooks';
import { parseRoute, type Route } from './routes.js';

/** Fired on `window` after {@link navigate} changed the URL (pushState fires no event of its own). */
const NAVIGATED = 'console:navigated';

/** Moves to `href` (a path under `/console`) without reloading: a history entry, then every {@link useRoute} re-renders. */
export function navigate(href: string): void {
  if (href === `${location.pathname}${location.search}`) return;
  history.pushState(null, '', href);
  window.dispatchEvent(new Event(NAVIGATED));
  window.scrollTo(0, 0);
}

function currentRoute(): Route {
  return parseRoute(location.pathname, location.search);
}

/** The current {@link Route}, updated on {@link navigate} and on the browser's back and forward buttons. */
export function useRoute(): Route {
  const [route, setRoute] = useState<Route>(currentRoute);
  useEffect(() => {
    const update = () => setRoute(currentRoute());
    window.addEventListener('popstate', update);
    window.addEventListener(NAVIGATED, update);
    return () => {
      window.removeEventListener('popstate', update);
      window.removeEventListener(NAVIGATED, update);
    };
  }, []);
  return route;
}
