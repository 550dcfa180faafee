/*
 * model/lifecycle.pml: the lifecycle of ONE durable-ops operation as the code implements it, for spin 6.5.
 *
 * Run it with `bash model/check.sh`; model/README.md says what it covers and what it does not. The design of record
 * is docs/design.md: §2 (states, transition table, cancel), §3 (leases and fences, the database clock rule), §5
 * (worker) and §6 (sweeper). Every "now" is the database clock: a tick counter, `now`, that the Clock process
 * advances nondeterministically up to MAXT.
 *
 * The processes share one operation row:
 *   Worker x NWORKERS   claim, pre-run recheck, external calls, heartbeats, self-fence, exactly one outcome
 *   Owner               cancel (waiting → cancelled, running → cancel requested, succeeded/failed → 409), retry
 *   Sweeper             lease expiry, deadline pass
 *   Clock               the database clock
 *
 * Each database transaction is one d_step, a single indivisible step. MariaDB runs each guarded UPDATE under a row
 * lock and commits it whole, and the code checks its row count, so no other process ever sees half of one. The
 * reads the code makes before a guarded UPDATE are folded into that step: the owner's row read, and the sweeper's
 * SELECT … FOR UPDATE, which is in the same transaction anyway. Folding them in loses no behaviour that could change
 * the row. A decision made on a stale read fails the UPDATE's guard and is made again from a fresh read (the
 * MAX_RACES loop in owner-commands.ts, the sweeper's TransitionRaceError rollback).
 *
 * Compile-time switches (model/check.sh runs each one; -D on the spin command line):
 *   (none)             the current design. It must verify with 0 errors.
 *   OLD_FAIL_PATH      the failure path before commit f5a3fba: transaction 1 checks for a cancel, then transaction 2
 *                      writes the failure with no cancel guard. It must violate p_cancel_wins.
 *   NO_SELF_FENCE      the worker never fences itself; it stops only when a heartbeat reports the lease lost. It must
 *                      violate p_self_fence.
 *   FENCE_BY_TIMER     the self-fence as lib/worker/heartbeat-loop.ts implements it (commit 9ba584c): a timer that
 *                      aborts the handler's AbortSignal once the local deadline is due, while calls check only the
 *                      signal. It violates p_self_fence: a worker paused past its lease end can make a call before its
 *                      overdue fence timer runs (model/README.md, "Findings").
 *   FENCE_FROM_REPLY   the worker dates its local deadline from when an acknowledgement ARRIVED, not from when its
 *                      request was SENT. It must violate p_fence_margin, and with L >= 2M + 2 (-DL=4) p_self_fence.
 *   GUARD_STATUS_ONLY  the lease guard checks only status = 'running'. This is the bug recorded in
 *                      test/chaos/fixtures/completion-guard-without-lease-token.json. It must violate p_stale_write.
 *   PROBES             turns on the vacuity probes (listed below, after the properties): each prints its name the
 *                      first time its step is explored. model/check.sh runs the design with them on and demands
 *                      that every probe is reached, so the model cannot quietly stop exploring what the properties
 *                      are about.
 *   OFF_p_fence_margin turns p_fence_margin off: for the fence mutants, whose margin violation would otherwise be
 *                      reported before the lease violation.
 */

/* ---------------------------------------------------------------------------------------------------------------
 * Bounds. Times are ticks of the database clock.
 * ------------------------------------------------------------------------------------------------------------- */
#ifndef NWORKERS
#define NWORKERS 2  /* worker processes (Lambda invocations one after another, each one at a time) */
#endif
#ifndef MAXA
#define MAXA    2   /* max_attempts of every cycle */
#endif
#ifndef RETRIES
#define RETRIES 1   /* owner retries allowed (MAX_MANUAL_RETRIES): cycles 0 … RETRIES */
#endif
#ifndef L
#define L       3   /* lease length: a claim or a heartbeat sets lease_expires_at = now + L */
#endif
#ifndef M
#define M       1   /* self-fence margin, at least one heartbeat interval (H = 1 tick: a beat may leave at any tick) */
#endif
#ifndef DL
#define DL      5   /* per-cycle start deadline: deadline_at = now + DL at admission and at each owner retry */
#endif
#ifndef MAXT
#define MAXT    10  /* the clock stops here, so behaviours are explored up to database time MAXT */
#endif

/* ---------------------------------------------------------------------------------------------------------------
 * The operation row (table `operations`), its capacity slots and its notifications. The states are those of
 * lib/operations/lifecycle/operation-status.ts except waiting_for_external_fallback: its guards and consequences
 * are those of waiting_for_retry, so it is not modelled (model/README.md, "Not covered").
 * ------------------------------------------------------------------------------------------------------------- */
