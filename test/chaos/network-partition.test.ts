import { createServer, connect, type Server, type Socket } from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { startCallRecorder } from '../../chaos/call-recorder.js';
import { FaultInjector, type FaultTargets } from '../../chaos/faults.js';
import type { WorkerFleet } from '../../chaos/fleet.js';
import { Random } from '../../chaos/random.js';
import { startTcpProxy, type TcpProxy } from '../../chaos/tcp-proxy.js';

/** What a socket received so far, and whether it closed. */
function watch(socket: Socket) {
  const seen = { data: '', closed: false };
  socket.on('data', (chunk) => (seen.data += chunk.toString()));
  socket.on('close', () => (seen.closed = true));
  socket.on('error', () => undefined);
  return seen;
}
const open = (port: number) =>
  new Promise<Socket>((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => resolve(socket));
    socket.once('error', reject);
  });

describe("the harness's database proxy", () => {
  let echo: Server;
  let upstreamConnections = 0;
  let proxy: TcpProxy;

  beforeAll(async () => {
    echo = createServer((socket) => {
      upstreamConnections += 1;
      socket.on('error', () => undefined);
      socket.pipe(socket);
    });
    await new Promise<void>((resolve) => echo.listen(0, '127.0.0.1', resolve));
    proxy = await startTcpProxy('127.0.0.1', (echo.address() as { port: number }).port);
  });
  afterAll(async () => {
    await proxy?.close();
    await new Promise<void>((resolve) => echo.close(() => resolve()));
  });

  it('cut: open connections and new ones hang; restore: the held ones are reset and new ones flow again', async () => {
    const before = await open(proxy.port);
    const early = watch(before);
    before.write('a');
    await vi.waitFor(() => expect(early.data).toBe('a'));

    proxy.cut();
    expect(proxy.isCut).toBe(true);
    before.write('b');
    const connectionsAtCut = upstreamConnections;
    const during = await open(proxy.port);
    const late = watch(during);
    during.write('c');
    await delay(300);
    expect({ early, late, upstream: upstreamConnections }).toEqual({ early: { data: 'a', closed: false }, late: { data: '', closed: false }, upstream: connectionsAtCut });

    proxy.restore();
    expect(proxy.isCut).toBe(false);
    await vi.waitFor(() => expect([early.closed, late.closed]).toEqual([true, true]));
    expect(early.data).toBe('a');
    const after = await open(proxy.port);
    const fresh = watch(after);
    after.write('d');
    await vi.waitFor(() => expect(fresh.data).toBe('d'));
    after.destroy();
  });
});

describe('the network-partition fault', () => {
  afterEach(() => vi.useRealTimers());

  const fakeProxy = () => {
    const p = { isCut: false, cuts: 0, restores: 0, port: 0, cut: () => ((p.isCut = true), (p.cuts += 1)), restore: () => ((p.isCut = false), (p.restores += 1)), close: async () => undefined };
    return p;
  };
  const injectorWith = (busy: number[], live: number[]) => {
    const proxies = [fakeProxy(), fakeProxy(), fakeProxy()];
    const fleet = { busySlots: () => busy, liveSlots: () => live } as unknown as WorkerFleet;
    const targets = { fleet, random: new Random(3), leaseMs: 5_000, proxies } as unknown as FaultTargets;
    return { injector: new FaultInjector(targets), proxies };
  };

  it('cuts a busy worker off the database for the lease plus 2–5 s, in the background, and counts it once it has lasted', async () => {
    vi.useFakeTimers();
    const { injector, proxies } = injectorWith([1], [0, 1, 2]);
    await injector.partition();
    expect(proxies.map((p) => p.isCut)).toEqual([false, true, false]);
    expect(injector.counts.network_partition).toBe(0);
    await vi.advanceTimersByTimeAsync(7_000 - 1);
    expect(proxies[1]!.isCut).toBe(true);
    await vi.advanceTimersByTimeAsync(3_000);
    expect(proxies[1]).toMatchObject({ isCut: false, cuts: 1, restores: 1 });
    expect(injector.counts.network_partition).toBe(1);
  });

  it('takes an idle live worker when none is busy, never one already cut, and nothing when none is left', async () => {
    vi.useFakeTimers();
    const { injector, proxies } = injectorWith([], [0, 2]);
    await injector.partition();
    await injector.partition();
    await injector.partition();
    expect(proxies.map((p) => p.cuts)).toEqual([1, 0, 1]);
    await vi.advanceTimersByTimeAsync(10_000);
    expect(injector.counts.network_partition).toBe(2);
  });

  it('heals a partition still in progress when the fault phase ends, uncounted', async () => {
    const { injector, proxies } = injectorWith([0], [0]);
    await injector.partition();
    expect(proxies[0]!.isCut).toBe(true);
    await injector.healPartitions();
    expect(proxies[0]).toMatchObject({ isCut: false, restores: 1 });
    expect(injector.counts.network_partition).toBe(0);
  });

  it('is never drawn at random (it is scheduled, as MariaDB restarts are)', async () => {
    const { injector, proxies } = injectorWith([0, 1, 2], [0, 1, 2]);
    const kinds: string[] = [];
    const spy = vi.spyOn(injector, 'inject').mockImplementation(async (kind) => void kinds.push(kind));
    for (let i = 0; i < 200; i++) await injector.injectRandom();
    spy.mockRestore();
    expect(kinds).not.toContain('network_partition');
    expect(kinds).not.toContain('restart_mariadb');
    expect(proxies.every((p) => p.cuts === 0)).toBe(true);
  });
});

describe("the chaos task's external service", () => {
  it('stamps each call on arrival with the run that made it, in a thread of its own', async () => {
    const recorder = await startCallRecorder();
    try {
      const before = Date.now();
      for (const attempt of [1, 2]) {
        const answer = await fetch(`${recorder.url}/call?operationId=op-1&cycle=0&attempt=${attempt}&worker=worker-0%231`, { method: 'POST' });
        expect(answer.status).toBe(204);
      }
      expect((await fetch(`${recorder.url}/call?cycle=0`, { method: 'POST' })).status).toBe(400);
      const after = Date.now();
      const { calls, refused } = await recorder.calls();
      expect(refused).toBe(1);
      expect(calls.map(({ atMs: _, ...rest }) => rest)).toEqual([
        { operationId: 'op-1', cycle: 0, attempt: 1, worker: 'worker-0#1' },
        { operationId: 'op-1', cycle: 0, attempt: 2, worker: 'worker-0#1' },
      ]);
      for (const call of calls) expect(call.atMs).toBeGreaterThanOrEqual(before), expect(call.atMs).toBeLessThanOrEqual(after);
      expect(calls[0]!.atMs).toBeLessThanOrEqual(calls[1]!.atMs);
    } finally {
      await recorder.close();
    }
  });
});
