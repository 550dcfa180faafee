import { hostname } from 'node:os';
import { loadConfig } from '../../lib/config.js';
import { openStore } from '../../lib/db/store.js';
import { OperationIdSchema } from '../../lib/operations/operation-id.js';
import { reconcileRedrive } from '../../lib/queue/reconcile-redrive.js';
import { REDRIVE_MODULE } from '../../lib/queue/redrive-dlq.js';
import { findRecoveryOperation } from '../../lib/recovery/recovery.repository.js';
import { reconcileResultObject } from '../../lib/results/reconcile-result-object.js';
import { RESULT_OBJECTS_MODULE } from '../../lib/results/result-object-ledger.js';
import { createS3Client } from '../../lib/results/s3-client.js';
import { parseArguments, print, reportFailure, UsageError, type CliCommand } from '../cli-support.js';

const USAGE = 'usage: durable-ops recovery-reconcile <recovery operation id>';

function parseId(args: readonly string[]): string {
  const id = OperationIdSchema.safeParse(args[0]);
  if (!id.success || args.length !== 1) throw new UsageError('one recovery operation id is required');
  return id.data;
}

/**
 * `durable-ops recovery-reconcile <id>`: runs the owning module's reconciliation action for one unresolved recovery
 * operation (docs/design.md §8): `results.s3` → `reconcileResultObject` (delete the object if it is still this write's),
 * `queue.redrive` → `reconcileRedrive` (resolve from the `sent` checkpoint, or leave `outcome_unknown`). Takes the
 * operation over first, so its lease must have expired; never re-executes the effect. Prints the resulting state.
 * Exit codes: 0 done, 1 failure (not takeable, unknown module, database/S3 error), 2 bad arguments.
 */
export const recoveryReconcileCommand: CliCommand = {
  name: 'recovery-reconcile',
  summary: "run a recovery operation's reconciliation action",
  usage: USAGE,
  async run(args) {
    const id = parseArguments(parseId, args, USAGE);
    if (!id) return 2;
    return reportFailure('Reconciliation', async () => {
      const config = loadConfig();
      const store = openStore(config.DATABASE_URL);
      const leaseOwner = `recovery-cli:${hostname()}:${process.pid}`;
      try {
        const row = await findRecoveryOperation(store, id);
        if (!row) throw new Error(`No recovery operation ${id}.`);
        if (row.module === REDRIVE_MODULE) {
          print(await reconcileRedrive({ store, operationId: id, leaseOwner }));
        } else if (row.module === RESULT_OBJECTS_MODULE) {
          const s3 = createS3Client({ region: config.AWS_REGION, ...(config.S3_ENDPOINT ? { endpoint: config.S3_ENDPOINT } : {}) });
          try {
            await reconcileResultObject({ s3, store, operationId: id, leaseOwner });
            print('verified_recovered');
          } finally {
            s3.destroy();
          }
        } else {
          throw new Error(`Module ${row.module} registered no reconciliation command; see \`durable-ops recovery show ${id}\`.`);
        }
        return 0;
      } finally {
        await store.destroy();
      }
    });
  },
};
