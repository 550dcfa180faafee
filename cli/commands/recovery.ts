import { parseArgs } from 'node:util';
import { z } from 'zod';
import { loadConfig } from '../../lib/config.js';
import { openStore, type Store } from '../../lib/db/store.js';
import { OperationIdSchema } from '../../lib/operations/operation-id.js';
import { parseOrThrow } from '../../lib/validation/parse-or-throw.js';
import { verifyAllChains } from '../../lib/recovery/chain-verification.js';
import { describeRecoveryOperation, RecoveryDetailsSchema, type RecoveryDetails } from '../../lib/recovery/recovery-details.js';
import { createRecoveryModules } from '../../lib/recovery/recovery-modules.js';
import { listUnresolved, UnresolvedListQuerySchema, UnresolvedRecoveryDtoSchema, type UnresolvedRecoveryDto } from '../../lib/recovery/unresolved.js';
import { MIGRATE_HINT, parseArguments, print, reportFailure, table, UsageError, type CliCommand } from '../cli-support.js';

const USAGE = [
  'usage: durable-ops recovery list [--state recovery_required|recovering|outcome_unknown|running] [--limit 1-100] [--json]',
  '       durable-ops recovery verify [--json]',
  '       durable-ops recovery show <id> [--json]',
].join('\n');

type Command =
  | { readonly name: 'list'; readonly json: boolean; readonly query: z.output<typeof UnresolvedListQuerySchema> }
  | { readonly name: 'verify'; readonly json: boolean }
  | { readonly name: 'show'; readonly json: boolean; readonly id: string };

/**
 * The command named by the arguments. Every failure is a usage error (answered with exit code 2).
 * @throws {TypeError} for an unknown option (`node:util` `parseArgs`, strict).
 * @throws {Error} for an unknown command, a wrong number of arguments, or an option the command does not take.
 * @throws {ValidationError} for a state, limit or id out of bounds.
 */
function parseCommand(args: readonly string[]): Command {
  const { values, positionals } = parseArgs({
    args: [...args],
    options: { state: { type: 'string' }, limit: { type: 'string' }, json: { type: 'boolean', default: false } },
    allowPositionals: true,
    strict: true,
  });
  const [name, id, ...extra] = positionals;
  const json = values.json === true;
  if (name !== 'list' && (values.state !== undefined || values.limit !== undefined)) throw new UsageError('--state and --limit belong to list');
  if (name === 'list' && id === undefined) {
    const options = { ...(values.state === undefined ? {} : { state: values.state }), ...(values.limit === undefined ? {} : { limit: values.limit }) };
    return { name, json, query: parseOrThrow(UnresolvedListQuerySchema, options, 'option') };
  }
  if (name === 'verify' && id === undefined) return { name, json };
  if (name === 'show' && id !== undefined && extra.length === 0) return { name, json, id: parseOrThrow(OperationIdSchema, id, 'id') };
  throw new UsageError(name === 'list' || name === 'verify' || name === 'show' ? `wrong number of arguments for ${name}` : `unknown command ${JSON.stringify(name ?? '')}`);
}

function listText(items: readonly UnresolvedRecoveryDto[], limit: number): string {
  if (items.length === 0) return 'No unresolved recovery operations.';
  const rows = items.map((item) => [
    item.id,
    item.module,
    item.kind,
    item.state,
    item.stale ? 'yes' : 'no',
    item.effectClass,
    String(item.fence),
    String(item.checkpointCount),
    item.leaseExpiresAt ?? '-',
    item.createdAt,
  ]);
  const actions = [...new Map(items.map((item) => [item.module, item.reconciliation])).entries()].map(([module, action]) => `  ${module}: ${action}`);
  return [
    table(['ID', 'MODULE', 'KIND', 'STATE', 'STALE', 'EFFECT', 'FENCE', 'CHECKPOINTS', 'LEASE EXPIRES', 'CREATED'], rows),
    '',
    'Reconciliation:',
    ...actions,
    ...(items.length === limit ? ['', `Showing the oldest ${limit}; narrow with --state or raise --limit (at most 100).`] : []),
  ].join('\n');
}

