/** A TCP port on 127.0.0.1 that was free a moment ago, below the ephemeral range; the chaos harness uses the same helper. */
export { freeLoopbackPort as freePort } from '../../chaos/mariadb-instance.js';
