import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../lib/config.js';
import { ConfigError } from '../../lib/errors.js';

describe('configuration', () => {
  it('documented defaults apply when the environment is empty, and the result is frozen', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      PORT: 3000,
      LEASE_SECONDS: 30,
      HEARTBEAT_SECONDS: 10,
      SWEEP_INTERVAL_SECONDS: 15,
      MAX_ATTEMPTS: 3,
      QUEUED_DEADLINE_SECONDS: 900,
      RETENTION_DAYS: 30,
      DEMO_TASKS: false,
      DATABASE_URL: 'sqlite:.data/durable-ops.sqlite',
    });
    expect(Object.isFrozen(config)).toBe(true);
  });

  it('the heartbeat follows a shortened lease unless set explicitly', () => {
    expect(loadConfig({ LEASE_SECONDS: '6' }).HEARTBEAT_SECONDS).toBe(2);
    expect(loadConfig({ LEASE_SECONDS: '6', HEARTBEAT_SECONDS: '5' }).HEARTBEAT_SECONDS).toBe(5);
  });

  it('an invalid environment is refused with every offending variable named', () => {
    expect(() => loadConfig({ PORT: 'eighty' })).toThrow(ConfigError);
    expect(() => loadConfig({ PORT: 'eighty', MAX_ATTEMPTS: '0' })).toThrow(/PORT.*MAX_ATTEMPTS/);
    expect(() => loadConfig({ LEASE_SECONDS: '6', HEARTBEAT_SECONDS: '6' })).toThrow(/HEARTBEAT_SECONDS must be less than LEASE_SECONDS/);
    expect(() => loadConfig({ DEV_JWT_SECRET: 'short' })).toThrow(/DEV_JWT_SECRET/);
  });
});
