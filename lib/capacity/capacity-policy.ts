import { readFileSync } from 'node:fs';
import { z } from 'zod';
import type { Config } from '../config.js';
import { ConfigError } from '../errors.js';
import { TASK_TYPE_PATTERN } from '../validation/field-limits.js';

/** A plan name, e.g. `free` or `pro`: lower-case, at most 32 characters. */
export const PlanNameSchema = z.string().regex(/^[a-z][a-z0-9_-]{0,31}$/, 'must be lower-case [a-z0-9_-], at most 32 characters');

/** A capacity route name, e.g. `local-model`: its pool is `route:<name>`. */
export const RouteNameSchema = z.string().regex(/^[a-z][a-z0-9_.-]{0,63}$/, 'must be lower-case [a-z0-9_.-], at most 64 characters');

/** Most slots one pool may have (slot rows are created on first use). */
export const MAX_POOL_SLOTS = 10_000;

const slots = z.number().int().min(1).max(MAX_POOL_SLOTS);

/**
 * An admission rate limit (a token bucket, docs/design.md §4): `burst` admissions at once, refilled at `burst` per
 * `perSeconds` seconds (so `{ "burst": 60, "perSeconds": 60 }` is one a second on average, 60 at once).
 */
export const AdmissionRateSchema = z.strictObject({
  burst: z.number().int().min(1).max(100_000),
  perSeconds: z.number().int().min(1).max(86_400),
});

/** See {@link AdmissionRateSchema}. */
export type AdmissionRate = z.infer<typeof AdmissionRateSchema>;

const PlanLimitsSchema = z.strictObject({ perOwner: slots.optional(), runningPerOwner: slots.optional(), rate: AdmissionRateSchema.optional() });

/**
 * The capacity file (`CAPACITY_CONFIG_FILE`, JSON; see README "Capacity"). Every number is a count of active
 * operations (admission) or running attempts (routes). Example:
 * ```json
 * { "plans": { "pro": { "perOwner": 50, "runningPerOwner": 8 } },
 *   "taskTypes": { "demo.wait": { "perOwner": 5, "global": 200, "runningPerOwner": 2,
 *                                 "rate": { "burst": 20, "perSeconds": 60 },
 *                                 "plans": { "pro": { "perOwner": 20 } } } },
 *   "routes": { "local-model": 1 } }
 * ```
 */
export const CapacityFileSchema = z.strictObject({
  plans: z.record(PlanNameSchema, PlanLimitsSchema).optional(),
  taskTypes: z
    .record(
      z.string().regex(TASK_TYPE_PATTERN),
      z.strictObject({
        perOwner: slots.optional(),
        global: slots.optional(),
        runningPerOwner: slots.optional(),
        rate: AdmissionRateSchema.optional(),
        plans: z.record(PlanNameSchema, PlanLimitsSchema).optional(),
      }),
    )
    .optional(),
  routes: z.record(RouteNameSchema, slots).optional(),
});

/** See {@link CapacityFileSchema}. */
export type CapacityFile = z.infer<typeof CapacityFileSchema>;

/** Admission limits of one task type for one plan: active (non-terminal) operations. */
export interface AdmissionLimits {
  readonly perOwner: number;
  readonly global: number;
}

/** Resolved capacity configuration (docs/design.md §4). */
export interface CapacityPolicy {
  /**
   * The admission limits for `taskType` and an owner on `plan`. Most specific wins:
   * task type + plan → task type → plan → `CAPACITY_PER_OWNER`; global: task type → `CAPACITY_GLOBAL`.
   */
  admissionLimits(taskType: string, plan: string): AdmissionLimits;
  /**
   * How many operations of `taskType` one owner on `plan` may have `running` at once (docs/design.md §4, fair share):
   * checked at claim. Most specific wins, as for {@link admissionLimits}: task type + plan → task type → plan →
   * `CAPACITY_RUNNING_PER_OWNER`.
   */
  runningLimit(taskType: string, plan: string): number;
  /**
   * The admission rate limit of `taskType` for an owner on `plan`, or undefined when admissions are not rate limited
   * (the default). Most specific wins: task type + plan → task type → plan.
   */
  admissionRate(taskType: string, plan: string): AdmissionRate | undefined;
  /**
   * Every plan the capacity file names (top-level `plans` and any task type's `plans`), sorted: an owner on any other
   * plan gets what an unnamed plan gets. The admission routine's plan table is built from these
   * (`admission-procedure.repository.ts`).
   */
  readonly planNames: readonly string[];
  /** Whether any plan has a running limit of its own (else {@link runningLimit} ignores the plan: no plan read needed). */
  readonly runningLimitsByPlan: boolean;
  /** The execution limit (running attempts at once) of a route, or undefined when the route is unlimited. */
  routeLimit(route: string): number | undefined;
  /** Every configured route and its limit. */
  readonly routes: Readonly<Record<string, number>>;
  /** `Retry-After` of a 429, in **seconds**. */
  readonly retryAfterSeconds: number;
}

