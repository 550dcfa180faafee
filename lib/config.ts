import { z } from 'zod';
import { DEFAULT_RUNNING_PER_OWNER } from './capacity/capacity-policy.js';
import { ConfigError } from './errors.js';
import { OwnerUserIdSchema } from './owners/owner-user-id.js';

const seconds = (min: number, max: number, fallback: number) => z.coerce.number().int().min(min).max(max).default(fallback);
const flag = z
  .enum(['0', '1', 'true', 'false'])
  .default('0')
  .transform((v) => v === '1' || v === 'true');

/**
 * One origin as browsers send it in `Origin` (RFC 6454 §6.1): `scheme://host[:port]`, http or https, lower case, no
 * default port, no path, no trailing slash — so it is compared with the header byte for byte.
 */
function originIssue(value: string): string | undefined {
  if (value === '*') return '"*" is not accepted: list each origin exactly (scheme://host[:port])';
  let origin: string;
  try {
    const url = new URL(value);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') return `"${value}" is not an http or https origin`;
    origin = url.origin;
  } catch {
    return `"${value}" is not an origin (scheme://host[:port])`;
  }
  return origin === value ? undefined : `"${value}" is not an exact origin: write it as "${origin}" (no path, no trailing slash, no default port, lower case)`;
}

/** A comma-separated list of exact origins (blanks around commas ignored), deduplicated; empty when unset. */
const originList = z
  .string()
  .default('')
  .transform((list, ctx) => {
    const origins = [...new Set(list.split(',').map((o) => o.trim()).filter((o) => o !== ''))];
    for (const origin of origins) {
      const issue = originIssue(origin);
      if (issue) ctx.addIssue({ code: 'custom', message: issue });
    }
    return Object.freeze(origins) as readonly string[];
  });

/**
 * A comma-separated list (blanks around commas ignored), deduplicated, each item checked by `item`; empty when unset.
 */
const commaList = (item: z.ZodType<string>) =>
  z
    .string()
    .default('')
    .transform((list, ctx) => {
      const items = [...new Set(list.split(',').map((i) => i.trim()).filter((i) => i !== ''))];
      for (const value of items) {
        const parsed = item.safeParse(value);
        if (!parsed.success) ctx.addIssue({ code: 'custom', message: `"${value}": ${parsed.error.issues[0]?.message ?? 'invalid'}` });
      }
      return Object.freeze(items) as readonly string[];
    });

/**
 * A comma-separated list of host names (RFC 1123 §2.1 labels), IPv4 addresses or bracketed IPv6 addresses, without a
 * port, compared case-insensitively: stored lower case and deduplicated; empty when unset.
 */
const hostList = z
  .string()
  .default('')
  .transform((list, ctx) => {
    const hosts = [...new Set(list.split(',').map((h) => h.trim().toLowerCase()).filter((h) => h !== ''))];
    for (const host of hosts) {
      if (!/^(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*|\[[0-9a-f:.]+\])$/.test(host)) {
        ctx.addIssue({ code: 'custom', message: `"${host}" is not a host name (no scheme, port, path or wildcard: e.g. devbox.lan or 192.168.1.20)` });
      }
    }
    return Object.freeze(hosts) as readonly string[];
  });

/**
 * The environment durable-ops reads, with defaults (README "Configuration" documents each). All durations are
 * in **seconds** unless the name says otherwise.
 */
