import { TaskRegistry, type DurableOpsApp } from 'durable-ops';
import { deliverWebhookTask, webhookDeliveryModule } from './tasks/deliver-webhook.js';

/**
 * The application: its task types and the recovery-ledger modules they write. The four Lambdas (`src/functions/`) and
 * the local run (`src/flow.ts`) are all built from this one object, so they serve the same task types.
 */
export const app: DurableOpsApp = {
  registry: () => new TaskRegistry().register(deliverWebhookTask),
  recoveryModules: [webhookDeliveryModule],
};
