/*-------------------------------------------------------------------------
 *
 * flow_locks.h
 *	  The heavyweight locks flowpg takes (flow_locks.c) and their order.
 *
 * Lock order.  A user's session takes, as far as it needs them:
 *	 1. flowpg.flow in RowExclusiveLock, then the flow name lock (advisory,
 *		per name): create, replace and drop of one name one at a time, and
 *		DROP EXTENSION kept out meanwhile;
 *	 2. the flow lock (advisory, per flow id, ExclusiveLock): one refresh,
 *		backfill piece, streaming round, pause, replace or drop of a flow
 *		at a time;
 *	 3. the flow's sink (RowExclusiveLock) and sources (AccessShareLock to
 *		read them; writers hold them in RowExclusiveLock and then append
 *		to the dirty log);
 *	 4. flowpg's other tables as it writes them, in the order flow,
 *		flow_run, dirty_log, flow_error, pending_flow, flow_backfill.
 *
 * The worker takes flowpg's tables first, all at once, then the flow lock
 * and the flow's tables -- each only when free (flow_locks_try_tables,
 * flow_try_lock, flow_try_lock_tables): it never waits for a lock while
 * holding another, so it cannot deadlock with a user's session; any other
 * wait of its transaction gives up quickly (flow_limit_lock_waits), and the
 * flow is tried again later.  A flush_flow that holds a lock the worker
 * needs does not wait for the worker (flow_locks_held_by_me).
 *
 * DROP EXTENSION flowpg, from the ProcessUtility hook, takes the flows'
 * sources and sinks first, then flowpg's tables
 * (flow_locks_before_drop_extension): writers, which hold a source and
 * then append to the dirty log, and sessions creating flows, which take
 * flow first, wait for it instead of deadlocking with it.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLOWPG_FLOW_LOCKS_H
#define FLOWPG_FLOW_LOCKS_H

#include "nodes/nodes.h"
#include "storage/lockdefs.h"

#include "catalog.h"

/* A flow the worker found busy (a lock taken or timed out) is tried again after this. */
#define BUSY_RETRY_USECS (1000 * 1000)

/*
 * Serializes DDL on one flow name (create, replace, drop) until the end of
 * the transaction; different names do not wait for each other.
 */
extern void flow_lock_name(const char *flow_name);

/* Serializes refreshes of one flow until the end of the transaction. */
extern void flow_lock(int64 flow_id);
extern bool flow_try_lock(int64 flow_id);

/* Waits for whoever holds the flow's lock, without keeping it. */
extern void flow_lock_wait(int64 flow_id);

/*
 * Does this transaction hold a lock the worker needs to run the flow (its
 * lock, its sink, a source exclusively)?  A flush must not wait for the
 * worker then: the worker would wait for it.
 */
extern bool flow_locks_held_by_me(FlowEntry *entry);

/*
 * The worker's locks on the flow's sink and sources, only when free: it
 * never waits for a user's transaction (which may wait for it).
 */
extern bool flow_try_lock_tables(FlowEntry *entry);

/*
 * Any other lock wait of the worker's current transaction (or
 * subtransaction) gives up quickly (lock_timeout): a flow whose sink rows a
 * user's open transaction holds is tried again later.
 */
extern void flow_limit_lock_waits(void);

/*
 * flowpg's own tables, all of them, only when free (AccessShareLock for a
 * worker's poll, RowExclusiveLock for a run); false: busy, try again
 * later.  flow_locks_tables_or_busy raises LOCK_NOT_AVAILABLE instead (a
 * run's "busy").
 */
extern bool flow_locks_try_tables(LOCKMODE mode);
extern void flow_locks_tables_or_busy(void);

/* Before DROP EXTENSION flowpg (the ProcessUtility hook): see the order above. */
extern void flow_locks_before_drop_extension(Node *stmt);

#endif							/* FLOWPG_FLOW_LOCKS_H */