mtype = { QUEUED, RUNNING, WFR, SUCCEEDED, FAILED, CANCELLED };   /* WFR = waiting_for_retry */

mtype st = QUEUED;  /* status (the row was admitted at time 0: `admit` is the initial state) */
byte attempt = 0;   /* attempt: +1 at each claim, 0 after an owner retry */
byte cycle = 0;     /* retry_count: the owner-retry cycle */
byte tok = 0;       /* lease_token; 0 = NULL. A claim's token is cycle*MAXA + attempt, so each claim has a fresh one */
byte lease_end = 0; /* lease_expires_at; 0 = NULL (a set one is >= L > 0) */
bit  cancel_req = 0;/* cancel_requested_at IS NOT NULL */
byte dl = DL;       /* deadline_at */
byte adm = 1;       /* admission slots held: the owner-pool and global-pool pair, always reserved and released together */
byte route = 0;     /* route (execution) slots held: the task type runs on a limited route */
byte notif = 0;     /* rows of operation_notifications for the current cycle (primary key (operation_id, cycle)) */
byte now = 0;       /* the database clock (UTC_TIMESTAMP(6)), in ticks */

/* Ghost variables. They are not columns; only the properties read them. */
byte cancel_att = 0;/* the attempt that was running when the owner's cancel was accepted; 0 = none this cycle */
byte succ = 0;      /* successes committed (the chaos "effect log": one row per commit of `complete`) */

/* Property names. Each is a hidden constant (kept out of the state vector), 1 = checked. Every assertion is
 * CHECK(p_name, condition), so a violation prints the name of its property; model/check.sh greps for it. */
#define CHECK(p, cond) assert(!(p) || (cond))
hidden byte p_table = 1;                /* a status moves only along the transition table (TRANSITIONS) */
hidden byte p_one_notification = 1;     /* exactly one notification per terminal transition, none otherwise */
hidden byte p_one_success = 1;          /* at most one success commits */
hidden byte p_capacity_iff_active = 1;  /* admission slots are held iff the operation is active, the route slot iff running */
hidden byte p_lease_iff_running = 1;    /* the lease token (and expiry) is non-null iff the status is running */
hidden byte p_cancel_wins = 1;          /* once a cancel is accepted while running: no retry, no further attempt, no failed */
hidden byte p_stale_write = 1;          /* a worker's write lands only while its own lease holds (token and expiry) */
hidden byte p_self_fence = 1;           /* no external call of an attempt at a database time >= its lease end */
#ifdef OFF_p_fence_margin
hidden byte p_fence_margin = 0;
#else
hidden byte p_fence_margin = 1;         /* … and none later than M ticks before it (the room a pause after the check has) */
#endif

/* Vacuity probes. PROBE_AT(n, name, cond) sits at the step where its scenario happens. With -DPROBES it prints
 * "probe reached: <name>" the first time the search runs that step with `cond` true. A C bit mask outside the state
 * vector remembers which probes have printed, so probes add no state and decide nothing. (The c_code steps do change
 * which steps partial-order reduction may merge, so the number of states stored differs a little from a run without
 * them; both searches are exhaustive.) model/check.sh
 * demands every probe below in every run of the design: a guard that quietly made a scenario unreachable would
 * otherwise leave the properties holding vacuously. One per event of the transition table, then scenarios:
 *   probe 1 claim_queued              claim: queued → running
 *   probe 2 claim_retry               claim: waiting_for_retry → running
 *   probe 3 owner_cancel              owner_cancel: waiting → cancelled
 *   probe 4 request_cancel            request_cancel: running, cancel requested
 *   probe 5 deadline_passed           deadline_passed: waiting → failed
 *   probe 6 complete                  complete: running → succeeded
 *   probe 7 retryable_failure         retryable_failure: running → waiting_for_retry
 *   probe 8 permanent_failure         permanent_failure of a final kind before the last attempt
 *   probe 9 retries_exhausted         permanent_failure: a failure on the last attempt (retries_exhausted, timeout)
 *   probe 10 acknowledge_cancel       acknowledge_cancel by the worker that saw the cancel
 *   probe 11 failure_cancelled        failAttempt turns a failure into cancelled (the cancel committed first)
 *   probe 12 lease_expired_retry      lease_expired_retry: running → waiting_for_retry
 *   probe 13 lease_expired_final      lease_expired_final: running → failed
 *   probe 14 lease_expired_cancelled  lease_expired_cancelled: running → cancelled
 *   probe 15 owner_retry              owner_retry: failed or cancelled → queued
 *   probe 16 recheck_cancel           the pre-run recheck finds the cancel
 *   probe 17 heartbeat_cancel         a heartbeat reply reports the cancel
 *   probe 18 heartbeat_moves_deadline an acknowledgement moves the local deadline later
 *   probe 19 stale_heartbeat          a stale worker's heartbeat lands after another attempt took the row: refused
 *   probe 20 success_over_cancel      a success commits after the owner's cancel was accepted, and stands
 *   probe 21 fenced_lease_holds       a worker fences itself while its lease still holds (an acknowledgement was lost)
 *   probe 22 last_safe_call           an external call at the last tick the margin allows (lease end - M - 1)
 *   probe 23 retry_cycle_success      the owner-retry cycle succeeds on its last attempt
 *   probe 24 deadline_after_retry     the sweeper fails the retry cycle at its deadline
 *   probe 25 hung_heartbeat           a heartbeat hangs while its worker's lease holds */
