import { parseArgs } from 'node:util';
import { loadConfig } from '../../lib/config.js';
import { openStore, type Store } from '../../lib/db/store.js';
import { InvalidTransitionError, OperationNotFoundError } from '../../lib/errors.js';
import { decodeCursor } from '../../lib/paging/list-cursor.js';
import {
  cancelAsOperator,
  getOperationForOperator,
  listOperationsForOperator,
  OperatorListQuerySchema,
  OperatorOperationDetailsSchema,
  OperatorOperationViewSchema,
  toOperatorDetails,
  toOperatorView,
  type OperatorOperationDetails,
  type OperatorOperationView,
} from '../../lib/operations/operator/operator-operations.js';
import { OperationIdSchema } from '../../lib/operations/operation-id.js';
import { parseOrThrow } from '../../lib/validation/parse-or-throw.js';
import { cliActor } from '../../lib/owners/actor.js';
import { MIGRATE_HINT, parseArguments, print, reportFailure, table, UsageError, type CliCommand } from '../cli-support.js';

type Command =
  | { readonly name: 'list'; readonly json: boolean; readonly query: Record<string, string> }
  | { readonly name: 'show' | 'cancel'; readonly json: boolean; readonly id: string };

function listUsage(): string {
  return 'usage: durable-ops list [--status <state>] [--owner <sub>] [--task-type <type>] [--limit 1-100] [--cursor <c>] [--json]';
}

function parseList(args: readonly string[]): Command {
  const { values, positionals } = parseArgs({
    args: [...args],
    options: {
      status: { type: 'string' },
      owner: { type: 'string' },
      'task-type': { type: 'string' },
      limit: { type: 'string' },
      cursor: { type: 'string' },
      json: { type: 'boolean', default: false },
    },
    allowPositionals: true,
    strict: true,
  });
  if (positionals.length > 0) throw new UsageError('list takes no positional arguments');
  const query: Record<string, string> = {};
  if (values.status !== undefined) query.status = values.status;
  if (values.owner !== undefined) query.ownerUserId = values.owner;
  if (values['task-type'] !== undefined) query.taskType = values['task-type'];
  if (values.limit !== undefined) query.limit = values.limit;
  if (values.cursor !== undefined) query.cursor = values.cursor;
  parseOrThrow(OperatorListQuerySchema, query, 'option');
  if (query.cursor !== undefined) decodeCursor(query.cursor);
  return { name: 'list', json: values.json === true, query };
}

function parseOne(name: 'show' | 'cancel') {
  return (args: readonly string[]): Command => {
    const { values, positionals } = parseArgs({ args: [...args], options: { json: { type: 'boolean', default: false } }, allowPositionals: true, strict: true });
    if (positionals.length !== 1) throw new UsageError(`${name} takes exactly one operation id`);
    return { name, json: values.json === true, id: parseOrThrow(OperationIdSchema, positionals[0], 'id') };
  };
}

function listText(items: readonly OperatorOperationView[], nextCursor: string | null): string {
  if (items.length === 0) return 'No operations match.';
  const rows = items.map((op) => [op.id, op.ownerUserId, op.taskType, op.status, `${op.attempt}/${op.maxAttempts}`, op.failure?.code ?? '-', op.createdAt]);
  return [
    table(['ID', 'OWNER', 'TASK TYPE', 'STATUS', 'ATTEMPT', 'FAILURE', 'CREATED'], rows),
    ...(nextCursor ? ['', `More: --cursor ${nextCursor}`] : []),
  ].join('\n');
}

