/**
 * The stand-in model's JSON-schema instance generator (`schemaInstance`): a deterministic value that satisfies a JSON
 * schema, for the local stack's offline stand-in (`lib/local/stand-in-model.ts`).
 *
 * JSON Schema keywords honoured (the subset `z.toJSONSchema` emits): `type` (also as a list: the first non-null one),
 * `const`, `enum`, `anyOf`/`oneOf` (the first non-null branch), `allOf` (object branches merged), `$ref` to `#`,
 * `#/$defs/…` or `#/definitions/…`; objects: every `required` property and nothing else (so `additionalProperties:
 * false` holds), `minProperties` on records; strings: `minLength`, `maxLength`, `format` (email, uuid, date-time,
 * date, time, uri/url, ipv4, ipv6); arrays: `prefixItems`, `items`, `minItems`, `maxItems` (1–2 items within them);
 * numbers and integers: `minimum`, `maximum`, `exclusiveMinimum`, `exclusiveMaximum`, `multipleOf`. Not honoured:
 * `pattern` (other than through `format`), `uniqueItems` for non-strings, `not`, `if`/`then`. Below 6 levels of
 * nesting arrays get only their `minItems`, so a recursive `$ref` through an array ends; deeper than 32 levels yields
 * `null`.
 */
import { createHash } from 'node:crypto';

const WORDS = [
  'amber', 'brisk', 'cedar', 'delta', 'ember', 'fjord', 'granite', 'harbor', 'indigo', 'juniper', 'kestrel', 'lumen',
  'meadow', 'nimbus', 'orchid', 'pylon', 'quartz', 'ridge', 'sierra', 'timber', 'umber', 'vector', 'willow', 'zephyr',
] as const;

/** Past this nesting, arrays get only their `minItems` (so a recursive schema ends); past {@link MAX_DEPTH}, `null`. */
const SHALLOW_DEPTH = 6;
const MAX_DEPTH = 32;

type JsonSchema = Record<string, unknown>;

function asSchema(value: unknown): JsonSchema {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as JsonSchema) : {};
}

function num(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) ? value : undefined;
}

/** A deterministic unsigned 32-bit number for a seed and a path in the instance. */
function draw(seed: string, path: string): number {
  return createHash('sha256').update(`${seed}\0${path}`).digest().readUInt32BE(0);
}

function phrase(seed: string, path: string, words: number): string {
  const digest = createHash('sha256').update(`${seed}\0${path}\0phrase`).digest();
  const picked = Array.from({ length: words }, (_, i) => WORDS[digest[i % digest.length]! % WORDS.length]);
  return `[stand-in] ${picked.join(' ')}`;
}

