// What Lambda hands a function, for the drivers that invoke *bundled* handlers in plain Node (no TypeScript loader):
// test/deploy/invoke-bundled-lambdas.mjs (this repository's bundles, on Node 22) and
// test/package/invoke-example-lambdas.mjs (the webhook-delivery example's). Shapes: AWS Lambda Developer Guide,
// "Lambda context object in Node.js" and API Gateway "HTTP API payload format version 2.0".
import { randomUUID } from 'node:crypto';

/** A Lambda context whose remaining time counts down from `timeoutMs` (**ms**); callback methods throw. */
export function lambdaContext(functionName, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  const unsupported = () => {
    throw new Error('promise-returning handlers only');
  };
  return {
    callbackWaitsForEmptyEventLoop: false,
    functionName,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:us-east-1:000000000000:function:${functionName}`,
    memoryLimitInMB: '512',
    awsRequestId: randomUUID(),
    logGroupName: `/aws/lambda/${functionName}`,
    logStreamName: 'bundle-test',
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
    done: unsupported,
    fail: unsupported,
    succeed: unsupported,
  };
}

/**
 * An HTTP API payload 2.0 event as the JWT authorizer hands it over, for the verified subject `owner`: the API Lambda
 * trusts API Gateway's token check and reads only these claims. `body` (any JSON value) is serialised.
 */
export function apiEvent(method, path, owner, { headers = {}, body } = {}) {
  const now = Date.now();
  return {
    version: '2.0',
    routeKey: '$default',
    rawPath: path,
    rawQueryString: '',
    headers: { host: 'api.bundle.test', ...headers },
    requestContext: {
      accountId: '000000000000',
      apiId: 'bundle',
      domainName: 'api.bundle.test',
      domainPrefix: 'api',
      http: { method, path, protocol: 'HTTP/1.1', sourceIp: '192.0.2.1', userAgent: 'bundle-test' },
      requestId: randomUUID(),
      routeKey: '$default',
      stage: '$default',
      time: new Date(now).toUTCString(),
      timeEpoch: now,
      authorizer: { principalId: '', integrationLatency: 0, jwt: { claims: { sub: owner, iss: 'https://issuer.bundle.test' }, scopes: null } },
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    isBase64Encoded: false,
  };
}
