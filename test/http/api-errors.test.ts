import { loadCapacityPolicy } from '../../lib/capacity/capacity-policy.js';
import middy from '@middy/core';
import { describe, expect, it, vi } from 'vitest';
import { loadConfig } from '../../lib/config.js';
import { openStore } from '../../lib/db/store.js';
import { createApiHandler, type ApiDeps } from '../../lib/http/api-handler.js';
import { problemDetailsMiddleware, ProblemSchema } from '../../lib/http/problem-details.js';
import type { Logger } from '../../lib/logger.js';
import { noopMetrics } from '../../lib/observability/metrics.js';
import { policyFromConfig } from '../../lib/operations/operation-policy.js';
import { createRecoveryModules } from '../../lib/recovery/recovery-modules.js';
import { demoWaitTask } from '../../lib/tasks/demo-wait.js';
import { TaskRegistry } from '../../lib/tasks/task-registry.js';
import { apiEvent, lambdaContext, parseResponse, type ApiEventInput } from '../support/api-events.js';
import { RecordingWakeups } from './api-test-app.js';

function recordingLogger(): Logger & { errors: Array<[string, Record<string, unknown> | undefined]> } {
  const errors: Array<[string, Record<string, unknown> | undefined]> = [];
  return { errors, debug() {}, info() {}, warn() {}, error: (message, context) => void errors.push([message, context]) };
}

/** A handler whose dependencies must never be built: routing and authentication refusals happen before. */
function handlerWithoutDeps() {
  const build = vi.fn(async (): Promise<ApiDeps> => {
    throw new Error('dependencies were built');
  });
  const handler = createApiHandler(build);
  return { build, call: async (input: ApiEventInput) => parseResponse(await handler(apiEvent(input), lambdaContext())) };
}

describe('API errors as RFC 9457 problem details', () => {
  it('an event without JWT claims answers 401 problem+json with WWW-Authenticate: Bearer, before any dependency is built', async () => {
    const { build, call } = handlerWithoutDeps();
    for (const path of ['/api/operations', '/api/nowhere']) {
      const response = await call({ method: 'GET', path, owner: null });
      expect(response.status).toBe(401);
      expect(response.headers['content-type']).toBe('application/problem+json');
      expect(response.headers['www-authenticate']).toBe('Bearer');
      expect(ProblemSchema.parse(response.json)).toMatchObject({ status: 401, code: 'unauthorized', type: 'https://durable-ops.dev/problems/unauthorized' });
    }
    expect(build).not.toHaveBeenCalled();
  });

  it.each([
    ['an empty sub', ''],
    ['a sub of 129 characters', 'u'.repeat(129)],
  ])('%s claim answers 401', async (_name, sub) => {
    const { call } = handlerWithoutDeps();
    expect((await call({ method: 'GET', path: '/api/operations', owner: sub })).status).toBe(401);
  });

  it('an unknown path answers 404 problem+json', async () => {
    const { build, call } = handlerWithoutDeps();
    const response = await call({ method: 'GET', path: '/api/operations/abc/explode', owner: 'alice' });
    expect(response.status).toBe(404);
    expect(response.headers['content-type']).toBe('application/problem+json');
    expect(response.json).toMatchObject({ status: 404, code: 'route_not_found' });
    expect(build).not.toHaveBeenCalled();
  });

  it.each([
    ['DELETE', '/api/operations/0b7c7a3e-0000-4000-8000-000000000000', 'GET'],
    ['PUT', '/api/operations', 'POST, GET'],
    ['GET', '/api/operations/0b7c7a3e-0000-4000-8000-000000000000/cancel', 'POST'],
    ['POST', '/api/notifications', 'GET'],
    ['PUT', '/api/me/settings', 'GET, PATCH'],
    ['PATCH', '/api/operations', 'POST, GET'],
  ])('%s %s answers 405 problem+json with Allow: %s', async (method, path, allow) => {
    const { call } = handlerWithoutDeps();
    const response = await call({ method, path, owner: 'alice' });
    expect(response.status).toBe(405);
    expect(response.headers.allow).toBe(allow);
    expect(response.json).toMatchObject({ status: 405, code: 'method_not_allowed' });
  });

  it('a database failure answers a generic 500 that never echoes internal text, and logs the error', async () => {
    const store = openStore('sqlite::memory:');
    await store.destroy();
    const logger = recordingLogger();
    const handler = createApiHandler({
      store,
      registry: new TaskRegistry().register(demoWaitTask),
      policy: policyFromConfig(loadConfig({})),
      capacity: loadCapacityPolicy(loadConfig({})),
      wakeups: new RecordingWakeups(),
      recoveryModules: createRecoveryModules(),
      logger,
      metrics: noopMetrics,
      operatorRule: undefined,
    });
    const response = parseResponse(await handler(apiEvent({ method: 'GET', path: '/api/operations', owner: 'alice' }), lambdaContext()));
    expect(response.status).toBe(500);
    expect(response.headers['content-type']).toBe('application/problem+json');
    expect(response.json).toEqual({
      type: 'about:blank',
      title: 'Internal Server Error',
      status: 500,
      detail: 'The request could not be completed. Try again later.',
      code: 'internal_error',
    });
    expect(logger.errors).toHaveLength(1);
    expect(logger.errors[0]?.[1]?.errorMessage).toEqual(expect.any(String));
    expect(response.text).not.toContain(String(logger.errors[0]?.[1]?.errorMessage));
  });

  it('any thrown value becomes a 500 whose body never contains the thrown message', async () => {
    const logger = recordingLogger();
    const handler = middy(async () => {
      throw new Error('connect ECONNREFUSED 10.0.0.5:3306 user=admin password=hunter2');
    }).use(problemDetailsMiddleware({ logger: () => logger }));
    const response = parseResponse(await handler(apiEvent({ method: 'GET', path: '/', owner: 'alice' }), lambdaContext()));
    expect(response.status).toBe(500);
    expect(response.text).not.toMatch(/hunter2|ECONNREFUSED|10\.0\.0\.5/);
    expect(logger.errors[0]?.[1]).toMatchObject({ errorName: 'Error', errorMessage: expect.stringContaining('ECONNREFUSED') });
  });
});
