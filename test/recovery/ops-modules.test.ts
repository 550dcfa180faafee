import { describe, expect, it } from 'vitest';
import { RecoveryModuleRegistry, UNREGISTERED_RECONCILIATION } from '../../lib/recovery/recovery-modules.js';

describe('recovery module registry', () => {
  it('answers each module’s registered reconciliation action, and the documented fallback for any other', () => {
    const modules = new RecoveryModuleRegistry()
      .register({ module: 'queue.wakeup', reconciliation: 'Check the DLQ redrive: look the message up in the main queue.' })
      .register({ module: 'results.s3', reconciliation: 'HEAD the object; delete it if the result row is absent.' });
    expect(modules.reconciliationOf('queue.wakeup')).toBe('Check the DLQ redrive: look the message up in the main queue.');
    expect(modules.reconciliationOf('results.s3')).toBe('HEAD the object; delete it if the result row is absent.');
    expect(modules.reconciliationOf('billing.charge')).toBe(UNREGISTERED_RECONCILIATION);
  });

  it.each([
    ['a module registered twice', [{ module: 'a.b', reconciliation: 'x' }, { module: 'a.b', reconciliation: 'y' }]],
    ['a module name the ledger refuses', [{ module: 'Results S3', reconciliation: 'x' }]],
    ['an empty action', [{ module: 'a.b', reconciliation: '' }]],
    ['an action of two lines', [{ module: 'a.b', reconciliation: 'first\nsecond' }]],
    ['an action over 300 characters', [{ module: 'a.b', reconciliation: 'x'.repeat(301) }]],
  ])('refuses %s with a TypeError', (_name, entries) => {
    const modules = new RecoveryModuleRegistry();
    expect(() => entries.forEach((entry) => modules.register(entry))).toThrow(TypeError);
  });
});
