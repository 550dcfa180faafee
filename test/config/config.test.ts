import { describe, expect, it } from 'vitest';
import { createModelRoutes } from '../../lib/ai/model-routes.js';
import { loadConfig } from '../../lib/config.js';
import { createRegistry } from '../../lib/runtime.js';
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

  it('no dev secret ships with the code: DEV_JWT_SECRET has no default (the local stack generates one per checkout)', () => {
    expect(loadConfig({}).DEV_JWT_SECRET).toBeUndefined();
    expect(loadConfig({ DEV_JWT_SECRET: 'x'.repeat(32) }).DEV_JWT_SECRET).toBe('x'.repeat(32));
  });

  it('LOCAL_ALLOWED_HOSTS is a list of bare host names, lower-cased; a scheme, port, path or wildcard is refused naming it', () => {
    expect(loadConfig({}).LOCAL_ALLOWED_HOSTS).toEqual([]);
    expect(loadConfig({ LOCAL_ALLOWED_HOSTS: ' DevBox.lan, 192.168.1.20 ,devbox.lan,[fd00::1]' }).LOCAL_ALLOWED_HOSTS).toEqual(['devbox.lan', '192.168.1.20', '[fd00::1]']);
    for (const bad of ['http://devbox.lan', 'devbox.lan:3000', 'devbox.lan/x', '*.lan', '*', 'a b']) {
      expect(() => loadConfig({ LOCAL_ALLOWED_HOSTS: bad }), bad).toThrow(/LOCAL_ALLOWED_HOSTS/);
    }
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

  it('AI configuration: model defaults, an external route needs its model name, AI tasks need a local route', () => {
    expect(loadConfig({})).toMatchObject({
      AI_TASKS: false,
      MODEL_LOCAL_NAME: 'local',
      MODEL_REQUEST_TIMEOUT_MS: 120_000,
      MODEL_MAX_RESPONSE_BYTES: 1_048_576,
      MODEL_BREAKER_FAILURES: 5,
      MODEL_BREAKER_COOLDOWN_SECONDS: 30,
    });
    expect(() => loadConfig({ MODEL_EXTERNAL_URL: 'https://api.example.test/v1' })).toThrow(/MODEL_EXTERNAL_NAME/);
    expect(() => createRegistry(loadConfig({ AI_TASKS: '1' }))).toThrow(/MODEL_LOCAL_URL/);
    expect(createRegistry(loadConfig({ AI_TASKS: '1', MODEL_LOCAL_URL: 'http://127.0.0.1:8080/v1' })).types()).toEqual(['strategy.snapshot']);
  });

  it('a malformed external key, or a key without an external route, is refused naming the variable, never echoing the key', () => {
    const secret = 'sk-LEAK ME-0123456789';
    for (const env of [{ MODEL_EXTERNAL_URL: 'https://api.example.test/v1', MODEL_EXTERNAL_NAME: 'm', MODEL_EXTERNAL_API_KEY: secret }, { MODEL_EXTERNAL_API_KEY: 'sk-valid-but-alone' }]) {
      let message = '';
      try {
        loadConfig(env);
      } catch (error) {
        message = String(error);
      }
      expect(message).toMatch(/MODEL_EXTERNAL_(API_KEY|URL)/);
      expect(message).not.toContain(secret);
    }
  });

  it('a model base URL with a query or fragment is refused (the client appends /chat/completions)', () => {
    expect(() => createModelRoutes(loadConfig({ MODEL_LOCAL_URL: 'http://127.0.0.1:8080/v1?token=abc' }))).toThrow(/MODEL_LOCAL_URL.*query/);
  });

  it('a malformed model route is refused naming the variable, not its value', () => {
    const config = loadConfig({ MODEL_LOCAL_URL: 'lambda:bad name!' });
    expect(() => createModelRoutes(config)).toThrow(ConfigError);
    expect(() => createModelRoutes(config)).toThrow(/MODEL_LOCAL_URL/);
    expect(() => createModelRoutes(config)).not.toThrow(/bad name/);
  });
});
