import type { S3Client } from '@aws-sdk/client-s3';

/** What {@link spyOnS3} sees and can do to one S3 client. */
export interface S3Spy {
  /** How many commands of each name (`PutObjectCommand`, …) the client sent. */
  readonly calls: Map<string, number>;
  /** After the next `commandName` call completes at S3, never settle: the process "froze" there. */
  freezeAfter(commandName: string): void;
  /** Once the next `commandName` call completes at S3, run `hook` before the caller sees the answer. */
  after(commandName: string, hook: () => Promise<void>): void;
}

/** Counts an S3 client's commands and injects crashes through its middleware stack (the client stays real). */
export function spyOnS3(s3: S3Client): S3Spy {
  const calls = new Map<string, number>();
  const hooks = new Map<string, () => Promise<void>>();
  s3.middlewareStack.add(
    (next, context) => async (args) => {
      const name = context.commandName ?? 'unknown';
      calls.set(name, (calls.get(name) ?? 0) + 1);
      const output = await next(args);
      const hook = hooks.get(name);
      hooks.delete(name);
      if (hook) await hook();
      return output;
    },
    { step: 'initialize', name: 's3Spy' },
  );
  return {
    calls,
    freezeAfter: (commandName) => hooks.set(commandName, () => new Promise<void>(() => undefined)),
    after: (commandName, hook) => hooks.set(commandName, hook),
  };
}
