/*-------------------------------------------------------------------------
 *
 * worker.h
 *	  flowpg's background workers: a launcher and a pool of workers per
 *	  database, each running one flow at a time.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLOWPG_WORKER_H
#define FLOWPG_WORKER_H

#include "datatype/timestamp.h"
#include "nodes/nodes.h"

/* At load in the postmaster: the launcher. */
extern void worker_register(void);

/* The pool's shared memory (called by shmem.c). */
extern void worker_shmem_request(void);
extern void worker_shmem_startup(void);

/*
 * In a worker: claims a flow for this worker's next run of it.  False when
 * another worker runs it -- or, for a batching run, when it would take the
 * pool's last worker free for streaming rounds.
 */
extern bool worker_claim(int64 flow_id, bool batching);
extern void worker_release(void);

/*
 * drop_flow and replacing a flow: the worker running the flow now (if any)
 * abandons the run, so that they need not wait for it.
 */
extern bool worker_preempt(int64 flow_id);

/* In a worker: was the run of its claimed flow canceled by worker_preempt? */
extern bool worker_was_preempted(void);

/*
 * Asks the launcher to make sure this database has a running worker, when
 * the current transaction commits.
 */
extern void worker_request(Oid dboid);

/* Wakes an idle worker of the database (new batches, a flush request). */
extern void worker_wake(Oid dboid);

/*
 * Before DROP DATABASE, ALTER DATABASE ... RENAME and CREATE DATABASE ...
 * TEMPLATE: the database's worker steps aside, as they need it alone.
 */
extern void worker_before_utility(Node *stmt);

/* Does the database have a running worker? */
extern bool worker_running(Oid dboid);

/* Whether a worker runs a database's flows, for flows and flow_stats. */
typedef enum WorkerStatus
{
	WORKER_RUNNING,
	WORKER_STARTING,			/* requested, not up yet */
	WORKER_NONE,				/* no background worker slot was free */
	WORKER_DISABLED,			/* flowpg.enabled = off */
	WORKER_NOT_PRELOADED
} WorkerStatus;

/* *since: when it last could not be started; *pid: the worker's. */
extern WorkerStatus worker_status(Oid dboid, TimestampTz *since, pid_t *pid);

/* Is the database's worker waiting for a lock this backend holds? */
extern bool worker_blocked_by_me(Oid dboid);

#endif							/* FLOWPG_WORKER_H */
