/**
 * The environment for an `npm` child of a test: this process's, without the `npm_*` variables of a surrounding
 * `npm test` (`npm_config_prefix` and friends would point the child at this repository's package), `INIT_CWD`, or
 * `NODE_OPTIONS` (no TypeScript loader in the child).
 */
export function npmChildEnv(): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(process.env).filter(([key]) => !/^npm_/i.test(key) && key !== 'NODE_OPTIONS' && key !== 'INIT_CWD'));
}
