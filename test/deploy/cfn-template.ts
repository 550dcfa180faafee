import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root. */
export const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** A CloudFormation template, as `osls package` writes it (JSON). */
export interface Template {
  Resources: Record<string, Resource>;
  Conditions?: Record<string, unknown>;
  Outputs?: Record<string, { Value: unknown }>;
}

/** One resource of a {@link Template}. */
export interface Resource {
  Type: string;
  Condition?: string;
  DependsOn?: string | string[];
  Properties: Record<string, any>;
}

/** What one run of a command printed, and its exit code. */
export interface Run {
  readonly code: number;
  readonly output: string;
}

/** Where osls caches its compiled config schema (default `~/.serverless`): a temp dir, so a read-only home is fine. */
let schemaCacheDir: string | undefined;

/** Removes the schema cache {@link oslsPackage} created, if any (call it once the file's tests are done). */
export function removeOslsCache(): void {
  if (schemaCacheDir) rmSync(schemaCacheDir, { recursive: true, force: true });
  schemaCacheDir = undefined;
}

/**
 * The environment osls runs in: no AWS credentials or profile at all (packaging must need none), no colours, its
 * schema cache in a temp dir. osls 4.3 needs no dummy credentials (nor network) for `package`.
 */
function offlineEnv(): NodeJS.ProcessEnv {
  schemaCacheDir ??= mkdtempSync(join(tmpdir(), 'durable-ops-osls-cache-'));
  const env: NodeJS.ProcessEnv = { ...process.env, FORCE_COLOR: '0', NO_COLOR: '1', SLS_SCHEMA_CACHE_BASE_DIR: schemaCacheDir };
  for (const name of ['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY', 'AWS_SESSION_TOKEN', 'AWS_PROFILE', 'AWS_DEFAULT_PROFILE']) delete env[name];
  return env;
}

/** Runs `node <args>` in `cwd`; never rejects. */
export function runNode(args: readonly string[], options: { cwd?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number } = {}): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      args,
      { cwd: options.cwd ?? ROOT, env: options.env ?? offlineEnv(), timeout: options.timeoutMs ?? 120_000, maxBuffer: 16 * 1024 * 1024 },
      (error, stdout, stderr) => resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, output: `${stdout}${stderr}` }),
    );
  });
}

/** `osls package --stage ci` of the serverless.yml in `cwd` with `params`, into a fresh temp directory. */
export async function oslsPackage(params: Record<string, string>, cwd = ROOT): Promise<Run & { dir: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'durable-ops-package-'));
  const args = [join(ROOT, 'node_modules/osls/bin/serverless.js'), 'package', '--stage', 'ci', '--package', dir];
  for (const [name, value] of Object.entries(params)) args.push(`--param=${name}=${value}`);
  return { ...(await runNode(args, { cwd })), dir };
}

/** Reads the update-stack template `osls package` wrote into `dir`. */
export function readTemplate(dir: string): Template {
  return JSON.parse(readFileSync(join(dir, 'cloudformation-template-update-stack.json'), 'utf8')) as Template;
}

/** The resources of `type`, by logical id. */
export function resourcesOf(template: Template, type: string): Record<string, Resource> {
  return Object.fromEntries(Object.entries(template.Resources).filter(([, r]) => r.Type === type));
}

/**
 * Evaluates the intrinsic functions this project's templates use, the way CloudFormation would for one set of
 * parameter values: `Fn::Split`, `Fn::Join`, `Fn::Sub` (list form, variables from its map only), `Fn::Equals`,
 * `Fn::Not`, `Fn::If` (conditions from the template; a property whose value is `Ref: AWS::NoValue` is dropped).
 * `Ref`, `Fn::GetAtt` and anything else stay as they are.
 */
