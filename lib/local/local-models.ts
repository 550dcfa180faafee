import { setTimeout as delay } from 'node:timers/promises';
import type { Config } from '../config.js';
import type { Logger } from '../logger.js';
import { ChatRequestSchema } from '../models/chat-protocol.js';
import { startLocalLambda, type LocalLambda } from './local-lambda.js';
import { STAND_IN_MODEL, standInCompletion, startStandInModelServer, type StandInModelServer } from './stand-in-model.js';

/** The function name under which the local stack's Lambda Invoke API serves the stand-in model. */
export const STAND_IN_FUNCTION = 'durable-ops-model-stand-in';

/** Simulated inference time of the local stand-in, in ms: long enough to see an operation `running`. */
export const STAND_IN_DELAY_MS = 1_500;

/** True when the local model route is the stand-in: no `MODEL_LOCAL_URL`, or the local Lambda's stand-in function. */
export function isStandIn(config: Pick<Config, 'MODEL_LOCAL_URL'>): boolean {
  return config.MODEL_LOCAL_URL === undefined || config.MODEL_LOCAL_URL === `lambda:${STAND_IN_FUNCTION}`;
}

/** What {@link startLocalModels} started, and the configuration that points the runtime at it. */
export interface LocalModels {
  /** `MODEL_LOCAL_URL` / `MODEL_LOCAL_NAME` (when the stand-in serves) and `LAMBDA_ENDPOINT` (when the Invoke API does). */
  readonly config: Partial<Pick<Config, 'MODEL_LOCAL_URL' | 'MODEL_LOCAL_NAME' | 'LAMBDA_ENDPOINT'>>;
  stop(): Promise<void>;
}

/**
 * The local stack's model side (docs/design.md §9, §5), on free loopback ports:
 * - unless `LAMBDA_ENDPOINT` is set, a local **AWS Lambda Invoke API** serving the stand-in as the function
 *   `durable-ops-model-stand-in`, so `MODEL_LOCAL_URL=lambda:durable-ops-model-stand-in` exercises the same
 *   `@aws-sdk/client-lambda` path as a model sidecar Lambda in AWS;
 * - unless `MODEL_LOCAL_URL` is set, the **deterministic stand-in model** (`lib/local/stand-in-model.ts`) as the local
 *   route, announced on the log as a stand-in so nobody mistakes its `[stand-in]` answers for a model's.
 * @throws when a port cannot be bound.
 */
export async function startLocalModels(config: Config, logger: Logger): Promise<LocalModels> {
  let lambda: LocalLambda | undefined;
  let standIn: StandInModelServer | undefined;
  const result: { -readonly [K in keyof LocalModels['config']]: LocalModels['config'][K] } = {};
  if (!config.LAMBDA_ENDPOINT) {
    lambda = await startLocalLambda({
      port: 0,
      functions: {
        [STAND_IN_FUNCTION]: async (payload) => {
          const request = ChatRequestSchema.parse(payload);
          await delay(STAND_IN_DELAY_MS);
          return standInCompletion(request);
        },
      },
    });
    result.LAMBDA_ENDPOINT = lambda.endpoint;
  }
  if (!config.MODEL_LOCAL_URL) {
    standIn = await startStandInModelServer({ port: 0, delayMs: STAND_IN_DELAY_MS });
    result.MODEL_LOCAL_URL = standIn.baseUrl;
    result.MODEL_LOCAL_NAME = STAND_IN_MODEL;
    logger.warn('no MODEL_LOCAL_URL: the local model route is the deterministic STAND-IN (not a model); see README "AI operations"', {
      modelUrl: standIn.baseUrl,
    });
  }
  return {
    config: result,
    stop: async () => {
      await Promise.all([lambda?.close(), standIn?.close()]);
    },
  };
}
