import { performance } from 'node:perf_hooks';
import { randomUUID } from 'node:crypto';
import type { Context } from 'aws-lambda';

/** Options of {@link localLambdaContext}. */
export interface LocalLambdaContextOptions {
  readonly functionName: string;
  /** The simulated function timeout, in **ms**; `getRemainingTimeInMillis()` counts down from it. */
  readonly timeoutMs: number;
  /** @default a random UUID */
  readonly requestId?: string;
  /** @default 'us-east-1' */
  readonly region?: string;
  /** @default '000000000000' */
  readonly account?: string;
}

/**
 * A Lambda `Context` for one local (or test) invocation of a promise-returning handler, so time-aware code — the
 * worker's timeout below the remaining time, middy's timeout guard — behaves as in AWS. The callback-style methods
 * (`done`, `fail`, `succeed`) throw: our handlers return promises.
 */
export function localLambdaContext(options: LocalLambdaContextOptions): Context {
  // Monotonic, as Lambda's own countdown: a jump of the wall clock does not change the time left.
  const deadline = performance.now() + options.timeoutMs;
  const region = options.region ?? 'us-east-1';
  const account = options.account ?? '000000000000';
  const unsupported = (): never => {
    throw new Error('Local invocations support only promise-returning handlers.');
  };
  return {
    callbackWaitsForEmptyEventLoop: false,
    functionName: options.functionName,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:${region}:${account}:function:${options.functionName}`,
    memoryLimitInMB: '1024',
    awsRequestId: options.requestId ?? randomUUID(),
    logGroupName: `/aws/lambda/${options.functionName}`,
    logStreamName: 'local',
    getRemainingTimeInMillis: () => Math.max(0, Math.round(deadline - performance.now())),
    done: unsupported,
    fail: unsupported,
    succeed: unsupported,
  };
}
