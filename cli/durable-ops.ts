/**
 * `durable-ops <command> …` (`npx durable-ops`, or `npm run <command> --`): the operator CLI (docs/design.md §8, §9). Every
 * command reads the same environment as the services (`DATABASE_URL`, `SQS_*`, `AWS_REGION`, …) and never migrates
 * unless asked to. Human-readable tables by default, `--json` for scripts. Exit codes: 0 done, 1 failed, 2 bad arguments.
 */
import { cancelCommand, listCommand, showCommand } from './commands/operations.js';
import { migrateCommand } from './commands/migrate.js';
import { ownerCommand } from './commands/owner.js';
import { recoveryReconcileCommand } from './commands/recovery-reconcile.js';
import { recoveryCommand } from './commands/recovery.js';
import { redriveDlqCommand } from './commands/redrive-dlq.js';
import { sweepCommand } from './commands/sweep.js';
import { tokenCommand } from './commands/token.js';
import type { CliCommand } from './cli-support.js';

const COMMANDS: readonly CliCommand[] = [
  migrateCommand,
  sweepCommand,
  listCommand,
  showCommand,
  cancelCommand,
  redriveDlqCommand,
  recoveryCommand,
  recoveryReconcileCommand,
  ownerCommand,
  tokenCommand,
];

function help(): string {
  const width = Math.max(...COMMANDS.map((c) => c.name.length));
  return [
    'usage: durable-ops <command> [options]',
    '',
    ...COMMANDS.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`),
    '',
    'durable-ops <command> --help prints its usage. Configuration comes from the environment (README "Configuration").',
  ].join('\n');
}

// The AWS SDK is pinned to exact releases that run on Node 20; its "newer releases will need Node 22" notice is noise.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

const [name, ...args] = process.argv.slice(2);
const command = COMMANDS.find((c) => c.name === name);
if (name === undefined) {
  process.stderr.write(`${help()}\n`);
  process.exitCode = 2;
} else if (name === '--help' || name === '-h' || name === 'help') {
  process.stdout.write(`${help()}\n`);
} else if (!command) {
  process.stderr.write(`unknown command ${JSON.stringify(name)}\n${help()}\n`);
  process.exitCode = 2;
} else if (args.length === 1 && (args[0] === '--help' || args[0] === '-h')) {
  process.stdout.write(`${command.usage}\n`);
} else {
  process.exitCode = await command.run(args);
}
