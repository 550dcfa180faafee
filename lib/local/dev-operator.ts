import type { Config } from '../config.js';

/**
 * The local stack's operator rule (README "Operator identity"): dev tokens for operators carry the group
 * {@link DEV_OPERATOR_GROUP} in the claim {@link DEV_OPERATOR_GROUP_CLAIM} (`signDevToken` adds it to any token asking
 * for an `ops:` scope), and the local stack, when no `OPERATOR_*` rule is configured, allows exactly that group — so
 * `npm run token -- <you> --scope ops:read,ops:write` signs an operator's token, as the walk-through says, while AWS,
 * where nothing sets a rule by default, refuses every operator route until one is configured.
 */

/** The claim a dev token lists its groups in (an array of strings, passed as `[a b]` like API Gateway passes it). */
export const DEV_OPERATOR_GROUP_CLAIM = 'groups';

/** The group a dev operator token carries and the local stack's default rule allows. */
export const DEV_OPERATOR_GROUP = 'durable-ops-operators';

/**
 * `config` with the local operator rule filled in when it configures none (`OPERATOR_JWT_ISSUER`, `OPERATOR_GROUPS`
 * and `OPERATOR_SUBJECTS` all unset); a configured rule is kept as it is.
 */
export function withLocalOperatorRule(config: Config): Config {
  if (config.OPERATOR_JWT_ISSUER !== undefined || config.OPERATOR_GROUPS.length > 0 || config.OPERATOR_SUBJECTS.length > 0) return config;
  return Object.freeze({ ...config, OPERATOR_GROUP_CLAIM: DEV_OPERATOR_GROUP_CLAIM, OPERATOR_GROUPS: Object.freeze([DEV_OPERATOR_GROUP]) });
}
