import { describe, expect, it } from 'vitest';
import { parseChaosArgs, UsageError } from '../../chaos/options.js';

describe('npm run chaos arguments', () => {
  it('sizes --quick and the full run as the README documents them', () => {
    expect(parseChaosArgs(['--quick', '--seed', '7'])).toMatchObject({ mode: 'quick', durationSeconds: 60, workers: 3, restarts: 1, partitions: 2, drainSeconds: 30, seed: 7 });
    expect(parseChaosArgs(['--seed=1'])).toMatchObject({ mode: 'full', durationSeconds: 600, workers: 4, restarts: 11, partitions: 20, seed: 1 });
    expect(parseChaosArgs(['--duration', '120', '--workers=2', '--rate', '3', '--restarts', '2', '--keep'])).toMatchObject({
      durationSeconds: 120,
      workers: 2,
      rate: 3,
      restarts: 2,
      keep: true,
    });
  });

  it('schedules a network partition about every 30 s of faults, at least one, unless told otherwise', () => {
    expect(parseChaosArgs(['--quick', '--duration', '10']).partitions).toBe(1);
    expect(parseChaosArgs(['--duration', '120']).partitions).toBe(4);
    expect(parseChaosArgs(['--quick', '--partitions', '0']).partitions).toBe(0);
    expect(parseChaosArgs(['--partitions=7']).partitions).toBe(7);
  });

  it.each([
    [['--bogus'], /unknown option --bogus/],
    [['--partitions', '-1'], /--partitions/],
    [['--partitions', '1.5'], /--partitions/],
    [['--duration'], /--duration needs a value/],
    [['--duration', '5'], /--duration/],
    [['--workers', '0'], /--workers/],
    [['--seed', '-1'], /--seed/],
    [['--rate', 'fast'], /--rate/],
  ])('refuses %j with a usage error naming the problem', (argv, message) => {
    expect(() => parseChaosArgs(argv)).toThrow(UsageError);
    expect(() => parseChaosArgs(argv)).toThrow(message);
  });
});
