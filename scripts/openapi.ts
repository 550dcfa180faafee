/**
 * `npm run openapi [-- [--operator] [<file>]]`: writes an OpenAPI 3.1 document generated from the routes' zod schemas,
 * pretty-printed, and prints where it wrote it — the owner API's (the one `GET /api/openapi.json` serves; default
 * `openapi.json` in the repository root) or, with `--operator`, the operator API's (the one `GET /api/ops/openapi.json`
 * serves to `ops:read` callers; default `openapi-operator.json`). Needs no database or configuration. Exit code 2 with
 * a usage line on bad arguments.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { API_ROUTES } from '../lib/http/api-routes.js';
import { openApiJson } from '../lib/http/openapi.js';

const USAGE = 'usage: npm run openapi [-- [--operator] [<file>]]   (default: openapi.json, or openapi-operator.json with --operator, in the repository root)';

const args = process.argv.slice(2);
const audience = args[0] === '--operator' ? 'operator' : 'owner';
const rest = audience === 'operator' ? args.slice(1) : args;
if (rest.length > 1 || rest[0]?.startsWith('-')) {
  process.stderr.write(`${USAGE}\n`);
  process.exit(2);
}
const defaultFile = audience === 'operator' ? '../openapi-operator.json' : '../openapi.json';
const target = rest[0] === undefined ? fileURLToPath(new URL(defaultFile, import.meta.url)) : resolve(rest[0]);
try {
  mkdirSync(dirname(target), { recursive: true });
  writeFileSync(target, `${JSON.stringify(JSON.parse(openApiJson(API_ROUTES, audience)), null, 2)}\n`);
  process.stdout.write(`wrote the ${audience === 'operator' ? 'operator API’s' : 'API’s'} OpenAPI 3.1 document to ${target}\n`);
} catch (error) {
  process.stderr.write(`could not write ${target}: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 1;
}
