import { parseArgs } from 'node:util';
import { z } from 'zod';
import { loadConfig } from '../../lib/config.js';
import { signDevToken } from '../../lib/local/dev-token.js';
import { parseOrThrow } from '../../lib/validation/parse-or-throw.js';
import { parseArguments, print, reportFailure, UsageError, type CliCommand } from '../cli-support.js';

const USAGE = 'usage: durable-ops token <sub> [--scope a,b] [--expires-in 12h]';

const ArgsSchema = z.strictObject({
  sub: z.string().min(1, 'the subject (user id) is required').max(128),
  scope: z.array(z.string().min(1)).max(32),
  expiresIn: z.string().regex(/^[1-9][0-9]{0,5}(s|m|h|d)$/, 'must be a number and a unit s, m, h or d, e.g. 12h'),
});

function parseTokenArgs(args: readonly string[]): z.output<typeof ArgsSchema> {
  const { values, positionals } = parseArgs({ args: [...args], options: { scope: { type: 'string' }, 'expires-in': { type: 'string' } }, allowPositionals: true, strict: true });
  if (positionals.length > 1) throw new UsageError('only one subject may be given');
  return parseOrThrow(
    ArgsSchema,
    { sub: positionals[0] ?? '', scope: values.scope === undefined ? [] : values.scope.split(',').filter(Boolean), expiresIn: values['expires-in'] ?? '12h' },
    'argument',
  );
}

/**
 * `durable-ops token <sub> [--scope a,b] [--expires-in 12h]`: prints a dev JWT for the local stack — HS256, signed with
 * `DEV_JWT_SECRET` from the environment (or its local default) — that the local HTTP server accepts as the owner `<sub>`
 * (`--scope ops:read,ops:write` for an operator). Exit code 2 with the usage on bad arguments.
 */
export const tokenCommand: CliCommand = {
  name: 'token',
  summary: 'print a dev JWT for the local stack',
  usage: USAGE,
  async run(args) {
    const parsed = parseArguments(parseTokenArgs, args, USAGE);
    if (!parsed) return 2;
    return reportFailure('token', async () => {
      print(await signDevToken(parsed.sub, loadConfig(process.env).DEV_JWT_SECRET, { expiresIn: parsed.expiresIn, scope: parsed.scope }));
      return 0;
    });
  },
};