function showText(op: OperatorOperationDetails): string {
  const fields: [string, string][] = [
    ['id', op.id],
    ['owner', op.ownerUserId],
    ['task type', op.taskType],
    ['status', `${op.status}${op.cancelRequested ? ' (cancel requested)' : ''}`],
    ...(op.cancelRequested ? [['cancel requested by', op.cancelRequestedBy ?? 'not recorded'] as [string, string]] : []),
    ['subject', `${op.subject.type}/${op.subject.id}`],
    ['attempt', `${op.attempt}/${op.maxAttempts} (owner retries used: ${op.retryCount})`],
    ['progress', `${op.progress.percent}%${op.progress.stage ? ` ${op.progress.stage}` : ''}`],
    ['privacy', op.privacyMode],
    ['failure', op.failure ? `${op.failure.code}${op.failureMessage ? `: ${op.failureMessage}` : ''}` : op.failureMessage ?? '-'],
    ['lease expires / heartbeat', `${op.leaseExpiresAt ?? '-'} / ${op.heartbeatAt ?? '-'}`],
    ['created / started / finished', `${op.createdAt} / ${op.startedAt ?? '-'} / ${op.finishedAt ?? '-'}`],
    ['deadline / next attempt', `${op.deadlineAt} / ${op.nextAttemptAt ?? '-'}`],
  ];
  const attempts = op.modelAttempts.map((a) => [String(a.attempt), a.route, a.provider, a.model, a.outcome]);
  return [table(['FIELD', 'VALUE'], fields), ...(attempts.length > 0 ? ['', table(['ATTEMPT', 'ROUTE', 'PROVIDER', 'MODEL', 'OUTCOME'], attempts)] : [])].join('\n');
}

async function run(command: Command, store: Store): Promise<number> {
  if (command.name === 'list') {
    const page = await listOperationsForOperator(store, command.query);
    const items = page.items.map(toOperatorView);
    print(command.json ? JSON.stringify({ items: items.map((i) => OperatorOperationViewSchema.parse(i)), nextCursor: page.nextCursor }) : listText(items, page.nextCursor));
    return 0;
  }
  try {
    const row = command.name === 'show' ? await getOperationForOperator(store, command.id) : await cancelAsOperator(store, command.id, cliActor());
    const view = OperatorOperationDetailsSchema.parse(toOperatorDetails(row));
    print(command.json ? JSON.stringify(view) : showText(view));
    return 0;
  } catch (error) {
    if (error instanceof InvalidTransitionError) {
      process.stderr.write(`Operation ${command.id} has already finished: there is nothing to cancel.\n`);
      return 1;
    }
    if (!(error instanceof OperationNotFoundError)) throw error;
    process.stderr.write(`No operation ${command.id}.\n`);
    return 1;
  }
}

function operationsCommand(name: 'list' | 'show' | 'cancel', summary: string, usage: string, parse: (args: readonly string[]) => Command): CliCommand {
  return {
    name,
    summary,
    usage,
    async run(args) {
      const command = parseArguments(parse, args, usage);
      if (!command) return 2;
      return reportFailure(
        name,
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
}

/**
 * `durable-ops list`: every owner's operations in `DATABASE_URL`, newest first, filtered by `--status`, `--owner`,
 * `--task-type`, paged by `--limit` (1–100, default 20) and `--cursor` (printed under a full page). A table by default,
 * `{items, nextCursor}` with `--json`; each item is the operator view (never a lease token or idempotency key).
 */
export const listCommand = operationsCommand('list', 'list operations by state, owner and task type', listUsage(), parseList);

/** `durable-ops show <id> [--json]`: one operation, whoever owns it, with its failure text and model provenance. */
export const showCommand = operationsCommand('show', 'show one operation (operator view)', 'usage: durable-ops show <operation id> [--json]', parseOne('show'));

/**
 * `durable-ops cancel <id> [--json]`: cancels an operation on its owner's behalf — a waiting one at once, a running one
 * at its next heartbeat (`cancelRequested`), recorded as requested by `cli:<user>@<host>` (`cliActor`); exit 1 when it
 * already succeeded or failed (the owner's 409).
 */
export const cancelCommand = operationsCommand('cancel', "cancel an operation on its owner's behalf", 'usage: durable-ops cancel <operation id> [--json]', parseOne('cancel'));
