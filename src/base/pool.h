/*-------------------------------------------------------------------------
 *
 * pool.h
 *	  The pool of flowpg workers of each database, in shared memory:
 *	  claims, waking, status; what writers, sessions and workers ask of it.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLOWPG_POOL_H
#define FLOWPG_POOL_H

#include "datatype/timestamp.h"
#include "nodes/nodes.h"
#include "nodes/pg_list.h"
#include "storage/latch.h"

#define POOL_MAX 16				/* flowpg.workers_per_database at most */

/* The pool's shared memory (called by flowpg.c). */
extern void pool_shmem_request(void);
extern void pool_shmem_startup(void);

/* Commit callbacks, registered before any other can run (from _PG_init). */
extern void pool_register_callbacks(void);

/*
 * Asks the launcher to make sure this database has a running worker, when
 * the current transaction commits.
 */
extern void pool_request(Oid dboid);

/*
 * A database whose flowpg objects wait for ALTER EXTENSION UPDATE: said by
 * its worker, read by writers (their partials go to the dirty log).
 */
extern void pool_set_outdated(bool outdated);
extern bool pool_database_outdated(Oid dboid);

/* DROP DATABASE committed: the database's slot in the pool is free. */
extern void pool_forget_database(Oid dboid);

/*
 * Pending flows may start now (a table was created, a right granted): a
 * worker of the database tries, when the current transaction commits, or
 * at once.  A start never runs in the session whose DDL made it possible:
 * it runs in a worker, as the flow's owner, in its own transaction.
 * pool_check_pending_now returns the pass of starts that will see what
 * is committed now; pool_pending_pass_done tells when it has ended.
 */
extern void pool_check_pending_at_commit(void);
extern uint64 pool_check_pending_now(void);
extern bool pool_pending_pass_done(uint64 pass);

/* In a worker: a pass of pending starts is due (and its number), and has ended. */
extern bool pool_take_pending_check(uint64 *pass);
extern void pool_pending_pass_end(uint64 pass);

/*
 * Roles changed (memberships, BYPASSRLS, ownership): once the current
 * transaction commits, the epoch moves, and every database's workers
 * recompute their flows over tables with row-level security.
 */
extern void pool_note_roles_changed_at_commit(void);
extern uint64 pool_roles_epoch(uint64 *seen);	/* and, in a worker, its database's seen one */
extern void pool_set_roles_epoch_seen(uint64 epoch);

/* Wakes an idle worker of the database (new batches, a flush request). */
extern void pool_wake(Oid dboid);

/*
 * A committed change of batching flows only: wakes a worker as pool_wake,
 * unless no batching flow of the database can be due yet (each is within
 * min_refresh_interval of its last run): the worker sleeps until the first
 * can, and a wake-up per commit would only make it look again.  A pool
 * whose workers are all busy still grows.  The worker
 * says from when (pool_set_batching_due_from, at each look at the schedule;
 * 0: at once); a flow created or resumed resets it to 0.
 */
extern void pool_wake_for_batching(Oid dboid);

/*
 * The worker: pool_schedule_changes before it reads the schedule, then
 * pool_set_batching_due_from with what it returned, so that a flow created
 * or resumed meanwhile is not hidden by a time read before it.
 */
extern uint64 pool_schedule_changes(void);
extern void pool_set_batching_due_from(TimestampTz from, uint64 changes_seen);

/*
 * Before DROP DATABASE, ALTER DATABASE ... RENAME and CREATE DATABASE ...
 * TEMPLATE: the database's workers step aside, as they need it alone.
 */
extern void pool_before_utility(Node *stmt);

/* Does the database have a running worker? */
extern bool pool_running(Oid dboid);

/* Whether a worker runs a database's flows, for flows and flow_stats. */
typedef enum WorkerStatus
{
	WORKER_RUNNING,
	WORKER_STARTING,			/* requested, not up yet */
	WORKER_NONE,				/* no background worker slot was free */
	WORKER_DISABLED,			/* flowpg.enabled = off */
	WORKER_NOT_PRELOADED
} WorkerStatus;

/* *since: when it last could not be started; *pid: a worker's. */
extern WorkerStatus pool_status(Oid dboid, TimestampTz *since, pid_t *pid);

/* Is a worker of the database waiting for a lock this backend holds? */
extern bool pool_blocked_by_me(Oid dboid);

/*
 * In a worker: claims a flow for this worker's next run of it.  False when
 * another worker runs it -- or, for a batching run, when it would take the
 * pool's last worker free for streaming rounds.
 */
extern bool pool_claim(int64 flow_id, bool batching);

/* The database's pool may use another worker (up to flowpg.workers_per_database). */
extern void pool_grow(void);
extern void pool_release(void);

/* A due batching flow, for pool_claim_fair. */
typedef struct PoolCandidate
{
	int64		flow_id;
	Oid			owner;
	bool		superuser;		/* the owner is: its flows have no share */
	TimestampTz due_at;
} PoolCandidate;

/* Why a due batching flow was not claimed (flow_stats shows it: waits.c). */
typedef enum PoolWaitReason
{
	POOL_WAIT_NONE,				/* claimed, run by another worker, or not yet looked at */
	POOL_WAIT_ROLE_SHARE,		/* its owner holds its share of the batching workers */
	POOL_WAIT_POOL_BUSY			/* no worker is free for a batching run */
} PoolWaitReason;

typedef struct PoolWait
{
	PoolWaitReason reason;
	int			held;			/* the owner's runs (ROLE_SHARE), the busy workers (POOL_BUSY) */
	int			capacity;		/* the batching workers the pool may have */
} PoolWait;

/*
 * In a worker: claims, among the candidates, the flow of the owner with the
 * fewest batching runs in progress in the database, then the earliest due
 * (the fair share of workers between roles); its index, or -1.  While
 * other roles than a candidate's owner have batching flows in the database
 * (batching_owners, distinct), that owner's runs may hold all the pool's
 * batching workers but one -- unless it is a superuser: a role's long runs
 * never leave another role's flow, when it comes due, without a worker.
 * waits[c] says why each candidate not claimed waits.
 */
extern int	pool_claim_fair(const PoolCandidate *candidates, int ncandidates,
							List *batching_owners, PoolWait *waits);

/*
 * drop_flow and replacing a flow: the worker running the flow now (if any)
 * abandons the run, so that they need not wait for it.
 */
extern bool pool_preempt(int64 flow_id);


/* A worker's place in its database's pool: false when the pool is full. */
extern bool pool_join(Oid dboid);

/* An idle worker may leave (idle_long: for a while), another staying. */
extern bool pool_may_shrink(bool idle_long);

/* The database has no flows (or no flowpg): its workers left. */
extern void pool_mark_idle(Oid dboid);

/* The launcher. */
extern void pool_set_launcher(Latch *latch);
extern bool pool_needs_worker(Oid dboid, TimestampTz now, int running);
extern void pool_note_start(Oid dboid, bool started);

#endif							/* FLOWPG_POOL_H */
