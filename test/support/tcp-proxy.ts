import { createServer, connect, type Server, type Socket } from 'node:net';

/**
 * A loopback TCP proxy a test puts between a client and MariaDB so that it can cut the connection for real: `cut()`
 * stops every byte in both directions (open connections hang, as in a network partition, and new ones are accepted but
 * never answered); `restore()` resets the connections held during the cut (as a long partition ends) and forwards new
 * ones again.
 */
export interface TcpProxy {
  /** The port the proxy listens on (127.0.0.1). */
  readonly port: number;
  cut(): void;
  restore(): void;
  close(): Promise<void>;
}

/** Starts a proxy on a free loopback port that forwards to `targetHost:targetPort`. */
export async function startTcpProxy(targetHost: string, targetPort: number): Promise<TcpProxy> {
  const pairs = new Set<{ client: Socket; upstream: Socket }>();
  let isCut = false;
  const server: Server = createServer((client) => {
    const upstream = connect(targetPort, targetHost);
    const pair = { client, upstream };
    pairs.add(pair);
    const forget = () => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on('error', forget).on('close', forget);
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
    for (const { client, upstream } of [...pairs]) {
      client.destroy();
      upstream.destroy();
    }
    pairs.clear();
    isCut = false;
  };
  return {
    port: address.port,
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
