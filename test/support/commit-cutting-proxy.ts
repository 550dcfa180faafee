import { connect, createServer, type Server, type Socket } from 'node:net';

/** A MySQL protocol `COM_QUERY` packet of the text `commit` (payload length 7, sequence 0), as kysely sends it. */
const COMMIT_PACKET = Buffer.from([0x07, 0x00, 0x00, 0x00, 0x03, ...Buffer.from('commit')]);

/**
 * A loopback TCP proxy to MariaDB that makes a commit in doubt for real: on each connection, once the client has sent a
 * statement containing `marker` (e.g. an INSERT into a given table), the next `COMMIT` is forwarded to the server, the
 * connection to the server is half-closed behind it (the server reads and runs the commit), and the client's socket is
 * destroyed before any answer comes back — the client sees its connection lost with its commit sent.
 */
export interface CommitCuttingProxy {
  /** The port the proxy listens on (127.0.0.1). */
  readonly port: number;
  /** Commits cut so far. */
  readonly cuts: number;
  close(): Promise<void>;
}

/** Starts a {@link CommitCuttingProxy} to `targetHost:targetPort`. */
export async function startCommitCuttingProxy(targetHost: string, targetPort: number, marker: string): Promise<CommitCuttingProxy> {
  const sockets = new Set<Socket>();
  let cuts = 0;
  const server: Server = createServer((client) => {
    const upstream = connect(targetPort, targetHost);
    sockets.add(client).add(upstream);
    let armed = false;
    let cut = false;
    const close = () => {
      client.destroy();
      // After a cut the half-closed upstream must still deliver the commit: it closes when the server closes it.
      if (!cut) upstream.destroy();
    };
    client.on('error', close).on('close', close);
    upstream.on('error', () => client.destroy()).on('close', () => client.destroy());
    client.on('data', (chunk: Buffer) => {
      if (chunk.includes(marker)) armed = true;
      if (armed && chunk.includes(COMMIT_PACKET)) {
        cuts += 1;
        cut = true;
        upstream.end(chunk);
        client.destroy();
        return;
      }
      upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => {
      if (!cut) client.write(chunk);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('proxy has no port');
  return {
    port: address.port,
    get cuts() {
      return cuts;
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
