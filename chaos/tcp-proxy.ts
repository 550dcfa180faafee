import { createServer, connect, type Server, type Socket } from 'node:net';

/**
 * A loopback TCP proxy between one worker process and MariaDB (the harness owns it; the self-fencing test uses it
 * too), so that the fault injector can partition that worker from the database for real: {@link TcpProxy.cut} stops every
 * byte in both directions — open connections hang, as in a network partition, and so do new ones (accepted, never
 * answered); neither side learns that the other closed. {@link TcpProxy.restore} resets every connection held during
 * the cut (as a long partition ends: both ends find their connection dead) and forwards new ones again.
 */
export interface TcpProxy {
  /** The port the proxy listens on (127.0.0.1). */
  readonly port: number;
  /** Whether the proxy is cut now. */
  readonly isCut: boolean;
  cut(): void;
  restore(): void;
  close(): Promise<void>;
}

/** Starts a proxy on a free loopback port that forwards to `targetHost:targetPort`. */
export async function startTcpProxy(targetHost: string, targetPort: number): Promise<TcpProxy> {
  const pairs = new Set<{ client: Socket; upstream?: Socket }>();
  let isCut = false;
  const server: Server = createServer((client) => {
    const pair: { client: Socket; upstream?: Socket } = { client };
    pairs.add(pair);
    const forget = () => {
      // During a cut a close does not cross the partition: the pair stays held until restore() resets it.
      if (isCut) return;
      pairs.delete(pair);
      client.destroy();
      pair.upstream?.destroy();
    };
    client.on('error', forget).on('close', forget);
    // A connection opened during a cut is held without reaching the server (restore() resets it).
    if (isCut) return;
    const upstream = connect(targetPort, targetHost);
    pair.upstream = upstream;
    upstream.on('error', forget).on('close', forget);
    client.on('data', (chunk) => {
      if (!isCut) upstream.write(chunk);
    });
    upstream.on('data', (chunk) => {
      if (!isCut) client.write(chunk);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('proxy has no port');
  const restore = () => {
    isCut = false;
    for (const { client, upstream } of [...pairs]) {
      client.destroy();
      upstream?.destroy();
    }
    pairs.clear();
  };
  return {
    port: address.port,
    get isCut() {
      return isCut;
    },
    cut() {
      isCut = true;
    },
    restore,
    async close() {
      restore();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
