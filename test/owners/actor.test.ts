import { describe, expect, it, vi } from 'vitest';
import { assertActor, cliActor, operatorActor } from '../../lib/owners/actor.js';

// The host name is the one outside input here: the OS lets an administrator set one with control characters.
vi.mock('node:os', async (importOriginal) => ({ ...(await importOriginal<typeof import('node:os')>()), hostname: () => 'build\x1b[2K\nstatus  succeeded\u202E' }));

describe('actor labels', () => {
  it('cliActor turns control and format characters of the host name into ?, so its label passes assertActor', () => {
    const label = cliActor();
    expect(label).toMatch(/^cli:(.+@)?build\?\[2K\?status {2}succeeded\?$/);
    expect(() => assertActor(label)).not.toThrow();
  });

  it('operatorActor of a longest owner id is cut to 128 code points, never through a surrogate pair', () => {
    const label = operatorActor(`${'a'.repeat(118)}😀😀`);
    expect(Array.from(label)).toHaveLength(128);
    expect(label.endsWith('a😀')).toBe(true);
    expect(() => assertActor(label)).not.toThrow();
  });
});