export const ConfigSchema = z
  .object({
    DATABASE_URL: z.string().min(1).default('sqlite:.data/durable-ops.sqlite'),
    PORT: z.coerce.number().int().min(0).max(65535).default(3000),
    LEASE_SECONDS: seconds(5, 900, 30),
    /** @default a third of LEASE_SECONDS */
    HEARTBEAT_SECONDS: z.coerce.number().int().min(1).max(300).optional(),
    /** How long before the local lease deadline a worker fences itself. @default the heartbeat interval */
    LEASE_FENCE_MARGIN_SECONDS: z.coerce.number().int().min(1).max(300).optional(),
    SWEEP_INTERVAL_SECONDS: seconds(1, 3600, 15),
    SWEEP_BATCH_SIZE: z.coerce.number().int().min(1).max(5000).default(200),
    SWEEP_TIME_BUDGET_SECONDS: seconds(1, 600, 20),
    MAX_ATTEMPTS: z.coerce.number().int().min(1).max(100).default(3),
    RETRY_BASE_SECONDS: seconds(1, 3600, 5),
    RETRY_MAX_SECONDS: seconds(1, 86_400, 300),
    QUEUED_DEADLINE_SECONDS: seconds(10, 7 * 86_400, 900),
    WAKEUP_RESEND_SECONDS: seconds(5, 3600, 60),
    MAX_MANUAL_RETRIES: z.coerce.number().int().min(0).max(1000).default(5),
    RETENTION_DAYS: z.coerce.number().int().min(1).max(3650).default(30),
    /** mysql2 pool size; at least 2, because recovery-ledger writes take a connection of their own (docs/design.md §8). */
    DB_POOL_SIZE: z.coerce.number().int().min(2).max(100).default(10),
    /**
     * HS256 secret the local stack verifies dev tokens with (and `npm run token` signs them with). @default unset: the
     * secret generated on first use in the local data directory (`lib/local/dev-secret.ts`)
     */
    DEV_JWT_SECRET: z.string().min(32, 'DEV_JWT_SECRET must be at least 32 characters').optional(),
    /**
     * Host names, besides the loopback ones, the local server answers for (its `Host` check, `lib/local/local-host.ts`):
     * exact names or IP addresses, comma-separated, no port. @default none: localhost, 127.0.0.1, [::1], *.localhost only
     */
    LOCAL_ALLOWED_HOSTS: hostList,
    SQS_QUEUE_URL: z.string().url().optional(),
    SQS_ENDPOINT: z.string().url().optional(),
    /** The worker queue's dead-letter queue, read by `npm run redrive-dlq` and `POST /api/ops/dlq/redrive`. */
    SQS_DLQ_URL: z.string().url().optional(),
    /** S3 bucket for task result objects (`demo.wait` `writeResult`); unset: tasks publish no result objects. */
    RESULTS_BUCKET: z
      .string()
      .regex(/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/, 'RESULTS_BUCKET must be an S3 bucket name (3-63 of a-z, 0-9, ".", "-")')
      .optional(),
    /** Explicit S3 endpoint (a local emulator such as fauxqs); unset in AWS. */
    S3_ENDPOINT: z.string().url().optional(),
    AWS_REGION: z.string().min(1).default('us-east-1'),
    DEMO_TASKS: flag,
    /** Registers the AI task types (`strategy.snapshot`); needs a local model route (`MODEL_LOCAL_URL`). */
    AI_TASKS: flag,
    /**
     * The local model route (docs/design.md §5): an OpenAI-compatible base URL (llama.cpp server, Ollama, vLLM; the client
     * appends `/chat/completions`) or `lambda:<function-name>` for a model sidecar Lambda in the same account.
     */
    MODEL_LOCAL_URL: z.string().min(1).optional(),
    /** Model name sent to the local route. */
    MODEL_LOCAL_NAME: z.string().min(1).max(64).default('local'),
    /** The optional external route (same forms as `MODEL_LOCAL_URL`); used only as a fallback where allowed. */
    MODEL_EXTERNAL_URL: z.string().min(1).optional(),
    /** Model name sent to the external route; required with `MODEL_EXTERNAL_URL`. */
    MODEL_EXTERNAL_NAME: z.string().min(1).max(64).optional(),
    /** Bearer key of the external route (a secret: Secrets Manager / SSM in AWS). Never logged or stored. */
    MODEL_EXTERNAL_API_KEY: z
      .string()
      .regex(/^[\x21-\x7e]{1,4096}$/, 'must be 1-4096 visible ASCII characters (a bearer token)')
      .optional(),
    /** Timeout of one model request, in **milliseconds** (also capped by the task's own timeout). */
    MODEL_REQUEST_TIMEOUT_MS: z.coerce.number().int().min(100).max(900_000).default(120_000),
    /** Largest model response body read, in bytes; a bigger one fails as `response_too_large`. */
    MODEL_MAX_RESPONSE_BYTES: z.coerce.number().int().min(1024).max(6 * 1024 * 1024).default(1024 * 1024),
    /** Consecutive failures that open a model route's circuit breaker. */
    MODEL_BREAKER_FAILURES: z.coerce.number().int().min(1).max(1000).default(5),
    /** How long an open breaker waits before a half-open trial, in seconds. */
    MODEL_BREAKER_COOLDOWN_SECONDS: seconds(1, 3600, 30),
    /** Explicit AWS Lambda endpoint for `lambda:` model routes (the local stack's Invoke API); unset in AWS. */
    LAMBDA_ENDPOINT: z.string().url().optional(),
    /** Default per-owner limit on active operations of each task type (docs/design.md §4). */
    CAPACITY_PER_OWNER: z.coerce.number().int().min(1).max(10_000).default(10),
    /** Default global limit on active operations of each task type. */
    CAPACITY_GLOBAL: z.coerce.number().int().min(1).max(10_000).default(1000),
    /**
     * Default per-owner limit on *running* operations of each task type, checked at claim (docs/design.md §4, fair
     * share). Keep it below the worker's concurrency (README "Sizing the worker").
     */
    CAPACITY_RUNNING_PER_OWNER: z.coerce.number().int().min(1).max(10_000).default(DEFAULT_RUNNING_PER_OWNER),
    /** `Retry-After` of a capacity 429, in seconds. */
    CAPACITY_RETRY_AFTER_SECONDS: z.coerce.number().int().min(1).max(3600).default(5),
    /** Optional JSON file with per-plan, per-task-type and per-route limits (README "Capacity"). */
    CAPACITY_CONFIG_FILE: z.string().min(1).optional(),
    /**
     * Origins whose pages may call the API from a browser (CORS, README "Calling the API from a browser"): exact
     * `scheme://host[:port]` origins, comma-separated. The local server answers their preflights without a token; in AWS
     * API Gateway does, from the `corsAllowedOrigins` stage parameter. @default none: no CORS headers, same-origin only
     */
    CORS_ALLOWED_ORIGINS: originList,
    /**
     * Who is an operator (README "Operator identity"; `lib/http/operator-identity.ts`): the operator routes accept only
     * tokens that pass every rule set here, and the scope (`ops:read` / `ops:write`) then chooses read vs write.
     * `OPERATOR_JWT_ISSUER`: the operator identity provider's `iss`, exactly (in AWS the `operatorJwtIssuer` stage
     * parameter of the second JWT authorizer); `OPERATOR_JWT_AUDIENCE`: its audience or app client id (`aud`/`client_id`).
     * @default none of them: no token is an operator's, every operator route answers 404
     */
    OPERATOR_JWT_ISSUER: z.string().min(1).max(2048).optional(),
    OPERATOR_JWT_AUDIENCE: z.string().min(1).max(2048).optional(),
    /** The claim that lists a caller's groups, e.g. `cognito:groups`; needs `OPERATOR_GROUPS`. */
    OPERATOR_GROUP_CLAIM: z.string().min(1).max(128).optional(),
    /** Comma-separated groups (in `OPERATOR_GROUP_CLAIM`) whose members are operators. */
    // API Gateway passes an array claim as one string, `[a b]`, split here on spaces: a group name holding a space or a
    // bracket could never be matched, and one word of another group's name would match.
    OPERATOR_GROUPS: commaList(z.string().max(256).regex(/^[^\s[\]]+$/, 'a group name without spaces or brackets (API Gateway joins array claims with spaces)')),
    /** Comma-separated subjects (`sub`, the owner-id rule) that are operators. */
    OPERATOR_SUBJECTS: commaList(OwnerUserIdSchema),
  })
  .transform((c) => ({ ...c, HEARTBEAT_SECONDS: c.HEARTBEAT_SECONDS ?? Math.max(1, Math.floor(c.LEASE_SECONDS / 3)) }))
  .refine((c) => c.LEASE_FENCE_MARGIN_SECONDS === undefined || c.LEASE_FENCE_MARGIN_SECONDS * 2 < c.LEASE_SECONDS, {
    message: 'LEASE_FENCE_MARGIN_SECONDS must be less than half of LEASE_SECONDS (a healthy worker would fence itself)',
    path: ['LEASE_FENCE_MARGIN_SECONDS'],
  })
  .refine((c) => c.HEARTBEAT_SECONDS < c.LEASE_SECONDS, {
    message: 'HEARTBEAT_SECONDS must be less than LEASE_SECONDS',
    path: ['HEARTBEAT_SECONDS'],
  })
  .refine((c) => c.MODEL_EXTERNAL_API_KEY === undefined || c.MODEL_EXTERNAL_URL !== undefined, {
    message: 'MODEL_EXTERNAL_API_KEY is set but MODEL_EXTERNAL_URL is not',
    path: ['MODEL_EXTERNAL_URL'],
  })
  .refine((c) => c.MODEL_EXTERNAL_URL === undefined || c.MODEL_EXTERNAL_NAME !== undefined, {
    message: 'MODEL_EXTERNAL_NAME is required with MODEL_EXTERNAL_URL',
    path: ['MODEL_EXTERNAL_NAME'],
  })
  .refine((c) => c.RETRY_BASE_SECONDS <= c.RETRY_MAX_SECONDS, {
    message: 'RETRY_BASE_SECONDS must not exceed RETRY_MAX_SECONDS',
    path: ['RETRY_BASE_SECONDS'],
  })
  .refine((c) => c.OPERATOR_JWT_AUDIENCE === undefined || c.OPERATOR_JWT_ISSUER !== undefined, {
    message: 'OPERATOR_JWT_AUDIENCE is set but OPERATOR_JWT_ISSUER is not',
    path: ['OPERATOR_JWT_ISSUER'],
  })
  .refine((c) => (c.OPERATOR_GROUP_CLAIM === undefined) === (c.OPERATOR_GROUPS.length === 0), {
    message: 'OPERATOR_GROUP_CLAIM and OPERATOR_GROUPS go together: set both or neither',
    path: ['OPERATOR_GROUPS'],
  });

/** The parsed, frozen configuration. */
export type Config = Readonly<z.infer<typeof ConfigSchema>>;

/**
 * Parses the environment once into a frozen {@link Config}. No side effects.
 * @param env defaults to `process.env`; empty strings count as unset.
 * @throws {ConfigError} naming every invalid variable.
 */
export function loadConfig(env: Readonly<Record<string, string | undefined>> = process.env): Config {
  const present = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const parsed = ConfigSchema.safeParse(present);
  if (!parsed.success) {
    const detail = parsed.error.issues.map((i) => `${i.path.join('.') || 'config'}: ${i.message}`).join('; ');
    throw new ConfigError(`Invalid configuration: ${detail}`);
  }
  return Object.freeze(parsed.data);
}
