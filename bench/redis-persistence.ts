import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { noCleanups, type Cleanups } from './cleanups.js';

/** The persistence settings {@link withFsyncAlways} changes and restores. */
export interface RedisPersistence {
  readonly appendonly: string;
  readonly appendfsync: string;
}

/**
 * Runs `work` with Redis persisting every write before acknowledging it (`appendonly yes`, `appendfsync always`), the
 * durability a database commit has, then restores the previous settings — also when `work` throws. Switching the
 * append-only file on makes Redis rewrite it in the background first; `work` starts once that rewrite is done.
 * The restore step is registered in `cleanups` while it is pending, so a signal handler can run it.
 */
export async function withFsyncAlways<T>(redisUrl: string, work: (previous: RedisPersistence) => Promise<T>, cleanups: Cleanups = noCleanups): Promise<T> {
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: 3, lazyConnect: true });
  await redis.connect();
  const get = async (name: string) => ((await redis.config('GET', name)) as string[])[1] ?? '';
  const previous: RedisPersistence = { appendonly: await get('appendonly'), appendfsync: await get('appendfsync') };
  let restored = false;
  const restore = async () => {
    if (restored) return;
    restored = true;
    await redis.config('SET', 'appendfsync', previous.appendfsync);
    await redis.config('SET', 'appendonly', previous.appendonly);
  };
  cleanups.set('redis settings', restore);
  try {
    await redis.config('SET', 'appendonly', 'yes');
    await redis.config('SET', 'appendfsync', 'always');
    await waitForRewrite(redis);
    return await work(previous);
  } finally {
    try {
      await restore();
    } finally {
      cleanups.delete('redis settings');
      redis.disconnect();
    }
  }
}

async function waitForRewrite(redis: Redis): Promise<void> {
  for (let waited = 0; waited < 60_000; waited += 50) {
    const info = await redis.info('persistence');
    const field = (name: string) => new RegExp(`^${name}:(\\d+)`, 'm').exec(info)?.[1];
    if (field('aof_enabled') === '1' && field('aof_rewrite_in_progress') === '0' && field('aof_rewrite_scheduled') === '0') return;
    await sleep(50);
  }
  throw new Error('Redis did not finish its append-only file rewrite within 60 s');
}

/** The Redis server version (`INFO server`). */
export async function redisVersion(redisUrl: string): Promise<string> {
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: 3 });
  try {
    return /^redis_version:(.+)$/m.exec(await redis.info('server'))?.[1]?.trim() ?? 'unknown';
  } finally {
    redis.disconnect();
  }
}
