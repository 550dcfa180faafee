import { describeError, type Logger } from '../logger.js';
import type { WakeupSender } from './wakeup-sender.js';

/** Sends one wake-up after a commit; failures are logged only (the sweeper re-sends). */
export async function sendWakeup(
  deps: { readonly wakeups: WakeupSender; readonly logger: Logger },
  message: Parameters<WakeupSender['send']>[0][number],
  delaySeconds = 0,
): Promise<void> {
  try {
    await deps.wakeups.send([message], { delaySeconds });
  } catch (error) {
    deps.logger.warn('wake-up send failed; the sweeper will re-send it', { operationId: message.operationId, ...describeError(error) });
  }
}
