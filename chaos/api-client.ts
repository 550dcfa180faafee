/** The answer of one API call: the HTTP status (0 when the request itself failed) and the parsed JSON body, if any. */
export interface ApiAnswer {
  readonly status: number;
  readonly body: Record<string, unknown> | undefined;
}

/**
 * How an answer is tallied: `network` (status 0), a 5xx by its exact status (`500`, `503`: an internal error and an
 * outage apart), anything else by class (`2xx`, `4xx`).
 */
export function answerKey(status: number): string {
  if (status === 0) return 'network';
  return status >= 500 ? String(status) : `${Math.floor(status / 100)}xx`;
}

/**
 * A minimal client of the durable-ops HTTP API for one owner (a dev token from `signDevToken`), as a browser or a
 * backend would call it. Never throws: a network error is status 0. Each call gives up after `timeoutMs` (**ms**).
 * Every answer (admissions, cancels, retries) is counted in `answers` by {@link answerKey} — pass one record to all the
 * run's clients to tally the run.
 */
export class ApiClient {
  constructor(
    readonly baseUrl: string,
    readonly ownerUserId: string,
    readonly token: string,
    readonly answers: Record<string, number> = {},
    readonly timeoutMs = 15_000,
  ) {}

  /** `POST /api/operations` with an `Idempotency-Key`. */
  admit(key: string, body: unknown): Promise<ApiAnswer> {
    return this.#call('POST', '/api/operations', body, { 'idempotency-key': key });
  }

  /** `POST /api/operations/{id}/cancel`. */
  cancel(id: string): Promise<ApiAnswer> {
    return this.#call('POST', `/api/operations/${encodeURIComponent(id)}/cancel`);
  }

  /** `POST /api/operations/{id}/retry`. */
  retry(id: string): Promise<ApiAnswer> {
    return this.#call('POST', `/api/operations/${encodeURIComponent(id)}/retry`);
  }

  async #call(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<ApiAnswer> {
    const answer = await this.#send(method, path, body, headers);
    const key = answerKey(answer.status);
    this.answers[key] = (this.answers[key] ?? 0) + 1;
    return answer;
  }

  async #send(method: string, path: string, body: unknown, headers: Record<string, string>): Promise<ApiAnswer> {
    try {
      const response = await fetch(`${this.baseUrl}${path}`, {
        method,
        headers: { authorization: `Bearer ${this.token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        signal: AbortSignal.timeout(this.timeoutMs),
      });
      const text = await response.text();
      let parsed: Record<string, unknown> | undefined;
      try {
        parsed = text ? (JSON.parse(text) as Record<string, unknown>) : undefined;
      } catch {
        parsed = undefined;
      }
      return { status: response.status, body: parsed };
    } catch {
      return { status: 0, body: undefined };
    }
  }
}
