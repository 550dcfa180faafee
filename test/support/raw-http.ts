import { request as httpRequest, type OutgoingHttpHeaders } from 'node:http';

/** What {@link sendRaw} got back. */
export interface RawAnswer {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly text: string;
  /** The client's own error after the answer arrived (a reset while it was still sending), if any. */
  readonly clientError?: string;
}

/** One request for {@link sendRaw}. */
export interface RawRequest {
  /** @default 'GET' */
  readonly method?: string;
  /** Sent exactly as written (fetch and `new URL` would normalise it). */
  readonly path: string;
  /** Exactly these headers, `Host` included (fetch cannot set it); never an `Expect`. */
  readonly headers?: OutgoingHttpHeaders;
  /** A Buffer is written in one go with its `Content-Length`; a list of chunks goes with chunked encoding. @default none */
  readonly body?: Buffer | readonly Buffer[];
}

/**
 * Sends `request` to `base` (`http://host:port`) through node's http client and resolves with the answer — also when the
 * connection is reset after the answer arrived (then `clientError` says how); rejects when no answer came at all.
 */
export function sendRaw(base: string, request: RawRequest): Promise<RawAnswer> {
  const { hostname, port } = new URL(base);
  const length = Buffer.isBuffer(request.body) ? { 'content-length': String(request.body.byteLength) } : {};
  return new Promise((resolve, reject) => {
    let answer: Omit<RawAnswer, 'clientError'> | undefined;
    const req = httpRequest({ hostname, port, path: request.path, method: request.method ?? 'GET', headers: { ...length, ...request.headers } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => (answer = { status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('error', (error: NodeJS.ErrnoException) => (answer ? resolve({ ...answer, clientError: error.code ?? error.message }) : reject(error)));
    req.on('close', () => (answer ? resolve(answer) : undefined));
    if (Buffer.isBuffer(request.body)) req.write(request.body);
    else for (const chunk of request.body ?? []) req.write(chunk);
    req.end();
  });
}