export function evaluate(node: unknown, template: Template): unknown {
  if (Array.isArray(node)) return node.map((n) => evaluate(n, template));
  if (node === null || typeof node !== 'object') return node;
  const entries = Object.entries(node);
  const [key, raw] = entries.length === 1 ? entries[0]! : ['', undefined];
  const arg = () => evaluate(raw, template) as any;
  switch (key) {
    case 'Fn::Split': {
      const [separator, value] = arg();
      return typeof value === 'string' ? value.split(separator) : { 'Fn::Split': [separator, value] };
    }
    case 'Fn::Join': {
      const [separator, items] = arg();
      return Array.isArray(items) && items.every((i) => typeof i === 'string') ? items.join(separator) : { 'Fn::Join': [separator, items] };
    }
    case 'Fn::Sub': {
      const [text, vars] = arg();
      return (text as string).replace(/\$\{([A-Za-z0-9]+)\}/g, (whole, name: string) => (typeof vars?.[name] === 'string' ? vars[name] : whole));
    }
    case 'Fn::Equals': {
      const [a, b] = arg();
      return JSON.stringify(a) === JSON.stringify(b);
    }
    case 'Fn::Not':
      return !arg()[0];
    case 'Fn::If': {
      const [condition, whenTrue, whenFalse] = raw as [string, unknown, unknown];
      return evaluate(conditionHolds(template, condition) ? whenTrue : whenFalse, template);
    }
    default: {
      // `Ref: AWS::NoValue` (from an `Fn::If`) removes the property, as CloudFormation does.
      const evaluated = entries.map(([k, v]) => [k, evaluate(v, template)] as const);
      return Object.fromEntries(evaluated.filter(([k, v]) => k === 'Ref' || JSON.stringify(v) !== '{"Ref":"AWS::NoValue"}'));
    }
  }
}

/** Whether the template's condition `name` holds for the parameters it was packaged with. */
export function conditionHolds(template: Template, name: string): boolean {
  const condition = template.Conditions?.[name];
  if (condition === undefined) throw new Error(`No condition ${name}`);
  return evaluate(condition, template) === true;
}

/** Every IAM statement a role holds: its inline policies, and the `AWS::IAM::Policy` resources attached to it. */
export function statementsOf(template: Template, roleId: string): { statement: Record<string, any>; condition?: string }[] {
  const role = template.Resources[roleId];
  if (role?.Type !== 'AWS::IAM::Role') throw new Error(`${roleId} is not a role`);
  const inline = ((role.Properties.Policies ?? []) as { PolicyDocument: { Statement: Record<string, any>[] } }[]).flatMap((p) =>
    p.PolicyDocument.Statement.map((statement) => ({ statement })),
  );
  const attached = Object.values(resourcesOf(template, 'AWS::IAM::Policy'))
    .filter((p) => (p.Properties.Roles as unknown[]).some((r) => JSON.stringify(r) === JSON.stringify({ Ref: roleId })))
    .flatMap((p) => (p.Properties.PolicyDocument.Statement as Record<string, any>[]).map((statement) => ({ statement, ...(p.Condition ? { condition: p.Condition } : {}) })));
  return [...inline, ...attached];
}

/** The sorted, de-duplicated `Action`s of `statements` (`Allow` only). */
export function actionsOf(statements: { statement: Record<string, any> }[]): string[] {
  const actions = statements.filter(({ statement }) => statement.Effect === 'Allow').flatMap(({ statement }) => [statement.Action].flat() as string[]);
  return [...new Set(actions)].sort();
}

/** Every `Ref` and `Fn::GetAtt` target, and every condition name used, anywhere in `node`. */
export function references(node: unknown, found = { refs: new Set<string>(), conditions: new Set<string>() }) {
  if (Array.isArray(node)) node.forEach((n) => references(n, found));
  else if (node !== null && typeof node === 'object') {
    for (const [key, value] of Object.entries(node)) {
      if (key === 'Ref' && typeof value === 'string') found.refs.add(value);
      else if (key === 'Fn::GetAtt' && Array.isArray(value)) found.refs.add(String(value[0]));
      else if ((key === 'Condition' && typeof value === 'string') || (key === 'Fn::If' && Array.isArray(value))) found.conditions.add(String(key === 'Condition' ? value : value[0]));
      references(value, found);
    }
  }
  return found;
}
