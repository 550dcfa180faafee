import { parseArgs } from 'node:util';
import { LambdaClient } from '@aws-sdk/client-lambda';
import { loadConfig } from '../../lib/config.js';
import { migrateAllDown, migrateToLatest, type MigrationReport } from '../../lib/db/migrate.js';
import { LAMBDA_FUNCTION_PATTERN, migrateRemote } from '../../lib/db/remote-migrate.js';
import { MigrationFailedError } from '../../lib/db/migration-errors.js';
import { openStore, parseDatabaseUrl } from '../../lib/db/store.js';
import { ConfigError } from '../../lib/errors.js';
import { parseArguments, print, reportFailure, UsageError, type CliCommand } from '../cli-support.js';
import { confirmAtTerminal } from '../confirm.js';

const USAGE = 'usage: durable-ops migrate [--down [--yes]]\n       durable-ops migrate --remote <migrate function name or ARN>';

type Command = { readonly where: 'local'; readonly down: boolean; readonly yes: boolean } | { readonly where: 'remote'; readonly functionName: string };

function parseMigrate(args: readonly string[]): Command {
  const { values, positionals } = parseArgs({ args: [...args], options: { down: { type: 'boolean', default: false }, yes: { type: 'boolean', default: false }, remote: { type: 'string' } }, allowPositionals: true, strict: true });
  if (positionals.length > 0) throw new UsageError('migrate takes no positional arguments');
  if (values.remote !== undefined) {
    if (values.down) throw new UsageError('--down is for local databases only: in AWS, migrations are forward-only (README "Migrations and rollback")');
    if (!LAMBDA_FUNCTION_PATTERN.test(values.remote)) throw new UsageError('--remote must be a Lambda function name or ARN');
    return { where: 'remote', functionName: values.remote };
  }
  if (values.yes && !values.down) throw new UsageError('--yes only confirms --down');
  return { where: 'local', down: values.down === true, yes: values.yes === true };
}

function printReport(report: MigrationReport, failed = false): void {
  if (report.length === 0 && !failed) print('Nothing to do: the schema is up to date.');
  for (const r of report) print(`${r.direction.padEnd(4)} ${r.status.padEnd(7)} ${r.migrationName}`);
}

/**
 * `durable-ops migrate [--down]`: applies every pending migration to `DATABASE_URL` (or, with `--down`, rolls every
 * migration back — this drops every table and all operation history, SQLite or MariaDB alike; local databases only, and
 * only with `--yes` or a `yes` typed at the terminal prompt: without a terminal and without `--yes` it refuses, exit 2,
 * before opening the database). `durable-ops migrate --remote <function>`: invokes the deployed migrate Lambda (the same
 * static migration provider, bundled) with `@aws-sdk/client-lambda`, in the AWS account and region of the environment's
 * credentials (`AWS_REGION` or the profile's `region` — there is no default: without one it fails before invoking;
 * `LAMBDA_ENDPOINT` for a local Invoke API), and prints each migration's result. Exit codes: 0 done, 1 a migration or
 * invocation failed, no region, or a `--down` not confirmed at the prompt, 2 bad arguments.
 */
export const migrateCommand: CliCommand = {
  name: 'migrate',
  summary: 'apply pending migrations (locally, or through the deployed migrate Lambda)',
  usage: USAGE,
  async run(args) {
    const command = parseArguments(parseMigrate, args, USAGE);
    if (!command) return 2;
    return reportFailure('Migration', async () => {
      const config = loadConfig();
      if (command.where === 'remote') {
        // The region of the caller's AWS configuration (AWS_REGION, AWS_DEFAULT_REGION, the profile), as the AWS CLI
        // resolves it — never the service default of lib/config.ts, which would invoke a same-named function elsewhere.
        const client = new LambdaClient({
          ...(process.env.AWS_REGION ? { region: process.env.AWS_REGION } : {}),
          maxAttempts: 1,
          ...(config.LAMBDA_ENDPOINT ? { endpoint: config.LAMBDA_ENDPOINT, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } } : {}),
        });
        try {
          // A missing region would otherwise surface as the SDK's bare "Region is missing" from inside the invoke.
          await client.config.region().catch(() => {
            throw new ConfigError('migrate --remote needs the region of the deployed stack: set AWS_REGION (or a region in the AWS profile); it never assumes one');
          });
          printReport(await migrateRemote(client, command.functionName));
          return 0;
        } catch (error) {
          // A failed run still reports what it applied before the failure, and the failing migration's Error line.
          if (error instanceof MigrationFailedError) printReport(error.results, true);
          throw error;
        } finally {
          client.destroy();
        }
      }
      if (command.down && !command.yes) {
        // Rolling back drops every table and all history — also of a running local stack's SQLite file: only when asked twice.
        const warning = `migrate --down drops every table of this ${parseDatabaseUrl(config.DATABASE_URL).kind === 'mariadb' ? 'MariaDB' : 'SQLite'} database (DATABASE_URL) and all its history.`;
        if (!process.stdin.isTTY) {
          process.stderr.write(`${warning} Add --yes to confirm.\n`);
          return 2;
        }
        if (!(await confirmAtTerminal(warning))) {
          process.stderr.write('Not confirmed: nothing changed.\n');
          return 1;
        }
      }
      const store = openStore(config.DATABASE_URL);
      try {
        printReport(command.down ? await migrateAllDown(store) : await migrateToLatest(store));
        return 0;
      } finally {
        await store.destroy();
      }
    });
  },
};
