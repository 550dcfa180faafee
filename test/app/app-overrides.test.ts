import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { appOverrides } from '../../lib/app/durable-ops-app.js';
import { loadConfig } from '../../lib/config.js';
import { UNREGISTERED_RECONCILIATION } from '../../lib/recovery/recovery-modules.js';
import { defineTask } from '../../lib/tasks/task-definition.js';
import { TaskRegistry } from '../../lib/tasks/task-registry.js';

const echo = defineTask({ type: 'app.echo', paramsSchema: z.strictObject({}), timeoutMs: 1_000, async run() {} });
const config = loadConfig({});

describe('appOverrides (what durable-ops/lambda and durable-ops/local build a runtime from)', () => {
  it("serves exactly the app's task types: a registry is taken as it is, a registry function is called once with the config", () => {
    const registry = new TaskRegistry().register(echo);
    expect(appOverrides({ registry }, config).registry).toBe(registry);
    const seen: unknown[] = [];
    const built = appOverrides({ registry: (c) => (seen.push(c), new TaskRegistry().register(echo)) }, config).registry;
    expect(seen).toEqual([config]);
    expect(built.types()).toEqual(['app.echo']);
  });

  it("shows the app's reconciliation actions next to the built-in modules' on the operator surface", () => {
    const { recoveryModules } = appOverrides(
      { registry: new TaskRegistry(), recoveryModules: [{ module: 'webhook.delivery', reconciliation: 'Ask the receiver.' }] },
      config,
    );
    expect(recoveryModules.reconciliationOf('webhook.delivery')).toBe('Ask the receiver.');
    expect(recoveryModules.reconciliationOf('results.s3')).not.toBe(UNREGISTERED_RECONCILIATION);
    expect(recoveryModules.reconciliationOf('queue.redrive')).not.toBe(UNREGISTERED_RECONCILIATION);
    expect(recoveryModules.reconciliationOf('someone.else')).toBe(UNREGISTERED_RECONCILIATION);
  });

  it('refuses an app module that takes a built-in name, or a malformed one, before anything is built', () => {
    const registry = new TaskRegistry();
    expect(() => appOverrides({ registry, recoveryModules: [{ module: 'results.s3', reconciliation: 'Mine now.' }] }, config)).toThrow(TypeError);
    expect(() => appOverrides({ registry, recoveryModules: [{ module: 'Bad Name', reconciliation: 'x' }] }, config)).toThrow(TypeError);
    expect(() => appOverrides({ registry, recoveryModules: [{ module: 'app.x', reconciliation: 'two\nlines' }] }, config)).toThrow(TypeError);
  });
});
