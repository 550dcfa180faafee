import { availableParallelism, cpus, totalmem } from 'node:os';

/** The machine and servers a run measured. */
export interface Machine {
  readonly cpuModel: string;
  readonly cores: number;
  readonly memoryGiB: number;
  readonly node: string;
  readonly platform: string;
  readonly mariadb: string;
  /** The MariaDB settings that decide commit cost and cache hits. */
  readonly mariadbSettings: string;
  readonly postgresql: string;
  readonly redis: string;
}

/** The machine facts Node can tell; the servers' versions are filled in by the phases that talk to them. */
export function localMachine(): Omit<Machine, 'mariadb' | 'mariadbSettings' | 'postgresql' | 'redis'> {
  return {
    cpuModel: cpus()[0]?.model.trim() ?? 'unknown',
    cores: availableParallelism(),
    memoryGiB: Math.round((totalmem() / 2 ** 30) * 10) / 10,
    node: process.version,
    platform: `${process.platform} ${process.arch}`,
  };
}
