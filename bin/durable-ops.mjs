#!/usr/bin/env node
// `npx durable-ops …`: the operator CLI, compiled (`npm run build:lib`, run by `prepack`) to dist/cli/durable-ops.js.
// Plain Node, no TypeScript loader at run time. In a checkout without dist/, `npm run ops -- …` runs the sources (tsx).
const cli = new URL('../dist/cli/durable-ops.js', import.meta.url);
try {
  await import(cli.href);
} catch (error) {
  if (error?.code === 'ERR_MODULE_NOT_FOUND' && String(error.message).includes(cli.pathname)) {
    process.stderr.write(`durable-ops: ${cli.pathname} is missing; build it with \`npm run build:lib\` (or use \`npm run ops -- …\`).\n`);
    process.exitCode = 1;
  } else {
    throw error;
  }
}