#ifdef PROBES
c_decl { unsigned long long probes_reached; }
#define PROBE_AT(n, name, cond) if \
  :: (cond) -> c_code { if (!(probes_reached & (1ULL << n))) { probes_reached |= 1ULL << n; printf("probe reached: %s\n", #name); } } \
  :: else -> skip \
  fi
#else
#define PROBE_AT(n, name, cond) skip
#endif

#define ACTIVE(s)   (s == QUEUED || s == RUNNING || s == WFR)
#define TERMINAL(s) (s == SUCCEEDED || s == FAILED || s == CANCELLED)
#define WAITING(s)  (s == QUEUED || s == WFR)

/* lib/operations/lifecycle/operation-status.ts TRANSITIONS, as (from, to) pairs. */
#define IN_TABLE(f, t) ( \
     (WAITING(f) && t == RUNNING)        /* claim */                                                              \
  || (WAITING(f) && t == CANCELLED)      /* owner_cancel */                                                       \
  || (WAITING(f) && t == FAILED)         /* deadline_passed */                                                    \
  || (f == RUNNING && t == RUNNING)      /* request_cancel */                                                     \
  || (f == RUNNING && t == SUCCEEDED)    /* complete */                                                           \
  || (f == RUNNING && t == WFR)          /* retryable_failure, lease_expired_retry */                             \
  || (f == RUNNING && t == FAILED)       /* permanent_failure, lease_expired_final */                             \
  || (f == RUNNING && t == CANCELLED)    /* acknowledge_cancel, lease_expired_cancelled */                        \
  || ((f == FAILED || f == CANCELLED) && t == QUEUED))   /* owner_retry */

/* lib/operations/lifecycle/lifecycle.repository.ts leaseHolds: the row has the lease's (id, owner, token), it is
 * running, and lease_expires_at > now on the database clock. Every worker write carries this guard. */
#ifdef GUARD_STATUS_ONLY
#define LEASE_HOLDS(t) (st == RUNNING)          /* WRONG on purpose: the chaos fixture's guard */
#else
#define LEASE_HOLDS(t) (st == RUNNING && tok == t && lease_end > now)
#endif

/* The §2 invariants and the README's Reliability-table properties over the row. They are checked after every step
 * that changes the row, and the row changes only inside those steps, so together they are a global invariant. */
inline check_row() {
  CHECK(p_lease_iff_running, ((tok != 0) == (st == RUNNING)) && ((lease_end != 0) == (st == RUNNING)));
  CHECK(p_capacity_iff_active, adm == (ACTIVE(st) -> 1 : 0) && route == (st == RUNNING -> 1 : 0));
  CHECK(p_one_notification, notif == (TERMINAL(st) -> 1 : 0));
  CHECK(p_one_success, succ <= 1 && (st == SUCCEEDED -> succ == 1 : 1));
  /* Cancel wins. Once the cancel is accepted while running (cancel_att set), this cycle is never waiting_for_retry
   * (nor queued) and never failed, and it spends no further attempt. It ends cancelled, or succeeded by the very
   * attempt that was running when the cancel was accepted: a success that commits before the worker saw the cancel
   * stands. */
  CHECK(p_cancel_wins, (cancel_att == 0 ||
         ((st == RUNNING || st == CANCELLED || st == SUCCEEDED) && attempt == cancel_att)));
}

/* Every worker write that lands (its guard matched the row) must be its own lease's: same token, not expired. With
 * the real guard this is the guard itself; GUARD_STATUS_ONLY shows that the check bites. */
inline own_lease() {
  CHECK(p_stale_write, st == RUNNING && tok == mytok && lease_end > now)
}

/* lib/operations/lifecycle/transitions.ts move(): the one write of every status move, plus the consequences that
 * the table's shape implies, in the same transaction. Leaving `running` clears the lease (LEASE_CLEARED). A move
 * into a terminal state writes one notification (insertTerminalNotifications) and releases every slot
 * (releaseCapacity 'all'). A move from running back to a waiting state releases only the route slot
 * (releaseCapacity 'execution'). releaseCapacity frees every slot the operation holds (UPDATE … WHERE operation_id
 * = ?), hence `= 0`, whereas a reservation takes one more slot, hence `++`. */
inline move(to) {
  CHECK(p_table, IN_TABLE(st, to));
  if
  :: st == RUNNING && to != RUNNING -> tok = 0; lease_end = 0
  :: else -> skip
  fi;
  if
  :: TERMINAL(to) -> notif++; adm = 0; route = 0
  :: !TERMINAL(to) && st == RUNNING && to != RUNNING -> route = 0
  :: else -> skip
  fi;
  st = to
}

/* ---------------------------------------------------------------------------------------------------------------
 * Clock: the database clock, UTC_TIMESTAMP(6) (docs/design.md §3, "The database clock rule"). It moves one tick at
 * any moment, so any process may stall for any number of ticks between two of its steps.
 * ------------------------------------------------------------------------------------------------------------- */
active proctype Clock() {
end:
  do
  :: d_step { now < MAXT -> now++ }
  od
}

/* ---------------------------------------------------------------------------------------------------------------
 * Worker: one worker Lambda invocation after another (lib/worker/worker-handler.ts). Each invocation runs:
 *   claim            lib/operations/lease/claim-operation.ts claimNextOperation → lifecycle/transitions.ts
 *                    claimLocked → lifecycle/lifecycle.repository.ts markClaimed
 *   pre-run recheck  lib/operations/lease/lease-operations.ts cancelRequestedUnderLease
 *   the run          lib/worker/run-claimed-operation.ts runAttempt (handler, abort on cancel, grace, outcome)
 *   heartbeats       lib/worker/heartbeat-loop.ts startHeartbeats → lib/operations/lease/heartbeat.ts heartbeat
 *   self-fence       as specified in docs/design.md §3 "Self-fencing" (implemented in heartbeat-loop.ts by commit
 *                    9ba584c; FENCE_BY_TIMER models how). The local deadline is the database time at which the
 *                    last ACKNOWLEDGED claim or heartbeat was SENT, plus L - M. Once it has passed, the worker
 *                    makes no external call and no write; the default model checks this at each of them. The worker's clock is the database clock with a rate
 *                    skew of ZERO: the worker knows exactly how many ticks have passed since it sent. An offset of
 *                    its clock does not matter, because it uses only elapsed time. With a rate skew r, M would also
 *                    have to cover r·L.
 *   outcome          lease-operations.ts completeOperation, acknowledgeCancel or failOperation → transitions.ts
 *                    completeUnderLease, acknowledgeCancelUnderLease or failAttempt
 *
 * Simplifications. Each one only adds behaviours, or changes nothing that a property reads.
 * - The claim request and its transaction happen in the same tick. The heartbeat below does model the delay
 *   between sending and executing; for the claim that delay would only make the local deadline earlier.
 * - The handler's return is not a separate step. The worker may make external calls and heartbeat until it writes
 *   its outcome, and it picks the outcome (success, retryable failure, final failure) when it writes it.
 * - heartbeat() runs its UPDATE, then a separate read of cancel_requested_at. That read is folded into the UPDATE's
 *   step. A separate read could only also report a cancel that committed after the UPDATE; the worker then
 *   acknowledges it, under the lease guard, exactly as it would have after its next heartbeat.
 * - A worker may stop at any point (a crash, SIGKILL, a Lambda timeout). It then writes nothing and makes no
 *   external call, and the sweeper deals with its lease. A request that was already sent and lands after the
 *   worker stopped is the same as one that landed just before it stopped: nothing else reads the worker's state.
 * ------------------------------------------------------------------------------------------------------------- */

/* States of the heartbeat request */
#define HB_IDLE    0   /* none in flight: the next one may be sent */
#define HB_SENT    1   /* sent at hbsent, not yet executed by the database */
#define HB_OK      2   /* executed: lease extended, no cancel requested; the reply is on its way */
#define HB_CANCEL  3   /* executed: lease extended, cancel requested; the reply is on its way */
#define HB_LOST    4   /* executed: the guard matched no row (LeaseLostError); the reply is on its way */
#define HB_HUNG    5   /* no reply will ever come (a hung connection); heartbeats.stop() waits for it forever */

/* The worker's attempt, taken from its token (tok = cycle*MAXA + attempt) */
#define MYATT ((mytok - 1) % MAXA + 1)

#if defined(NO_SELF_FENCE)
#define FENCE_OK  true
#define FENCED    false
#elif defined(FENCE_BY_TIMER)
/* heartbeat-loop.ts as committed in 9ba584c: the fence is a setTimeout whose callback aborts the AbortSignal. The
 * callback is due at the local deadline but runs whenever the worker's event loop gets to it; calls, acknowledgements
 * and writes look only at the signal, never at the clock. */
#define FENCE_OK  true
#define FENCED    (now >= fence)
#else
/* As specified: past the local deadline the worker makes no call and no write, checked at each of them. */
#define FENCE_OK  (now < fence)
#define FENCED    (now >= fence)
#endif

/* acknowledgeCancel → acknowledgeCancelUnderLease: running → cancelled under the lease, with the cancel set. */
inline ack_cancel() {
  if
  :: LEASE_HOLDS(mytok) && cancel_req ->
     PROBE_AT(10, acknowledge_cancel, true);
     own_lease(); move(CANCELLED); printf("t=%d W%d acknowledge_cancel\n", now, _pid); check_row()
  :: else -> printf("t=%d W%d acknowledge_cancel: lease lost\n", now, _pid)
  fi
}

/* A failed attempt's outcome: failOperation → recordFailedAttempt → transitions.ts failAttempt, all in ONE
 * transaction. attemptOutcome (with cancelRequested: false) decides between failed (`final`: a final kind, or the
 * last attempt) and waiting_for_retry. That outcome is written under the guard cancel_requested_at IS NULL. If it
 * changes no row while the lease holds, acknowledge_cancel is written under cancel_requested_at IS NOT NULL. A lost
 * lease changes nothing. */
inline fail_attempt(final) {
  if
  :: LEASE_HOLDS(mytok) && !cancel_req && (final) ->
     PROBE_AT(8, permanent_failure, MYATT < MAXA); PROBE_AT(9, retries_exhausted, MYATT >= MAXA);
     own_lease(); move(FAILED); printf("t=%d W%d failure (attempt %d) -> failed\n", now, _pid, MYATT); check_row()
  :: LEASE_HOLDS(mytok) && !cancel_req && !(final) ->
     PROBE_AT(7, retryable_failure, true);
     own_lease(); move(WFR); printf("t=%d W%d failure (attempt %d) -> waiting_for_retry\n", now, _pid, MYATT); check_row()
  :: LEASE_HOLDS(mytok) && cancel_req ->
     PROBE_AT(11, failure_cancelled, true);
     own_lease(); move(CANCELLED); printf("t=%d W%d failure with a cancel requested -> cancelled\n", now, _pid); check_row()
  :: else -> printf("t=%d W%d failure: lease lost, nothing written\n", now, _pid)
  fi
}

/* The OLD failOperation (before commit f5a3fba), transaction 1, finishCancelledIfRequested. If the lease holds and a
 * cancel is requested, the row moves to cancelled. Otherwise nothing is written and the worker goes on to
 * transaction 2 (`old` = 1 for retryable, 2 for final). */
inline old_fail_txn1(kind) {
  if
  :: LEASE_HOLDS(mytok) && cancel_req ->
     own_lease(); move(CANCELLED); printf("t=%d W%d old txn 1: cancel requested -> cancelled\n", now, _pid); check_row()
  :: LEASE_HOLDS(mytok) && !cancel_req ->
     old = kind; printf("t=%d W%d old txn 1 (attempt %d failed): no cancel requested yet, commits nothing\n", now, _pid, MYATT)
  :: else -> printf("t=%d W%d old txn 1: lease lost\n", now, _pid)
  fi
}

/* The OLD failOperation, transaction 2: the failure write under the lease with NO cancel guard (finishUnderLease
 * 'failed', or the UPDATE to waiting_for_retry). */
inline old_fail_txn2() {
  if
  :: LEASE_HOLDS(mytok) && (old == 2 || MYATT >= MAXA) ->
     own_lease(); move(FAILED); printf("t=%d W%d old txn 2: -> failed (cancel requested: %d)\n", now, _pid, cancel_req); check_row()
  :: LEASE_HOLDS(mytok) && !(old == 2 || MYATT >= MAXA) ->
     own_lease(); move(WFR); printf("t=%d W%d old txn 2: -> waiting_for_retry (cancel requested: %d)\n", now, _pid, cancel_req); check_row()
  :: else -> printf("t=%d W%d old txn 2: lease lost\n", now, _pid)
  fi
}

active [NWORKERS] proctype Worker() {
  byte mytok;    /* ClaimedOperation.leaseToken (0: holds none) */
  byte fence;    /* the local deadline, as a database time */
  byte hb;       /* HB_* */
  byte hbsent;   /* database time at which the heartbeat in flight was sent */
  bit  seen;     /* the worker has seen the owner's cancel (at the pre-run recheck or in a heartbeat reply) */
#ifdef OLD_FAIL_PATH
  byte old;      /* between the two transactions of the old failure path: 1 retryable, 2 final */
#endif

end_idle:   /* waiting for a claimable row (a wake-up message): a valid end state */
  /* claimNextOperation. The row must be claimable (queued or waiting_for_retry) with deadline_at > now.
   * available_at is not modelled: a waiting_for_retry row is claimable at once, which only adds behaviours.
   * markClaimed: attempt + 1, a fresh token, lease_expires_at = now + L; the claimer takes the route slot in the
   * same transaction. */
  atomic {
    WAITING(st) && dl > now ->
    PROBE_AT(1, claim_queued, st == QUEUED); PROBE_AT(2, claim_retry, st == WFR);
    CHECK(p_table, IN_TABLE(st, RUNNING));
    attempt++; tok = cycle * MAXA + attempt; lease_end = now + L; route++; st = RUNNING;
    check_row();
    mytok = tok;
    fence = now + L - M;
    printf("t=%d W%d claims: attempt %d, token %d, lease end %d, local deadline %d\n", now, _pid, attempt, tok, lease_end, fence)
  };

  /* Pre-run recheck (cancelRequestedUnderLease): one read (status and token). A cancel found here is acknowledged
   * before anything runs. */
  if
  :: d_step { FENCE_OK && st == RUNNING && tok == mytok -> seen = cancel_req; PROBE_AT(16, recheck_cancel, seen) };
     if
     :: seen ->
        if
        :: d_step { FENCE_OK -> ack_cancel() }
        :: FENCED -> skip
        :: skip                    /* the worker stops */
        fi;
        goto reset
     :: else -> skip
     fi
  :: d_step { FENCE_OK && !(st == RUNNING && tok == mytok) -> printf("t=%d W%d recheck: lease lost\n", now, _pid) };
     goto reset
  :: FENCED -> goto reset
  :: goto reset                    /* the worker stops */
  fi;

  do
  /* external_call(attempt): a model or provider call by the handler, any number of times. Only before the local
   * deadline, and never after the outcome is written (runAttempt closes the model session first). The worker reads
   * its local clock and makes the call in one step. The margin M is there for a pause between the two:
   * p_self_fence demands that the lease still hold at the call, and p_fence_margin that the call leave at least M
   * ticks before the lease end, so that a pause of up to M ticks after the check is still safe. */
  :: d_step {
       FENCE_OK ->
       printf("t=%d W%d external_call(attempt %d), lease end %d\n", now, _pid, MYATT, lease_end);
       CHECK(p_self_fence, st == RUNNING && tok == mytok && now < lease_end);
       CHECK(p_fence_margin, now + M < lease_end);
       PROBE_AT(22, last_safe_call, now + M + 1 == lease_end)
     }
  /* startHeartbeats: the next beat. The model lets it leave at any tick, which covers every interval H <= M. */
  :: d_step { hb == HB_IDLE && FENCE_OK -> hbsent = now; hb = HB_SENT }
  /* heartbeat(): UPDATE … SET lease_expires_at = now + L WHERE <the lease holds>, at a database time `now` >= hbsent,
   * with the read of cancel_requested_at. */
  :: d_step {
       hb == HB_SENT ->
       if
       :: LEASE_HOLDS(mytok) ->
          own_lease(); lease_end = now + L; hb = (cancel_req -> HB_CANCEL : HB_OK);
          printf("t=%d W%d heartbeat (sent at %d) extends the lease to %d; cancel requested: %d\n", now, _pid, hbsent, lease_end, cancel_req)
       :: else ->
          PROBE_AT(19, stale_heartbeat, st == RUNNING && tok != mytok); hb = HB_LOST;
          printf("t=%d W%d heartbeat (sent at %d) refused: lease lost\n", now, _pid, hbsent)
       fi
     }
  /* The heartbeat fails before the database runs it, or its reply is lost: the error is logged and the next beat is
   * scheduled as usual. */
  :: d_step { hb >= HB_SENT && hb <= HB_LOST -> hb = HB_IDLE; hbsent = 0 }
  /* It hangs: no reply ever comes. */
  :: d_step { hb >= HB_SENT && hb <= HB_LOST -> PROBE_AT(25, hung_heartbeat, LEASE_HOLDS(mytok)); hb = HB_HUNG; hbsent = 0 }
  /* The reply arrives before the local deadline, so this newer acknowledgement moves the deadline. */
  :: d_step {
       (hb == HB_OK || hb == HB_CANCEL) && FENCE_OK ->
       PROBE_AT(17, heartbeat_cancel, hb == HB_CANCEL); PROBE_AT(18, heartbeat_moves_deadline, hbsent + L - M > fence);
#ifdef FENCE_FROM_REPLY
       fence = now + L - M;            /* WRONG on purpose: dated from the reply's arrival */
#else
       /* fenceAt = max(fenceAt, sentAt + leaseRemainingMs - margin). The code reads the time left in a second statement
        * just after the UPDATE, so it is at most L: taking L gives the latest deadline the code could compute. */
       fence = (hbsent + L - M > fence -> hbsent + L - M : fence);
#endif
       if
       :: hb == HB_CANCEL -> seen = 1  /* onVerdict('cancel'): the handler's signal is aborted; the grace follows */
       :: else -> skip
       fi;
       hb = HB_IDLE; hbsent = 0
     }
  /* LeaseLostError: onVerdict('lease_lost'). The run writes nothing. */
  :: hb == HB_LOST -> goto reset
#ifndef NO_SELF_FENCE
  /* SELF-FENCE: the local deadline has passed with no newer acknowledgement. Abort: no more calls, no write. */
  :: d_step { FENCED -> PROBE_AT(21, fenced_lease_holds, LEASE_HOLDS(mytok)) }; goto reset
#endif
  /* The worker stops (a crash, a kill, a Lambda timeout). */
  :: goto reset
  /* The run ends. heartbeats.stop() waits for the beat in flight, so there must be none (HB_IDLE); then exactly one
   * outcome is written under the lease. A cancel the worker has seen wins over the handler's result, even a result
   * the handler went on to return. Once the grace is over, the outcome is written even if the handler has not
   * returned. */
  :: d_step { hb == HB_IDLE && FENCE_OK && seen -> ack_cancel() }; goto reset
  :: d_step {
       hb == HB_IDLE && FENCE_OK && !seen ->
       /* completeOperation → completeUnderLease: running → succeeded under the lease, with no cancel guard */
       if
       :: LEASE_HOLDS(mytok) ->
          PROBE_AT(6, complete, true); PROBE_AT(20, success_over_cancel, cancel_att > 0);
          PROBE_AT(23, retry_cycle_success, cycle == RETRIES && attempt == MAXA);
          own_lease(); succ++; move(SUCCEEDED); printf("t=%d W%d complete (attempt %d)\n", now, _pid, MYATT); check_row()
       :: else -> printf("t=%d W%d complete: lease lost\n", now, _pid)
       fi
     };
     goto reset
#ifndef OLD_FAIL_PATH
  :: d_step { hb == HB_IDLE && FENCE_OK && !seen -> fail_attempt(true) }; goto reset            /* a final kind */
  :: d_step { hb == HB_IDLE && FENCE_OK && !seen -> fail_attempt((MYATT >= MAXA)) }; goto reset   /* retryable, timeout */
#else
  :: d_step { hb == HB_IDLE && FENCE_OK && !seen -> old_fail_txn1(2) }; goto old_txn2           /* a final kind */
  :: d_step { hb == HB_IDLE && FENCE_OK && !seen -> old_fail_txn1(1) }; goto old_txn2           /* retryable, timeout */
#endif
  od;

#ifdef OLD_FAIL_PATH
old_txn2:
  skip;
  /* The OLD failOperation, transaction 2, as a separate step: any other process may run in between. */
  if
  :: old == 0 -> skip              /* transaction 1 ended the attempt (cancelled, or the lease was lost) */
  :: d_step { old != 0 && FENCE_OK -> old_fail_txn2() }
  :: old != 0 && FENCED -> skip
  :: old != 0 -> skip              /* the worker stops between the two transactions */
  fi;
#endif

reset:
#ifdef OLD_FAIL_PATH
  atomic { mytok = 0; fence = 0; hb = HB_IDLE; hbsent = 0; seen = 0; old = 0 };
#else
  atomic { mytok = 0; fence = 0; hb = HB_IDLE; hbsent = 0; seen = 0 };
#endif
  goto end_idle
}

/* ---------------------------------------------------------------------------------------------------------------
 * Owner: the owner's commands through the API, lib/operations/owner/owner-commands.ts.
 * ------------------------------------------------------------------------------------------------------------- */
active proctype Owner() {
end:
  do
  /* cancelOperation. A waiting row becomes cancelled at once (transitions.ts cancelWaiting, owner_cancel), with
   * cancel_requested_at, a notification and every slot released. A running row gets cancel_requested_at and stays
   * running (requestCancel, request_cancel). A cancelled row is returned unchanged. A succeeded or failed row gets
   * 409 (InvalidTransitionError) and nothing changes. */
  :: d_step {
       if
       :: WAITING(st) -> PROBE_AT(3, owner_cancel, true); cancel_req = 1; move(CANCELLED); printf("t=%d owner cancel: waiting -> cancelled\n", now); check_row()
       :: st == RUNNING ->
          move(RUNNING); cancel_req = 1;
          if
          :: cancel_att == 0 -> PROBE_AT(4, request_cancel, true); cancel_att = attempt
          :: else -> skip
          fi;
          printf("t=%d owner cancel: running (attempt %d) -> cancel requested\n", now, attempt); check_row()
       :: st == CANCELLED -> skip
       :: st == SUCCEEDED || st == FAILED -> skip   /* 409 */
       fi
     }
  /* retryOperation: failed or cancelled → queued, within MAX_MANUAL_RETRIES (transitions.ts requeueForRetry,
   * owner_retry). The attempt goes back to 0, the cycle moves on, lease and cancel are cleared and deadline_at is
   * set anew. The admission slots are reserved again in the same transaction (reserveAdmission). A full pool (429)
   * changes nothing, so it needs no step. */
  :: d_step {
       (st == FAILED || st == CANCELLED) && cycle < RETRIES ->
       PROBE_AT(15, owner_retry, true);
       move(QUEUED);
       attempt = 0; cycle++; tok = 0; lease_end = 0; cancel_req = 0; dl = now + DL;
       adm++;
       notif = 0;        /* a new cycle: its notification key (operation_id, cycle) is fresh */
       cancel_att = 0;   /* the cancel-wins obligation belonged to the cycle that ended */
       printf("t=%d owner retry: cycle %d queued, deadline %d\n", now, cycle, dl); check_row()
     }
  od
}

/* ---------------------------------------------------------------------------------------------------------------
 * Sweeper: lib/sweeper/sweep-passes.ts. Each batch is one transaction over the rows it has locked (SKIP LOCKED), so
 * for one row each pass is one step. A second sweeper running at the same time (reserved concurrency 2) would skip
 * the locked row, so it is not modelled. The wake-up, purge and capacity-reclaim passes do not change the status,
 * lease or slots of a consistent row, and are not modelled either.
 * ------------------------------------------------------------------------------------------------------------- */
active proctype Sweeper() {
end:
  do
  /* expireLeasesBatch → selectExpiredLeases (running, lease_expires_at <= now) → transitions.ts expireLeases, as
   * attempt-outcome.ts attemptOutcome decides for kind lease_expired. A cancel requested gives
   * lease_expired_cancelled; the final attempt gives lease_expired_final (failed, lease_expired); otherwise
   * lease_expired_retry (waiting_for_retry). */
  :: d_step {
       st == RUNNING && lease_end <= now ->
       if
       :: cancel_req -> PROBE_AT(14, lease_expired_cancelled, true); move(CANCELLED); printf("t=%d sweeper: lease expired, cancel requested -> cancelled\n", now)
       :: !cancel_req && attempt >= MAXA -> PROBE_AT(13, lease_expired_final, true); move(FAILED); printf("t=%d sweeper: lease expired on the final attempt -> failed\n", now)
       :: !cancel_req && attempt < MAXA -> PROBE_AT(12, lease_expired_retry, true); move(WFR); printf("t=%d sweeper: lease expired -> waiting_for_retry\n", now)
       fi;
       check_row()
     }
  /* failPastDeadlineBatch → selectPastDeadline (waiting, deadline_at <= now) → transitions.ts failPastDeadline. */
  :: d_step {
       WAITING(st) && dl <= now ->
       PROBE_AT(5, deadline_passed, true); PROBE_AT(24, deadline_after_retry, cycle == RETRIES);
       move(FAILED); printf("t=%d sweeper: deadline passed -> failed\n", now); check_row()
     }
  od
}
