import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { CapacityFileSchema, loadCapacityPolicy } from '../../lib/capacity/capacity-policy.js';
import { loadConfig } from '../../lib/config.js';

const EXAMPLE = fileURLToPath(new URL('../../config/capacity.example.json', import.meta.url));

describe('config/capacity.example.json', () => {
  it('is a valid capacity file', () => {
    const file = CapacityFileSchema.parse(JSON.parse(readFileSync(EXAMPLE, 'utf8')));
    expect(file.routes).toEqual({ 'local-model': 1 });
  });

  it('is the example the README shows', () => {
    const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
    const section = readme.slice(readme.indexOf('## Capacity and owner settings'));
    const shown = /```json\n([\s\S]*?)```/.exec(section)?.[1];
    expect(JSON.parse(shown ?? 'null')).toEqual(JSON.parse(readFileSync(EXAMPLE, 'utf8')));
  });

  it('resolves as the README documents: task type + plan → task type → plan → env default; global: task type → env', () => {
    const capacity = loadCapacityPolicy(loadConfig({ CAPACITY_CONFIG_FILE: EXAMPLE, CAPACITY_PER_OWNER: '10', CAPACITY_GLOBAL: '1000' }));
    expect(capacity.admissionLimits('demo.wait', 'pro')).toEqual({ perOwner: 20, global: 200 });
    expect(capacity.admissionLimits('demo.wait', 'free')).toEqual({ perOwner: 5, global: 200 });
    expect(capacity.admissionLimits('report.build', 'pro')).toEqual({ perOwner: 50, global: 1000 });
    expect(capacity.admissionLimits('report.build', 'free')).toEqual({ perOwner: 10, global: 1000 });
    expect(capacity.routeLimit('local-model')).toBe(1);
    expect(capacity.routeLimit('external')).toBeUndefined();
  });
});
