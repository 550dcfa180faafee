import type { Config } from '../config.js';
import type { ApiEvent } from './route-types.js';

/**
 * Who may use the operator surface (docs/design.md §8 "Ops surface"), beyond the scope: the `ops:read` / `ops:write`
 * scopes choose read vs write, but a scope alone is not an identity — an identity provider that grants scopes per client
 * (a Cognito app client, OAuth client credentials) lets any owner ask for them. A token is an operator's only when its
 * verified claims pass every part configured here:
 *
 * - `issuer` (and `audience`): the claims come from the operator identity provider — `iss` equals `issuer` exactly and,
 *   when `audience` is set, `aud` holds it or `client_id` equals it (the claims the JWT authorizer checks, AWS docs
 *   "Control access to HTTP APIs with JWT authorizers in API Gateway"). In AWS a second JWT authorizer (`operatorJwt`,
 *   `serverless.yml`) guards `/api/ops/*`; the Lambda checks again rather than trust the route's configuration.
 * - `groupClaim` + `groups`, and/or `subjects`: the caller is listed — the claim `groupClaim` (e.g. `cognito:groups`)
 *   holds one of `groups`, or `sub` is one of `subjects`.
 */
export interface OperatorRule {
  /** The operator issuer (`OPERATOR_JWT_ISSUER`), compared with `iss` byte for byte. */
  readonly issuer?: string;
  /** The operator audience or app client id (`OPERATOR_JWT_AUDIENCE`); only with `issuer`. */
  readonly audience?: string;
  /** The claim that lists the caller's groups (`OPERATOR_GROUP_CLAIM`, e.g. `cognito:groups`). */
  readonly groupClaim?: string;
  /** Groups whose members are operators (`OPERATOR_GROUPS`); only with `groupClaim`. */
  readonly groups: readonly string[];
  /** Subjects (`sub`) that are operators (`OPERATOR_SUBJECTS`). */
  readonly subjects: readonly string[];
}

/**
 * The operator rule of `config` (`OPERATOR_JWT_ISSUER`, `OPERATOR_JWT_AUDIENCE`, `OPERATOR_GROUP_CLAIM`,
 * `OPERATOR_GROUPS`, `OPERATOR_SUBJECTS`; README "Configuration"), or `undefined` when none of them is set — and then
 * no token is an operator's: every operator route answers 404.
 */
export function operatorRuleFromConfig(config: Config): OperatorRule | undefined {
  const rule: OperatorRule = {
    ...(config.OPERATOR_JWT_ISSUER ? { issuer: config.OPERATOR_JWT_ISSUER } : {}),
    ...(config.OPERATOR_JWT_AUDIENCE ? { audience: config.OPERATOR_JWT_AUDIENCE } : {}),
    ...(config.OPERATOR_GROUP_CLAIM ? { groupClaim: config.OPERATOR_GROUP_CLAIM } : {}),
    groups: config.OPERATOR_GROUPS,
    subjects: config.OPERATOR_SUBJECTS,
  };
  return rule.issuer === undefined && rule.groups.length === 0 && rule.subjects.length === 0 ? undefined : Object.freeze(rule);
}

/**
 * The values of a verified claim as the JWT authorizer hands them to the Lambda in payload 2.0: a JSON array claim
 * arrives as one string, its items space-separated in brackets (`["a","b"]` → `"[a b]"`); a string claim is one value.
 * A real array (the shape a test or another front end may pass) is taken as it is; anything else has no values.
 */
export function claimValues(value: unknown): readonly string[] {
  if (Array.isArray(value)) return value.filter((item): item is string => typeof item === 'string');
  if (typeof value !== 'string') return [];
  return value.startsWith('[') && value.endsWith(']') ? value.slice(1, -1).split(' ').filter((item) => item !== '') : [value];
}

/**
 * Whether the verified claims of `event` pass `rule` (every configured part, see {@link OperatorRule}). No rule, or no
 * claims, passes nothing.
 */
export function passesOperatorRule(rule: OperatorRule | undefined, event: ApiEvent): boolean {
  const claims: Readonly<Record<string, unknown>> | undefined = event.requestContext?.authorizer?.jwt?.claims;
  if (rule === undefined || claims === undefined) return false;
  if (rule.issuer !== undefined) {
    if (claims.iss !== rule.issuer) return false;
    if (rule.audience !== undefined && !claimValues(claims.aud).includes(rule.audience) && claims.client_id !== rule.audience) return false;
  }
  if (rule.groups.length === 0 && rule.subjects.length === 0) return true;
  const groups = rule.groupClaim === undefined ? [] : claimValues(claims[rule.groupClaim]);
  return groups.some((group) => rule.groups.includes(group)) || (typeof claims.sub === 'string' && rule.subjects.includes(claims.sub));
}
