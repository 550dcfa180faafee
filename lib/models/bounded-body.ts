import type { IncomingMessage } from 'node:http';

/** What {@link readBoundedStream} and {@link readBoundedRequest} return: the bytes, or that the limit was passed. */
export type BoundedBody = { readonly ok: true; readonly bytes: Buffer } | { readonly ok: false; readonly reason: 'too_large' };

const TOO_LARGE: BoundedBody = Object.freeze({ ok: false, reason: 'too_large' });

/**
 * Reads a WHATWG byte stream (a `fetch` response body) until it ends, or until more than `maxBytes` bytes arrived —
 * then cancels the stream (the transport stops reading and may close the connection) and returns `too_large`, so
 * no more than `maxBytes` plus one chunk is ever held in memory. A `null` body reads as empty.
 * @throws whatever the stream throws (e.g. an `AbortError` when the request's signal fires mid-body).
 */
export async function readBoundedStream(body: ReadableStream<Uint8Array> | null, maxBytes: number): Promise<BoundedBody> {
  if (body === null) return { ok: true, bytes: Buffer.alloc(0) };
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return { ok: true, bytes: Buffer.concat(chunks, total) };
      total += value.byteLength;
      if (total > maxBytes) {
        await reader.cancel().catch(() => undefined);
        return TOO_LARGE;
      }
      chunks.push(value);
    }
  } finally {
    reader.releaseLock();
  }
}

/**
 * Reads a `node:http` request body until it ends, or until more than `maxBytes` bytes arrived — then stops reading
 * (pauses the request and drops what it buffered) and returns `too_large`; the caller answers (e.g. 413) and the
 * server closes the connection. Used by the local stand-in servers.
 * @throws {Error} when the request errors or is aborted by the client before it ends.
 */
export function readBoundedRequest(request: IncomingMessage, maxBytes: number): Promise<BoundedBody> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let total = 0;
    const onData = (chunk: Buffer): void => {
      total += chunk.length;
      if (total > maxBytes) {
        cleanup();
        request.pause();
        chunks.length = 0;
        resolve(TOO_LARGE);
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = (): void => {
      cleanup();
      resolve({ ok: true, bytes: Buffer.concat(chunks, total) });
    };
    const onError = (error: Error): void => {
      cleanup();
      reject(error);
    };
    const onAborted = (): void => onError(new Error('request closed before its body ended'));
    const cleanup = (): void => {
      request.off('data', onData).off('end', onEnd).off('error', onError).off('close', onClose);
    };
    const onClose = (): void => {
      if (!request.complete) onAborted();
    };
    request.on('data', onData).on('end', onEnd).on('error', onError).on('close', onClose);
  });
}
