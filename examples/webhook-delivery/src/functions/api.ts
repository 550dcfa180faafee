import { apiLambda } from 'durable-ops/lambda';
import { app } from '../registry.js';

/** The api Lambda of the webhook-delivery application (serverless.yml `functions.api`). */
export const handler = apiLambda(app);