function showText(details: RecoveryDetails): string {
  const chain = details.chain.ok ? `intact (${details.checkpointCount} checkpoints)` : `BROKEN at checkpoint ${details.chain.seq}: ${details.chain.reason}`;
  const lease = details.leaseOwner === null ? 'released' : `${details.leaseOwner} until ${details.leaseExpiresAt ?? '-'}`;
  const checkpoints = details.checkpoints.map((c) => [
    String(c.seq),
    c.kind,
    c.state,
    String(c.fence),
    c.previousFence === null ? '-' : String(c.previousFence),
    c.createdAt,
    typeof c.evidence === 'string' ? c.evidence : JSON.stringify(c.evidence),
  ]);
  return [
    table(
      ['FIELD', 'VALUE'],
      [
        ['id', details.id],
        ['module / kind', `${details.module} / ${details.kind}`],
        ['state', `${details.state} (effect class ${details.effectClass})`],
        ['fence', String(details.fence)],
        ['lease', lease],
        ['request hash', details.requestHash],
        ['recovery plan', JSON.stringify(details.recoveryPlan)],
        ['precondition', JSON.stringify(details.preconditionEvidence)],
        ['created / updated', `${details.createdAt} / ${details.updatedAt}`],
        ['chain', chain],
        ['reconciliation', details.reconciliation],
      ],
    ),
    '',
    table(['SEQ', 'KIND', 'STATE', 'FENCE', 'PREV FENCE', 'CREATED', 'EVIDENCE'], checkpoints),
  ].join('\n');
}

/** Runs `command` against `store`, prints its result and returns the exit code. */
async function run(command: Command, store: Store): Promise<number> {
  const modules = createRecoveryModules();
  if (command.name === 'list') {
    const items = await listUnresolved(store, modules, command.query);
    print(command.json ? JSON.stringify({ items: z.array(UnresolvedRecoveryDtoSchema).parse(items) }) : listText(items, command.query.limit));
    return 0;
  }
  if (command.name === 'verify') {
    const report = await verifyAllChains(store);
    if (command.json) print(JSON.stringify(report));
    else {
      for (const b of report.broken) print(`BROKEN ${b.operationId} at checkpoint ${b.seq}: ${b.reason}`);
      print(`Checked ${report.checked} recovery operations: ${report.broken.length === 0 ? 'every chain is intact' : `${report.broken.length} broken`}.`);
    }
    return report.broken.length === 0 ? 0 : 1;
  }
  const details = await describeRecoveryOperation(store, modules, command.id);
  if (!details) {
    process.stderr.write(`No recovery operation ${command.id}.\n`);
    return 1;
  }
  print(command.json ? JSON.stringify(RecoveryDetailsSchema.parse(details)) : showText(details));
  return 0;
}

/**
 * `durable-ops recovery <list|verify|show>`: the operator's view of the durable recovery ledger (docs/design.md §8 "Ops
 * surface") in `DATABASE_URL`. It never migrates.
 *
 * - `list [--state S] [--limit N] [--json]` — the unresolved operations (`recovery_required`, `recovering`,
 *   `outcome_unknown`, stale `running`), oldest first, each with its module's reconciliation action; `--state running`
 *   lists the stale running ones only; `--limit` 1–100 (default 50).
 * - `verify [--json]` — verifies every operation's hash chain and prints each break (operation id, checkpoint, why).
 * - `show <id> [--json]` — one operation, its chain verdict and its checkpoints (kinds, states, fences, evidence).
 *
 * A table by default, one JSON document with `--json`. Exit codes: 0 done (and, for `verify`, every chain intact);
 * 1 `verify` found a broken chain, `show` found no such operation, or a database/configuration failure; 2 bad arguments.
 */
export const recoveryCommand: CliCommand = {
  name: 'recovery',
  summary: 'list, verify or show durable recovery operations',
  usage: USAGE,
  async run(args) {
    const command = parseArguments(parseCommand, args, USAGE);
    if (!command) return 2;
    return reportFailure(
      `recovery ${command.name}`,
      async () => {
        const store = openStore(loadConfig(process.env).DATABASE_URL);
        try {
          return await run(command, store);
        } finally {
          await store.destroy();
        }
      },
      MIGRATE_HINT,
    );
  },
};
