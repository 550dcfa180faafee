/**
 * `npm run openapi [-- <file>]`: writes the API's OpenAPI 3.1 document — the one `GET /api/openapi.json` serves,
 * generated from the routes' zod schemas — to `<file>` (default `openapi.json` in the repository root), pretty-printed,
 * and prints where it wrote it. Needs no database or configuration. Exit code 2 with a usage line on bad arguments.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { API_ROUTES } from '../lib/http/api-routes.js';
import { openApiJson } from '../lib/http/openapi.js';

const USAGE = 'usage: npm run openapi [-- <file>]   (default: openapi.json in the repository root)';

const args = process.argv.slice(2);
if (args.length > 1 || args[0]?.startsWith('-')) {
  process.stderr.write(`${USAGE}\n`);
  process.exit(2);
}
const target = args[0] === undefined ? fileURLToPath(new URL('../openapi.json', import.meta.url)) : resolve(args[0]);
try {
  mkdirSync(dirname(target), { recursive: true });
  writeFileSync(target, `${JSON.stringify(JSON.parse(openApiJson(API_ROUTES)), null, 2)}\n`);
  process.stdout.write(`wrote the OpenAPI 3.1 document to ${target}\n`);
} catch (error) {
  process.stderr.write(`could not write ${target}: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 1;
}
