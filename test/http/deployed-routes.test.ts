import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { API_ROUTES } from '../../lib/http/api-routes.js';

/** The `httpApi` events of the `api` function in serverless.yml, as `METHOD path` with their authorizer name. */
function deployedEvents(): { events: string[]; declared: number } {
  const yaml = readFileSync(new URL('../../serverless.yml', import.meta.url), 'utf8');
  const api = /\n {2}api:\n([\s\S]*?)\n {2}\w+:\n/.exec(yaml.slice(yaml.indexOf('\nfunctions:\n')))?.[1] ?? '';
  const pattern = /- httpApi:\n\s+method: (\w+)\n\s+path: (\S+)\n\s+authorizer:\n\s+name: (\w+)\n/g;
  return {
    events: [...api.matchAll(pattern)].map(([, method, path, authorizer]) => `${method} ${path} ${authorizer}`),
    declared: api.split('- httpApi:').length - 1,
  };
}

describe('serverless.yml', () => {
  it('deploys exactly the routes of API_ROUTES, every one behind the jwt authorizer', () => {
    const { events, declared } = deployedEvents();
    expect(declared).toBe(events.length);
    expect(events.sort()).toEqual(API_ROUTES.map((route) => `${route.method} ${route.path} jwt`).sort());
  });
});
