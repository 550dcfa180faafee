import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { toProblem, type Problem } from '../api/problem.js';

/** What {@link useResource} holds: the last data loaded, the last failure, and whether a load is in flight. */
export interface Resource<T> {
  readonly data: T | undefined;
  readonly problem: Problem | undefined;
  readonly loading: boolean;
  /** Loads again now (after an action, or on the user's request). */
  reload(): void;
}

/** Options of {@link useResource}. */
export interface ResourceOptions<T> {
  /** Reloads every this many **ms** while `shouldRefresh(data)` holds. @default no refresh */
  readonly refreshMs?: number;
  readonly shouldRefresh?: (data: T | undefined) => boolean;
}

/**
 * Loads `load()` whenever `key` changes, keeping the last good data on screen while reloading. A failure is caught
 * and kept as a {@link Problem} (never an unhandled rejection); an answer that arrives after a newer load started,
 * or after the component unmounted, is dropped.
 */
export function useResource<T>(key: string, load: () => Promise<T>, options: ResourceOptions<T> = {}): Resource<T> {
  const [data, setData] = useState<T | undefined>(undefined);
  const [problem, setProblem] = useState<Problem | undefined>(undefined);
  const [loading, setLoading] = useState(true);
  const [generation, setGeneration] = useState(0);
  const latest = useRef(0);
  const loader = useRef(load);
  loader.current = load;

  useEffect(() => {
    const ticket = ++latest.current;
    setLoading(true);
    loader.current().then(
      (value) => {
        if (ticket !== latest.current) return;
        setData(value);
        setProblem(undefined);
        setLoading(false);
      },
      (error: unknown) => {
        if (ticket !== latest.current) return;
        setProblem(toProblem(error));
        setLoading(false);
      },
    );
    return () => {
      // A newer key or an unmount makes this load stale.
      if (ticket === latest.current) latest.current += 1;
    };
  }, [key, generation]);

  useEffect(() => {
    setData(undefined);
    setProblem(undefined);
  }, [key]);

  const { refreshMs, shouldRefresh } = options;
  // After a failed load it keeps trying, three times slower, so one transient error does not freeze the page.
  const refreshing = refreshMs !== undefined && !loading && (problem !== undefined || (shouldRefresh?.(data) ?? true));
  const delayMs = problem === undefined ? refreshMs : (refreshMs ?? 0) * 3;
  useEffect(() => {
    if (!refreshing) return undefined;
    const timer = setTimeout(() => setGeneration((g) => g + 1), delayMs);
    return () => clearTimeout(timer);
  }, [refreshing, delayMs, data, problem]);

  const reload = useCallback(() => setGeneration((g) => g + 1), []);
  return { data, problem, loading, reload };
}
