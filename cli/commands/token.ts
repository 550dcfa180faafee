import { parseArgs } from 'node:util';
import { z } from 'zod';
import { loadConfig } from '../../lib/config.js';
import { localDevSecret } from '../../lib/local/dev-secret.js';
import { signDevToken } from '../../lib/local/dev-token.js';
import { OwnerUserIdSchema } from '../../lib/owners/owner-user-id.js';
import { parseOrThrow } from '../../lib/validation/parse-or-throw.js';
import { parseArguments, print, reportFailure, UsageError, type CliCommand } from '../cli-support.js';

const USAGE = 'usage: durable-ops token <sub> [--scope a,b] [--expires-in 12h]';

const ArgsSchema = z.strictObject({
  sub: OwnerUserIdSchema,
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
 * the local stack's dev secret (`DEV_JWT_SECRET` when set, else the one generated in the local data directory of
 * `DATABASE_URL`, created here if `npm start` has not yet: `localDevSecret`) — that the local HTTP server of the same
 * checkout accepts as the owner `<sub>` (`--scope ops:read,ops:write` for an operator: a token asking for an `ops:`
 * scope also carries the local operator group, which the local stack's operator rule allows, `lib/local/dev-operator.ts`).
 * `<sub>` follows the one owner-id rule (`OwnerUserIdSchema`). Exit code 2 with the usage on bad arguments.
 */
export const tokenCommand: CliCommand = {
  name: 'token',
  summary: 'print a dev JWT for the local stack',
  usage: USAGE,
  async run(args) {
    const parsed = parseArguments(parseTokenArgs, args, USAGE);
    if (!parsed) return 2;
    return reportFailure('token', async () => {
      print(await signDevToken(parsed.sub, await localDevSecret(loadConfig(process.env)), { expiresIn: parsed.expiresIn, scope: parsed.scope }));
      return 0;
    });
  },
};