function formatted(format: string, seed: string, path: string): string | undefined {
  const hex = createHash('sha256').update(`${seed}\0${path}\0format`).digest('hex');
  switch (format) {
    case 'email':
      return `stand-in.${hex.slice(0, 8)}@example.com`;
    case 'uuid':
      return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-8${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
    case 'date-time':
      return '2000-01-01T00:00:00.000Z';
    case 'date':
      return '2000-01-01';
    case 'time':
      return '00:00:00';
    case 'uri':
    case 'url':
      return `https://example.com/stand-in/${hex.slice(0, 8)}`;
    case 'ipv4':
      return '192.0.2.1';
    case 'ipv6':
      return '2001:db8::1';
    default:
      return undefined;
  }
}

function stringInstance(schema: JsonSchema, seed: string, path: string): string {
  const minLength = num(schema.minLength) ?? 0;
  const maxLength = num(schema.maxLength) ?? Number.POSITIVE_INFINITY;
  let text = (typeof schema.format === 'string' ? formatted(schema.format, seed, path) : undefined) ?? phrase(seed, path, 3 + (draw(seed, path) % 3));
  for (let round = 1; text.length < minLength; round += 1) text = `${text} ${phrase(seed, `${path}+${round}`, 4).slice('[stand-in] '.length)}`;
  if (text.length > maxLength) {
    const cut = text.slice(0, maxLength);
    const space = cut.lastIndexOf(' ');
    text = space > '[stand-in]'.length && space >= minLength ? cut.slice(0, space) : cut;
  }
  return text;
}

function numberInstance(schema: JsonSchema, integer: boolean, seed: string, path: string): number {
  const h = draw(seed, path);
  let lo = num(schema.minimum) ?? Number.NEGATIVE_INFINITY;
  let hi = num(schema.maximum) ?? Number.POSITIVE_INFINITY;
  const exMin = num(schema.exclusiveMinimum);
  const exMax = num(schema.exclusiveMaximum);
  const step = integer ? 1 : 0.5;
  if (exMin !== undefined && exMin >= lo) lo = integer ? Math.floor(exMin) + 1 : exMin + Math.min(step, Number.isFinite(hi) ? (hi - exMin) / 4 : step);
  if (exMax !== undefined && exMax <= hi) hi = integer ? Math.ceil(exMax) - 1 : exMax - Math.min(step, Number.isFinite(lo) ? (exMax - lo) / 4 : step);
  if (integer) {
    lo = Math.ceil(lo);
    hi = Math.floor(hi);
  }
  let value: number;
  if (Number.isFinite(lo) && Number.isFinite(hi)) value = integer ? lo + (h % Math.max(1, hi - lo + 1)) : lo + ((h % 1000) / 1000) * (hi - lo);
  else if (Number.isFinite(lo)) value = lo + (h % 10);
  else if (Number.isFinite(hi)) value = hi - (h % 10);
  else value = h % 100;
  const multipleOf = num(schema.multipleOf);
  if (multipleOf !== undefined && multipleOf > 0) {
    const up = Math.ceil(value / multipleOf) * multipleOf;
    value = up <= hi ? up : Math.floor(value / multipleOf) * multipleOf;
  }
  return Math.min(Math.max(value, lo), hi);
}

function arrayInstance(schema: JsonSchema, root: JsonSchema, seed: string, path: string, depth: number): unknown[] {
  const prefix = Array.isArray(schema.prefixItems) ? schema.prefixItems : [];
  const minItems = Math.max(num(schema.minItems) ?? 0, 0);
  const maxItems = schema.items === false ? prefix.length : (num(schema.maxItems) ?? Number.POSITIVE_INFINITY);
  const wanted = depth >= SHALLOW_DEPTH ? 0 : 1 + (draw(seed, path) % 2);
  const count = Math.min(Math.max(minItems, prefix.length, wanted), maxItems);
  return Array.from({ length: count }, (_, i) => instance(i < prefix.length ? prefix[i] : schema.items, root, seed, `${path}/${i}`, depth + 1));
}

function objectInstance(schema: JsonSchema, root: JsonSchema, seed: string, path: string, depth: number): Record<string, unknown> {
  const properties = asSchema(schema.properties);
  const required = Array.isArray(schema.required) ? schema.required.filter((key): key is string => typeof key === 'string') : [];
  const result: Record<string, unknown> = {};
  for (const key of required) result[key] = instance(properties[key], root, seed, `${path}/${key}`, depth + 1);
  const extra = schema.additionalProperties;
  for (let i = Object.keys(result).length; i < (num(schema.minProperties) ?? 0) && extra !== false; i += 1) {
    result[`stand_in_${i}`] = instance(extra === true ? {} : extra, root, seed, `${path}/stand_in_${i}`, depth + 1);
  }
  return result;
}

function resolveRef(ref: string, root: JsonSchema): JsonSchema {
  if (ref === '#') return root;
  const match = /^#\/(\$defs|definitions)\/(.+)$/.exec(ref);
  return match ? asSchema(asSchema(root[match[1]!])[decodeURIComponent(match[2]!)]) : {};
}

function mergeAllOf(branches: unknown[]): JsonSchema {
  const merged: JsonSchema = {};
  const properties: JsonSchema = {};
  const required = new Set<string>();
  for (const branch of branches.map(asSchema)) {
    Object.assign(merged, branch);
    Object.assign(properties, asSchema(branch.properties));
    if (Array.isArray(branch.required)) for (const key of branch.required) if (typeof key === 'string') required.add(key);
  }
  return { ...merged, properties, required: [...required] };
}

function isNullSchema(value: unknown): boolean {
  return asSchema(value).type === 'null';
}

/**
 * A JSON value satisfying `schemaValue` (the keywords listed at the top of this file), derived from `seed` alone.
 * Exported for the stand-in's own tests and for local tooling; not a general JSON Schema sampler.
 */
export function schemaInstance(schemaValue: unknown, seed: string): unknown {
  return instance(schemaValue, asSchema(schemaValue), seed, '', 0);
}

function instance(schemaValue: unknown, root: JsonSchema, seed: string, path: string, depth: number): unknown {
  if (depth > MAX_DEPTH) return null;
  const schema = asSchema(schemaValue);
  if (typeof schema.$ref === 'string') return instance({ ...resolveRef(schema.$ref, root), ...schema, $ref: undefined }, root, seed, path, depth + 1);
  if ('const' in schema) return schema.const;
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return schema.enum[draw(seed, path) % schema.enum.length];
  for (const key of ['anyOf', 'oneOf'] as const) {
    const branches = schema[key];
    if (Array.isArray(branches) && branches.length > 0) return instance(branches.find((b) => !isNullSchema(b)) ?? branches[0], root, seed, path, depth + 1);
  }
  if (Array.isArray(schema.allOf) && schema.allOf.length > 0) {
    const { allOf, ...rest } = schema;
    return instance(mergeAllOf([rest, ...(allOf as unknown[])]), root, seed, path, depth + 1);
  }
  const types = Array.isArray(schema.type) ? schema.type : [schema.type];
  const type = types.find((t) => t !== 'null') ?? types[0] ?? (schema.properties ? 'object' : schema.items || schema.prefixItems ? 'array' : 'string');
  switch (type) {
    case 'object':
      return objectInstance(schema, root, seed, path, depth);
    case 'array':
      return arrayInstance(schema, root, seed, path, depth);
    case 'integer':
      return numberInstance(schema, true, seed, path);
    case 'number':
      return numberInstance(schema, false, seed, path);
    case 'boolean':
      return draw(seed, path) % 2 === 0;
    case 'null':
      return null;
    default:
      return stringInstance(schema, seed, path);
  }
}
