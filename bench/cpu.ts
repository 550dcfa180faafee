import { readdirSync, readFileSync } from 'node:fs';

/** Linux clock ticks per second of `/proc` CPU times (`getconf CLK_TCK`: 100 on x86-64 and arm64 kernels). */
const CLOCK_TICKS = 100;

/** The server processes whose CPU time a phase reports, by their `/proc/<pid>/stat` command name. */
const SERVERS = { mariadb: 'mariadbd', postgresql: 'postgres', redis: 'redis-server' } as const;

type Server = keyof typeof SERVERS;

/** CPU seconds used so far, from `/proc` (null off Linux). */
export interface CpuSnapshot {
  readonly at: number;
  readonly bench: number;
  /** Per server: its processes' CPU plus that of their reaped children (PostgreSQL's ended backends). */
  readonly servers: Readonly<Record<Server, number>> | null;
  readonly machineBusy: number | null;
  readonly machineTotal: number | null;
}

/** Where CPU time went during a phase, as shares of the machine's capacity (1.0 = every core busy). */
export interface CpuShare {
  /** The benchmark process (the durable-ops code, the drivers, the peers' client libraries). */
  readonly bench: number;
  readonly mariadb: number | null;
  readonly postgresql: number | null;
  readonly redis: number | null;
  /** Everything else on the machine (another workload makes the phase's figures noisy). */
  readonly other: number | null;
  readonly machine: number | null;
}

/** utime + stime (+ cutime + cstime) of one process, in seconds; the command name may hold spaces or parentheses. */
function processTimes(pid: string): { name: string; seconds: number } | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const open = stat.indexOf('(');
    const close = stat.lastIndexOf(')');
    const fields = stat.slice(close + 2).split(' ');
    // After ')': state is field 3; utime, stime, cutime, cstime are fields 14–17, i.e. indexes 11–14 here.
    const ticks = [11, 12, 13, 14].reduce((sum, i) => sum + Number(fields[i] ?? 0), 0);
    return { name: stat.slice(open + 1, close), seconds: ticks / CLOCK_TICKS };
  } catch {
    return null;
  }
}

/** Takes a {@link CpuSnapshot} of this process, the known servers and the whole machine. */
export function cpuSnapshot(): CpuSnapshot {
  const usage = process.cpuUsage();
  let servers: Record<Server, number> | null = null;
  let machineBusy: number | null = null;
  let machineTotal: number | null = null;
  try {
    const totals: Record<Server, number> = { mariadb: 0, postgresql: 0, redis: 0 };
    for (const pid of readdirSync('/proc')) {
      if (!/^\d+$/.test(pid)) continue;
      const times = processTimes(pid);
      if (!times) continue;
      for (const [server, name] of Object.entries(SERVERS) as [Server, string][]) if (times.name === name) totals[server] += times.seconds;
    }
    servers = totals;
    const cpu = (readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '').trim().split(/\s+/).slice(1, 9).map(Number);
    machineTotal = cpu.reduce((a, b) => a + b, 0) / CLOCK_TICKS;
    machineBusy = machineTotal - ((cpu[3] ?? 0) + (cpu[4] ?? 0)) / CLOCK_TICKS;
  } catch {
    // Not Linux: only this process's own figure.
  }
  return { at: performance.now(), bench: (usage.user + usage.system) / 1e6, servers, machineBusy, machineTotal };
}

/** The CPU shares between two snapshots on a machine of `cores` cores. */
export function cpuShare(before: CpuSnapshot, after: CpuSnapshot, cores: number): CpuShare {
  const capacity = ((after.at - before.at) / 1000) * cores;
  const share = (seconds: number) => Math.round((Math.max(0, seconds) / Math.max(1e-9, capacity)) * 1000) / 1000;
  const server = (name: Server) => (before.servers && after.servers ? share(after.servers[name] - before.servers[name]) : null);
  const bench = share(after.bench - before.bench);
  const machine =
    before.machineBusy === null || after.machineBusy === null || before.machineTotal === null || after.machineTotal === null
      ? null
      : Math.round(((after.machineBusy - before.machineBusy) / Math.max(1e-9, after.machineTotal - before.machineTotal)) * 1000) / 1000;
  const [mariadb, postgresql, redis] = [server('mariadb'), server('postgresql'), server('redis')];
  const other = machine === null ? null : Math.round(Math.max(0, machine - bench - (mariadb ?? 0) - (postgresql ?? 0) - (redis ?? 0)) * 1000) / 1000;
  return { bench, mariadb, postgresql, redis, other, machine };
}

/** CPU spent per operation during a timed window, in ms: by the benchmark process and by the system's server. */
export interface CpuPerOp {
  readonly share: CpuShare;
  /** The benchmark process: the system's client code, its driver, the no-op handler and the harness loops. */
  readonly benchMs: number;
  /** The system's server (MariaDB, PostgreSQL or Redis); NaN when not readable. */
  readonly serverMs: number;
}

/** Measures the CPU of a timed window: call the returned function when the window ends. */
export function cpuWindow(server: 'mariadb' | 'postgresql' | 'redis', cores: number): (ops: number) => CpuPerOp {
  const before = cpuSnapshot();
  return (ops) => {
    const after = cpuSnapshot();
    const share = cpuShare(before, after, cores);
    const perOp = (x: number | null) => (x === null || ops <= 0 ? Number.NaN : (x * cores * (after.at - before.at)) / ops);
    return { share, benchMs: perOp(share.bench), serverMs: perOp(share[server]) };
  };
}
