import { useState } from 'preact/hooks';
import { toProblem, type Problem } from '../api/problem.js';

/** State and controls of one action that runs only after the operator confirms it; `T` is what a run reports. */
export interface ConfirmedAction<T = string> {
  /** The confirmation dialog is open. */
  readonly confirming: boolean;
  /** The request is in flight. */
  readonly running: boolean;
  /** What the last run reported (for a `role="status"` notice). */
  readonly message: T | undefined;
  /** Why the last run failed. */
  readonly problem: Problem | undefined;
  /** Opens the confirmation (and clears the last outcome). */
  ask(): void;
  /** Closes the confirmation without running. */
  dismiss(): void;
  /** Runs the action, then closes the confirmation; a failure is kept in `problem`, never thrown. */
  confirm(): void;
}

/**
 * One confirmed action (cancel, retry, redrive, resolve): `run` performs the request and returns what to announce when
 * it succeeded (a sentence, or a richer notice `T`); `onDone` gets it after a success (e.g. to reload the data the
 * action changed).
 */
export function useConfirmedAction<T = string>(run: () => Promise<T>, onDone?: (message: T) => void): ConfirmedAction<T> {
  const [confirming, setConfirming] = useState(false);
  const [running, setRunning] = useState(false);
  const [message, setMessage] = useState<T | undefined>(undefined);
  const [problem, setProblem] = useState<Problem | undefined>(undefined);
  return {
    confirming,
    running,
    message,
    problem,
    ask: () => {
      setMessage(undefined);
      setProblem(undefined);
      setConfirming(true);
    },
    dismiss: () => setConfirming(false),
    confirm: () => {
      setRunning(true);
      run()
        .then(
          (done) => {
            setMessage(done);
            onDone?.(done);
          },
          (error: unknown) => setProblem(toProblem(error)),
        )
        .finally(() => {
          setRunning(false);
          setConfirming(false);
        });
    },
  };
}
