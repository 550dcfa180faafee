#!/usr/bin/env node
// `npx durable-ops …`: runs the TypeScript CLI (cli/durable-ops.ts) through tsx, a runtime dependency of this package.
import { register } from 'tsx/esm/api';

register();
await import('../cli/durable-ops.ts');
