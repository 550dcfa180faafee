import { sweeperLambda } from 'durable-ops/lambda';
import { app } from '../registry.js';

/** The sweeper Lambda of the webhook-delivery application (serverless.yml `functions.sweeper`). */
export const handler = sweeperLambda(app);
