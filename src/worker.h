/*-------------------------------------------------------------------------
 *
 * worker.h
 *	  flowpg's background workers: a launcher and one worker per database.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLOWPG_WORKER_H
#define FLOWPG_WORKER_H

#include "datatype/timestamp.h"
#include "nodes/nodes.h"

/* At load in the postmaster: shared memory hooks and the launcher. */
extern void worker_register(void);

/*
 * Asks the launcher to make sure this database has a running worker, when
 * the current transaction commits.
 */
extern void worker_request(Oid dboid);

/* Wakes the database's worker (new batches, a flush request). */
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
