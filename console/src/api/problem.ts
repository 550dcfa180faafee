/** One field-level problem of a 400 (`errors` of a problem+json body). */
export interface ProblemIssue {
  readonly path: string;
  readonly message: string;
}

/**
 * An error the console shows: the RFC 9457 problem+json body the API answered (`status`, `title`, `detail`, `code`,
 * `errors`), or one the console made up for a failure without such a body (network down, an unexpected answer) —
 * those have `status` 0 or the HTTP status and a `code` of their own.
 */
export interface Problem {
  readonly status: number;
  readonly title: string;
  readonly detail: string;
  readonly code: string;
  readonly errors: readonly ProblemIssue[];
}

/** Thrown by the API client for every failed request: it carries the {@link Problem} to show. */
export class ApiError extends Error {
  constructor(readonly problem: Problem) {
    super(`${problem.title}: ${problem.detail}`);
    this.name = 'ApiError';
  }
}

const text = (value: unknown, fallback: string, max = 300): string =>
  typeof value === 'string' && value.trim() !== '' ? value.slice(0, max) : fallback;

/**
 * Reads a problem+json body defensively: only the documented members, each checked and bounded, so a malformed or
 * hostile body cannot inject anything but short text into the page (Preact escapes it anyway).
 */
export function problemFromBody(status: number, body: unknown): Problem {
  const record = typeof body === 'object' && body !== null ? (body as Record<string, unknown>) : {};
  const errors = Array.isArray(record.errors)
    ? record.errors.slice(0, 20).flatMap((issue: unknown) => {
        const item = typeof issue === 'object' && issue !== null ? (issue as Record<string, unknown>) : {};
        return typeof item.message === 'string' ? [{ path: text(item.path, ''), message: text(item.message, '') }] : [];
      })
    : [];
  return {
    status,
    title: text(record.title, `HTTP ${status}`),
    detail: text(record.detail, `The API answered HTTP ${status}.`),
    code: text(record.code, `http_${status}`, 64),
    errors,
  };
}

/** Turns anything thrown into a {@link Problem}; a non-API error becomes a generic one (its text is not shown). */
export function toProblem(error: unknown): Problem {
  if (error instanceof ApiError) return error.problem;
  return { status: 0, title: 'Something went wrong', detail: 'The console hit an unexpected error. Reload the page and try again.', code: 'console_error', errors: [] };
}
