import { hostname, userInfo } from 'node:os';
import { hasControlOrFormat, isWellFormedText } from '../jobs/job-limits.js';

/** Longest actor label, in characters (Unicode code points, as the columns that store one count them). */
const ACTOR_MAX_CHARS = 128;

/**
 * Who did something on an operation, as the rows that record it name them (docs/design.md §8 "Ops surface"):
 * `owner` — the owner, through the owner API or the library with an `OwnerScope`; `operator:<sub>` — an operator over
 * the operator API (`sub` of the verified token); `cli:<user>@<host>` — `durable-ops` run by whoever holds the database
 * credentials. At most 128 characters. Stored as the canceller (`operations.cancel_requested_by`) and as the lease
 * owner of an operator's recovery action (the DLQ redrive, resolve-unknown).
 */
export type Actor = string;

/**
 * Refuses what is not an {@link Actor}: an empty label, one over 128 characters (the columns' bound), a lone surrogate,
 * or a control or format character (`\p{Cc}`, `\p{Cf}` — a label is printed by `durable-ops show` and the console, where
 * a newline or terminal escape would forge a row, as `OwnerUserIdSchema` refuses them in owner ids) — a programming
 * error of a library caller, thrown before anything is written.
 * @throws {TypeError} for any of those.
 */
export function assertActor(by: Actor): void {
  if (typeof by !== 'string' || by === '' || Array.from(by).length > ACTOR_MAX_CHARS || !isWellFormedText(by) || hasControlOrFormat(by)) {
    throw new TypeError(`an actor is 1–${ACTOR_MAX_CHARS} characters of well-formed text without control or format characters (owner, operator:<sub>, cli:<user>@<host>)`);
  }
}

/** The {@link Actor} of the owner's own command. */
export const OWNER_ACTOR: Actor = 'owner';

/** Cut to {@link ACTOR_MAX_CHARS} code points — never through a surrogate pair, which the drivers would store as U+FFFD. */
function bounded(label: string): Actor {
  return Array.from(label).slice(0, ACTOR_MAX_CHARS).join('');
}

/**
 * The {@link Actor} of an operator over HTTP: `operator:<sub>`, cut to 128 characters counted as code points (so the
 * stored label equals the one the guarded UPDATEs compare). `sub` is a verified owner id (`OwnerUserIdSchema`: at most
 * 128 characters), so only its tail can be cut.
 */
export function operatorActor(sub: string): Actor {
  return bounded(`operator:${sub}`);
}

/**
 * The {@link Actor} of a `durable-ops` command: `cli:<OS user>@<host name>` (`cli:<host name>` when the OS has no user
 * name), cut to 128 characters. Control and format characters in either name (the OS does not forbid them) become `?`,
 * so the label always passes {@link assertActor}.
 */
export function cliActor(): Actor {
  let user = '';
  try {
    user = userInfo().username;
  } catch {
    // No passwd entry for the uid (a container): the host alone.
  }
  const label = `cli:${user ? `${user}@` : ''}${hostname()}`;
  return bounded(Array.from(label, (char) => (hasControlOrFormat(char) ? '?' : char)).join(''));
}
