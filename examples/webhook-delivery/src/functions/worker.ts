import { workerLambda } from 'durable-ops/lambda';
import { app } from '../registry.js';

/** The worker Lambda of the webhook-delivery application (serverless.yml `functions.worker`). */
export const handler = workerLambda(app);
