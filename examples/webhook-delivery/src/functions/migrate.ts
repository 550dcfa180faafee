import { migrateLambda } from 'durable-ops/lambda';

/** The migrate Lambda: durable-ops's schema, applied after each deploy (`npx durable-ops migrate --remote <function>`). */
export const handler = migrateLambda();
