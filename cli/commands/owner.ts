import { parseArgs } from 'node:util';
import { PlanNameSchema } from '../../lib/capacity/capacity-policy.js';
import { loadConfig } from '../../lib/config.js';
import { openStore } from '../../lib/db/store.js';
import { parseOrThrow } from '../../lib/validation/parse-or-throw.js';
import { loadOwnerSettings, setOwnerPlan } from '../../lib/owners/owner-settings.js';
import { OwnerUserIdSchema } from '../../lib/owners/owner-user-id.js';
import { MIGRATE_HINT, parseArguments, print, reportFailure, UsageError, type CliCommand } from '../cli-support.js';

const USAGE = 'usage: durable-ops owner show <sub>\n       durable-ops owner set-plan <sub> <plan>';


type Command = { readonly name: 'show'; readonly sub: string } | { readonly name: 'set-plan'; readonly sub: string; readonly plan: string };

function parseCommand(args: readonly string[]): Command {
  const { positionals } = parseArgs({ args: [...args], options: {}, allowPositionals: true, strict: true });
  const [name, sub, plan, ...extra] = positionals;
  if (name === 'show' && sub !== undefined && plan === undefined) return { name, sub: parseOrThrow(OwnerUserIdSchema, sub, 'sub') };
  if (name === 'set-plan' && sub !== undefined && plan !== undefined && extra.length === 0) {
    return { name, sub: parseOrThrow(OwnerUserIdSchema, sub, 'sub'), plan: parseOrThrow(PlanNameSchema, plan, 'plan') };
  }
  throw new UsageError(name === 'show' || name === 'set-plan' ? `wrong number of arguments for ${name}` : `unknown command ${JSON.stringify(name ?? '')}`);
}

/**
 * `durable-ops owner show <sub>` / `owner set-plan <sub> <plan>`: the operator's view of an owner's settings (docs/design.md §4)
 * in `DATABASE_URL`. `show` prints the settings the API would use (`{plan, aiEnabled, privacyMode}`, defaults when the
 * owner has no row); `set-plan` sets the plan — an entitlement the owner cannot change over HTTP — and prints the
 * settings after the change, as one line of JSON. It never migrates.
 */
export const ownerCommand: CliCommand = {
  name: 'owner',
  summary: "show an owner's settings, or set their plan",
  usage: USAGE,
  async run(args) {
    const command = parseArguments(parseCommand, args, USAGE);
    if (!command) return 2;
    return reportFailure(
      `owner ${command.name}`,
      async () => {
        const store = openStore(loadConfig(process.env).DATABASE_URL);
        try {
          const settings = command.name === 'show' ? await loadOwnerSettings(store, command.sub) : await setOwnerPlan(store, command.sub, command.plan);
          print(JSON.stringify(settings));
          return 0;
        } finally {
          await store.destroy();
        }
      },
      MIGRATE_HINT,
    );
  },
};
