/**
 * `npm run owner -- show <sub>` / `npm run owner -- set-plan <sub> <plan>`: the operator's view of an owner's settings
 * (DESIGN §4) in `DATABASE_URL`. `show` prints the settings the API would use (`{plan, aiEnabled, privacyMode}`,
 * defaults when the owner has no row); `set-plan` sets the plan — an entitlement the owner cannot change over HTTP —
 * and prints the settings after the change. It never migrates: the schema must already be at the latest migration
 * (`npm run migrate`). Exit codes: 0 done, 1 a database or configuration failure, 2 bad arguments (with a usage line).
 */
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { PlanNameSchema } from '../lib/capacity/capacity-policy.js';
import { loadConfig } from '../lib/config.js';
import { parseArgumentsOrExit } from './cli-arguments.js';
import { openStore } from '../lib/db/store.js';
import { FieldLimits } from '../lib/operations/field-limits.js';
import { parseOrThrow } from '../lib/operations/zod-issues.js';
import { loadOwnerSettings, setOwnerPlan } from '../lib/owners/owner-settings.js';

const USAGE = 'usage: npm run owner -- show <sub>\n       npm run owner -- set-plan <sub> <plan>';

/** The owner id as the API sees it: the JWT `sub`, 1–128 characters. */
const SubSchema = z.string().min(1).max(FieldLimits.ownerUserId);

type Command = { readonly name: 'show'; readonly sub: string } | { readonly name: 'set-plan'; readonly sub: string; readonly plan: string };

/**
 * The command named by the arguments. Every failure is a usage error (answered with exit code 2).
 * @throws {TypeError} for any option (`node:util` `parseArgs`, strict).
 * @throws {Error} for an unknown command or a wrong number of arguments.
 * @throws {ValidationError} for a `sub` or plan name out of bounds.
 */
function parseCommand(args: readonly string[]): Command {
  const { positionals } = parseArgs({ args: [...args], options: {}, allowPositionals: true, strict: true });
  const [name, sub, plan, ...extra] = positionals;
  if (name === 'show' && sub !== undefined && plan === undefined) return { name, sub: parseOrThrow(SubSchema, sub, 'sub') };
  if (name === 'set-plan' && sub !== undefined && plan !== undefined && extra.length === 0) {
    return { name, sub: parseOrThrow(SubSchema, sub, 'sub'), plan: parseOrThrow(PlanNameSchema, plan, 'plan') };
  }
  throw new Error(name === 'show' || name === 'set-plan' ? `wrong number of arguments for ${name}` : `unknown command ${JSON.stringify(name ?? '')}`);
}

/** Runs `command` against `DATABASE_URL` and prints the resulting settings as one line of JSON. */
async function run(command: Command): Promise<void> {
  const store = openStore(loadConfig(process.env).DATABASE_URL);
  try {
    const settings = command.name === 'show' ? await loadOwnerSettings(store, command.sub) : await setOwnerPlan(store, command.sub, command.plan);
    process.stdout.write(`${JSON.stringify(settings)}\n`);
  } finally {
    await store.destroy();
  }
}

const command = parseArgumentsOrExit(parseCommand, USAGE);
try {
  await run(command);
} catch (error) {
  process.stderr.write(`owner ${command.name} failed: ${error instanceof Error ? error.message : String(error)}\n(Is DATABASE_URL set and migrated? See npm run migrate.)\n`);
  process.exitCode = 1;
}