/** Default of `CAPACITY_RUNNING_PER_OWNER`: below the worker's default concurrency (10), so two owners at their limit leave room for others. */
export const DEFAULT_RUNNING_PER_OWNER = 4;

/** The env defaults of a {@link CapacityPolicy}; `runningPerOwner` defaults to {@link DEFAULT_RUNNING_PER_OWNER}. */
export interface CapacityDefaults {
  readonly perOwner: number;
  readonly global: number;
  readonly retryAfterSeconds: number;
  readonly runningPerOwner?: number;
}

/** Builds a {@link CapacityPolicy} from the env defaults and a parsed capacity file. */
export function capacityPolicy(defaults: CapacityDefaults, file: CapacityFile = {}): CapacityPolicy {
  const routes = Object.freeze({ ...(file.routes ?? {}) });
  return Object.freeze({
    admissionLimits(taskType: string, plan: string): AdmissionLimits {
      const task = file.taskTypes?.[taskType];
      return {
        perOwner: task?.plans?.[plan]?.perOwner ?? task?.perOwner ?? file.plans?.[plan]?.perOwner ?? defaults.perOwner,
        global: task?.global ?? defaults.global,
      };
    },
    runningLimit(taskType: string, plan: string): number {
      const task = file.taskTypes?.[taskType];
      return task?.plans?.[plan]?.runningPerOwner ?? task?.runningPerOwner ?? file.plans?.[plan]?.runningPerOwner ?? defaults.runningPerOwner ?? DEFAULT_RUNNING_PER_OWNER;
    },
    admissionRate(taskType: string, plan: string): AdmissionRate | undefined {
      const task = file.taskTypes?.[taskType];
      return task?.plans?.[plan]?.rate ?? task?.rate ?? file.plans?.[plan]?.rate;
    },
    planNames: Object.freeze(
      [...new Set([...Object.keys(file.plans ?? {}), ...Object.values(file.taskTypes ?? {}).flatMap((task) => Object.keys(task.plans ?? {}))])].sort(),
    ),
    runningLimitsByPlan:
      Object.values(file.plans ?? {}).some((plan) => plan.runningPerOwner !== undefined) ||
      Object.values(file.taskTypes ?? {}).some((task) => Object.values(task.plans ?? {}).some((plan) => plan.runningPerOwner !== undefined)),
    routeLimit: (route: string) => routes[route],
    routes,
    retryAfterSeconds: defaults.retryAfterSeconds,
  });
}

/**
 * Reads the capacity configuration: `CAPACITY_PER_OWNER`, `CAPACITY_GLOBAL`, `CAPACITY_RUNNING_PER_OWNER`,
 * `CAPACITY_RETRY_AFTER_SECONDS` and, when
 * `CAPACITY_CONFIG_FILE` is set, that JSON file validated by {@link CapacityFileSchema}.
 * @throws {ConfigError} when the file cannot be read, is not JSON, or fails the schema.
 */
export function loadCapacityPolicy(config: Config): CapacityPolicy {
  let file: CapacityFile = {};
  if (config.CAPACITY_CONFIG_FILE) {
    let raw: unknown;
    try {
      raw = JSON.parse(readFileSync(config.CAPACITY_CONFIG_FILE, 'utf8'));
    } catch (error) {
      throw new ConfigError(`CAPACITY_CONFIG_FILE ${config.CAPACITY_CONFIG_FILE}: ${error instanceof Error ? error.message : String(error)}`);
    }
    const parsed = CapacityFileSchema.safeParse(raw);
    if (!parsed.success) {
      const detail = parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ');
      throw new ConfigError(`CAPACITY_CONFIG_FILE ${config.CAPACITY_CONFIG_FILE} is invalid: ${detail}`);
    }
    file = parsed.data;
  }
  return capacityPolicy(
    {
      perOwner: config.CAPACITY_PER_OWNER,
      global: config.CAPACITY_GLOBAL,
      retryAfterSeconds: config.CAPACITY_RETRY_AFTER_SECONDS,
      runningPerOwner: config.CAPACITY_RUNNING_PER_OWNER,
    },
    file,
  );
}
