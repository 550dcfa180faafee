import { parseArgs } from 'node:util';
import { z } from 'zod';
import { loadConfig } from '../lib/config.js';
import { signDevToken } from '../lib/http/auth.js';

/**
 * `npm run token -- <sub> [--scope a,b] [--expires-in 12h]`: prints a dev JWT for the local stack — HS256, signed
 * with `DEV_JWT_SECRET` from the environment (or its local default) — that the local HTTP server accepts as the
 * owner `<sub>`. Exit code 2 with a usage line on bad arguments.
 */

const USAGE = 'usage: npm run token -- <sub> [--scope a,b] [--expires-in 12h]';

const ArgsSchema = z.strictObject({
  sub: z.string().min(1, 'the subject (user id) is required').max(128),
  scope: z.array(z.string().min(1)).max(32),
  expiresIn: z.string().regex(/^[1-9][0-9]{0,5}(s|m|h|d)$/, 'must be a number and a unit s, m, h or d, e.g. 12h'),
});

try {
  const { values, positionals } = parseArgs({
    options: { scope: { type: 'string' }, 'expires-in': { type: 'string' } },
    allowPositionals: true,
  });
  if (positionals.length > 1) throw new Error('only one subject may be given');
  const args = ArgsSchema.parse({
    sub: positionals[0] ?? '',
    scope: values.scope === undefined ? [] : values.scope.split(',').filter(Boolean),
    expiresIn: values['expires-in'] ?? '12h',
  });
  const config = loadConfig(process.env);
  process.stdout.write(`${await signDevToken(args.sub, config.DEV_JWT_SECRET, { expiresIn: args.expiresIn, scope: args.scope })}\n`);
} catch (error) {
  const detail = error instanceof z.ZodError ? error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`).join('; ') : String(error);
  process.stderr.write(`${detail}\n${USAGE}\n`);
  process.exitCode = 2;
}
