/*-------------------------------------------------------------------------
 *
 * worker.c
 *	  flowpg's background workers: the launcher and the per-database worker.
 *
 * The launcher is registered at load and connects to no database.  It
 * starts one worker per database (at server start for every database that
 * accepts connections, later on request) and restarts workers that died.  A
 * worker exits, marking its database idle, when the database has no
 * flowpg or no flows; create_flow asks the launcher for a worker again.
 *
 * A worker loops: it finds the flows whose dirty log is not empty and whose
 * next run is due, runs each in its own transaction -- as the flow's owner,
 * under flowpg.query_timeout, inside a subtransaction so that a failing flow
 * only records its error and backs off -- and sleeps on its latch until the
 * next due time (at most a second, to notice new dirty entries).
 *
 * DROP DATABASE and the other commands that need a database to themselves
 * make its worker step aside first (worker_before_utility, called from
 * flowpg's ProcessUtility hook).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/pg_database.h"
#include "catalog/pg_type.h"
#include "commands/dbcommands.h"
#include "commands/defrem.h"
#include "commands/extension.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "tcop/tcopprot.h"
#include "tcop/utility.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timeout.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "batch.h"
#include "catalog.h"
#include "dirty_log.h"
#include "flowpg.h"
#include "stats.h"
#include "queue.h"
#include "restore.h"
#include "stream_state.h"
#include "subxact.h"
#include "worker.h"

PGDLLEXPORT void flowpg_launcher_main(Datum main_arg);
PGDLLEXPORT void flowpg_worker_main(Datum main_arg);

#define MAX_DATABASES 256
#define MAX_POOL 16				/* flowpg.workers_per_database at most */
#define LAUNCHER_NAP_MS 10000
#define IDLE_REPROBE_USECS (300 * USECS_PER_SEC)
#define WORKER_POLL_MS 1000
#define MAX_BACKOFF_USECS (600 * USECS_PER_SEC)

/*
 * The worker never waits for a user's transaction, which may be waiting for
 * it (flush_flow): it takes a flow's locks only when free, and any other
 * lock wait of a run gives up quickly (batch_limit_lock_waits).  A flow
 * found busy is tried again after BUSY_RETRY_USECS.
 */
#define BUSY_RETRY_USECS (1000 * 1000)

typedef struct BusyFlow
{
	int64		flow_id;
	TimestampTz retry_at;
} BusyFlow;

static List *busy_flows = NIL;	/* BusyFlow, in TopMemoryContext */

static void
set_busy(int64 flow_id, bool busy)
{
	ListCell   *lc;
	BusyFlow   *bf = NULL;

	foreach(lc, busy_flows)
		if (((BusyFlow *) lfirst(lc))->flow_id == flow_id)
			bf = lfirst(lc);
	if (!busy)
	{
		if (bf)
		{
			busy_flows = list_delete_ptr(busy_flows, bf);
			pfree(bf);
		}
		return;
	}
	if (bf == NULL)
	{
		MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);

		bf = palloc(sizeof(BusyFlow));
		bf->flow_id = flow_id;
		busy_flows = lappend(busy_flows, bf);
		MemoryContextSwitchTo(old);
	}
	bf->retry_at = GetCurrentTimestamp() + BUSY_RETRY_USECS;
}

/* When a busy flow may be tried again; 0 when it is not busy. */
static TimestampTz
busy_until(int64 flow_id)
{
	ListCell   *lc;

	foreach(lc, busy_flows)
		if (((BusyFlow *) lfirst(lc))->flow_id == flow_id)
			return ((BusyFlow *) lfirst(lc))->retry_at;
	return 0;
}

/* One worker of a database's pool. */
typedef struct PoolWorker
{
	pid_t		pid;			/* 0: a free place */
	Latch	   *latch;
	int64		claimed;		/* the flow it runs now, 0 none */
	bool		batching;		/* the claim is a batching run */
	TimestampTz claimed_at;
	int64		preempted;		/* worker_preempt canceled this flow's run */
} PoolWorker;

typedef struct DatabaseSlot
{
	Oid			dboid;
	bool		wanted;			/* create_flow asked for a worker */
	bool		grow;			/* work waits for a busy pool: it may grow */
	bool		shrink;			/* another database needs a slot: an idle worker leaves */
	TimestampTz idle_since;		/* its workers left: no flowpg or no flows */
	TimestampTz paused_until;	/* DROP/ALTER DATABASE needs it gone */
	TimestampTz no_worker_since;	/* its worker could not be started */
	PoolWorker	pool[MAX_POOL];
} DatabaseSlot;

typedef struct FlowpgShared
{
	slock_t		mutex;
	Latch	   *launcher_latch;
	TimestampTz start_failed_at;	/* the launcher's last failed start, any database */
	TimestampTz started_at;		/* and its last successful one */
	int			nslots;
	DatabaseSlot slots[MAX_DATABASES];
} FlowpgShared;

static FlowpgShared *shared = NULL;
static DatabaseSlot *database_slot(Oid dboid, bool create);
static PoolWorker *my_place = NULL; /* this worker's place in its pool */
static DatabaseSlot *my_slot = NULL;

#define DATABASE_DDL_PAUSE_USECS (30 * USECS_PER_SEC)

/*
 * DROP DATABASE, ALTER DATABASE ... RENAME and CREATE DATABASE ... TEMPLATE
 * refuse to run while another session is connected to the database: the
 * workers step aside (and stay away for a while) so that they work.
 */
static void
pause_worker_of(const char *dbname)
{
	Oid			dboid = get_database_oid(dbname, true);
	DatabaseSlot *slot;
	pid_t		pids[MAX_POOL];
	int			npids = 0;

	if (!OidIsValid(dboid) || shared == NULL)
		return;
	SpinLockAcquire(&shared->mutex);
	slot = database_slot(dboid, false);
	if (slot)
	{
		slot->paused_until = GetCurrentTimestamp() + DATABASE_DDL_PAUSE_USECS;
		for (int i = 0; i < MAX_POOL; i++)
			if (slot->pool[i].pid != 0)
				pids[npids++] = slot->pool[i].pid;
	}
	SpinLockRelease(&shared->mutex);
	for (int p = 0; p < npids; p++)
		(void) kill(pids[p], SIGTERM);
	/* wait (at most 5 s) until they are gone */
	for (int i = 0; i < 500 && npids > 0; i++)
	{
		bool		gone = true;

		for (int p = 0; p < npids; p++)
			if (kill(pids[p], 0) == 0)
				gone = false;
		if (gone)
			break;
		pg_usleep(10000L);
		CHECK_FOR_INTERRUPTS();
	}
}

void
worker_before_utility(Node *stmt)
{
	if (IsA(stmt, DropdbStmt))
		pause_worker_of(((DropdbStmt *) stmt)->dbname);
	else if (IsA(stmt, RenameStmt) && ((RenameStmt *) stmt)->renameType == OBJECT_DATABASE)
		pause_worker_of(((RenameStmt *) stmt)->subname);
	else if (IsA(stmt, CreatedbStmt))
	{
		ListCell   *lc;

		foreach(lc, ((CreatedbStmt *) stmt)->options)
		{
			DefElem    *opt = lfirst_node(DefElem, lc);

			if (strcmp(opt->defname, "template") == 0 && opt->arg)
				pause_worker_of(defGetString(opt));
		}
	}
}

void
worker_shmem_request(void)
{
	RequestAddinShmemSpace(MAXALIGN(sizeof(FlowpgShared)));
}

/* Called in the postmaster with AddinShmemInitLock held. */
void
worker_shmem_startup(void)
{
	bool		found;

	shared = ShmemInitStruct("flowpg", sizeof(FlowpgShared), &found);
	if (!found)
	{
		memset(shared, 0, sizeof(FlowpgShared));
		SpinLockInit(&shared->mutex);
	}
}

void
worker_register(void)
{
	BackgroundWorker worker;

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
	worker.bgw_restart_time = 5;
	snprintf(worker.bgw_library_name, BGW_MAXLEN, "flowpg");
	snprintf(worker.bgw_function_name, BGW_MAXLEN, "flowpg_launcher_main");
	snprintf(worker.bgw_name, BGW_MAXLEN, "flowpg launcher");
	snprintf(worker.bgw_type, BGW_MAXLEN, "flowpg launcher");
	RegisterBackgroundWorker(&worker);
}

/* The slot of a database; the caller holds the mutex. */
static DatabaseSlot *
database_slot(Oid dboid, bool create)
{
	DatabaseSlot *slot;

	for (int i = 0; i < shared->nslots; i++)
		if (shared->slots[i].dboid == dboid)
			return &shared->slots[i];
	if (!create || shared->nslots == MAX_DATABASES)
		return NULL;
	slot = &shared->slots[shared->nslots++];
	memset(slot, 0, sizeof(DatabaseSlot));
	slot->dboid = dboid;
	return slot;
}

static int
pool_alive(DatabaseSlot *slot)
{
	int			n = 0;

	for (int i = 0; i < MAX_POOL; i++)
		n += slot->pool[i].pid != 0;
	return n;
}

static bool request_at_commit = false;
static bool xact_callback_registered = false;

static void send_request(Oid dboid);

/*
 * A worker started before the flow commits would find no flow and leave:
 * the request goes out when the transaction commits.
 */
static void
request_xact_callback(XactEvent event, void *arg)
{
	if (!request_at_commit)
		return;
	if (event == XACT_EVENT_COMMIT)
		send_request(MyDatabaseId);
	if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT ||
		event == XACT_EVENT_PARALLEL_COMMIT || event == XACT_EVENT_PARALLEL_ABORT)
		request_at_commit = false;
}

void
worker_request(Oid dboid)
{
	Assert(dboid == MyDatabaseId);
	if (!xact_callback_registered)
	{
		RegisterXactCallback(request_xact_callback, NULL);
		xact_callback_registered = true;
	}
	request_at_commit = true;
}

static void
send_request(Oid dboid)
{
	Latch	   *latch;
	DatabaseSlot *slot;

	if (shared == NULL)
		return;
	SpinLockAcquire(&shared->mutex);
	slot = database_slot(dboid, true);
	if (slot)
		slot->wanted = true;
	latch = shared->launcher_latch;
	SpinLockRelease(&shared->mutex);
	if (latch)
		SetLatch(latch);
}

static void
mark_idle(Oid dboid)
{
	DatabaseSlot *slot;

	SpinLockAcquire(&shared->mutex);
	slot = database_slot(dboid, true);
	if (slot && !slot->wanted)
		slot->idle_since = GetCurrentTimestamp();
	SpinLockRelease(&shared->mutex);
}

/* Takes a place in the database's pool; false when it is full. */
static bool
pool_join(Oid dboid)
{
	SpinLockAcquire(&shared->mutex);
	my_slot = database_slot(dboid, true);
	for (int i = 0; my_slot && i < MAX_POOL && my_place == NULL; i++)
		if (my_slot->pool[i].pid == 0)
		{
			my_place = &my_slot->pool[i];
			my_place->pid = MyProcPid;
			my_place->latch = MyLatch;
			my_place->claimed = 0;
			my_place->batching = false;
			my_slot->no_worker_since = 0;
		}
	SpinLockRelease(&shared->mutex);
	return my_place != NULL;
}

/* At exit: the place and its claim are free again. */
static void
pool_leave(int code, Datum arg)
{
	if (my_place == NULL)
		return;
	SpinLockAcquire(&shared->mutex);
	my_place->pid = 0;
	my_place->latch = NULL;
	my_place->claimed = 0;
	my_place->batching = false;
	SpinLockRelease(&shared->mutex);
	my_place = NULL;
}

/*
 * An idle worker leaves, while another stays for the database: after a
 * while without work, or at once when another database needs the slot.
 */
static bool
pool_may_shrink(bool idle_long)
{
	bool		leave;

	SpinLockAcquire(&shared->mutex);
	leave = pool_alive(my_slot) > 1 && (idle_long || my_slot->shrink);
	if (leave)
	{
		my_slot->shrink = false;
		my_place->pid = 0;		/* counted out now: two cannot both leave */
	}
	SpinLockRelease(&shared->mutex);
	return leave;
}

static int	claim_timeout_id = -1;

/*
 * A batching run that takes longer than a flush interval while no other
 * worker is idle: the launcher may add one (signal handler: only a flag
 * and a latch).
 */
static void
claim_timeout_handler(void)
{
	Latch	   *latch;

	if (my_slot == NULL)
		return;
	my_slot->grow = true;
	latch = shared->launcher_latch;
	if (latch)
		SetLatch(latch);
}

bool
worker_claim(int64 flow_id, bool batching)
{
	bool		granted = true;
	int			alive = 0;
	int			in_batching = 0;
	int			idle = 0;
	bool		reserved = false;
	bool		grow;

	Assert(my_place != NULL && my_place->claimed == 0);
	SpinLockAcquire(&shared->mutex);
	for (int i = 0; i < MAX_POOL; i++)
	{
		PoolWorker *w = &my_slot->pool[i];

		if (w->pid == 0 || w == my_place)
			continue;
		alive++;
		if (w->claimed == flow_id)
			granted = false;
		if (w->claimed != 0 && w->batching)
			in_batching++;
		if (w->claimed == 0)
			idle++;
	}

	/*
	 * The reserve: batching runs may occupy every worker of the pool but
	 * one, which streaming rounds keep -- unless this worker is alone.
	 */
	if (granted && batching && alive > 0 && in_batching >= alive)
	{
		granted = false;
		reserved = true;
	}
	if (granted)
	{
		my_place->claimed = flow_id;
		my_place->batching = batching;
		my_place->claimed_at = GetCurrentTimestamp();
	}
	grow = reserved;
	if (grow)
		my_slot->grow = true;
	SpinLockRelease(&shared->mutex);
	if (grow && shared->launcher_latch)
		SetLatch(shared->launcher_latch);
	/* a batching run that lasts: other flows may be due meanwhile */
	if (granted && batching && idle == 0)
		enable_timeout_after(claim_timeout_id, Max(flowpg_flush_interval_ms, 100));
	return granted;
}

void
worker_release(void)
{
	disable_timeout(claim_timeout_id, false);
	SpinLockAcquire(&shared->mutex);
	my_place->claimed = 0;
	my_place->batching = false;
	my_place->preempted = 0;
	SpinLockRelease(&shared->mutex);
	/* a cancel meant for the run that just ended (worker_preempt) */
	QueryCancelPending = false;
}

bool
worker_was_preempted(void)
{
	bool		preempted;

	SpinLockAcquire(&shared->mutex);
	preempted = my_place->preempted != 0 && my_place->preempted == my_place->claimed;
	SpinLockRelease(&shared->mutex);
	return preempted;
}

bool
worker_preempt(int64 flow_id)
{
	DatabaseSlot *slot;
	pid_t		pid = 0;

	if (shared == NULL)
		return false;
	SpinLockAcquire(&shared->mutex);
	slot = database_slot(MyDatabaseId, false);
	for (int i = 0; slot && i < MAX_POOL && pid == 0; i++)
		if (slot->pool[i].pid != 0 && slot->pool[i].claimed == flow_id)
		{
			pid = slot->pool[i].pid;
			slot->pool[i].preempted = flow_id;
		}
	SpinLockRelease(&shared->mutex);
	/* a round's cancel is a busy flow to it: its state is repaired next time */
	if (pid != 0)
		(void) kill(pid, SIGINT);
	return pid != 0;
}

/*
 * The launcher: whether a worker for the database could be registered.  A
 * database left without any worker takes a slot from the largest pool
 * (its next idle worker leaves).
 */
static void
note_start(Oid dboid, bool started)
{
	DatabaseSlot *slot;
	TimestampTz now = GetCurrentTimestamp();

	SpinLockAcquire(&shared->mutex);
	slot = database_slot(dboid, true);
	if (started)
		shared->started_at = now;
	else
		shared->start_failed_at = now;
	if (slot && !started && pool_alive(slot) == 0)
	{
		DatabaseSlot *largest = NULL;

		if (slot->no_worker_since == 0)
			slot->no_worker_since = now;
		for (int i = 0; i < shared->nslots; i++)
			if (pool_alive(&shared->slots[i]) > 1 &&
				(largest == NULL || pool_alive(&shared->slots[i]) > pool_alive(largest)))
				largest = &shared->slots[i];
		if (largest)
			largest->shrink = true;
	}
	SpinLockRelease(&shared->mutex);
}

WorkerStatus
worker_status(Oid dboid, TimestampTz *since, pid_t *pid)
{
	DatabaseSlot *slot;
	WorkerStatus status = WORKER_STARTING;

	*since = 0;
	*pid = 0;
	if (shared == NULL)
		return WORKER_NOT_PRELOADED;
	if (!flowpg_enabled)
		return WORKER_DISABLED;
	SpinLockAcquire(&shared->mutex);
	slot = database_slot(dboid, false);
	for (int i = 0; slot && i < MAX_POOL && *pid == 0; i++)
		*pid = slot->pool[i].pid;
	if (*pid != 0)
		status = WORKER_RUNNING;
	else if (slot && slot->no_worker_since != 0)
	{
		status = WORKER_NONE;
		*since = slot->no_worker_since;
	}
	else if (shared->start_failed_at > shared->started_at)
	{
		/* not tried for this database yet, but the last start failed */
		status = WORKER_NONE;
		*since = shared->start_failed_at;
	}
	SpinLockRelease(&shared->mutex);
	return status;
}

/*
 * Wakes one idle worker of the database (any one will do).  When none is
 * idle and one has been busy for longer than a flush interval, the work
 * that woke us would wait: the pool may grow.
 */
void
worker_wake(Oid dboid)
{
	DatabaseSlot *slot;
	Latch	   *latch = NULL;
	bool		grow = false;
	TimestampTz busy_since = GetCurrentTimestamp() - (int64) flowpg_flush_interval_ms * 1000;

	if (shared == NULL)
		return;
	SpinLockAcquire(&shared->mutex);
	slot = database_slot(dboid, false);
	for (int i = 0; slot && i < MAX_POOL; i++)
	{
		PoolWorker *w = &slot->pool[i];

		if (w->pid == 0)
			continue;
		if (w->claimed == 0)
		{
			latch = w->latch;
			grow = false;
			break;
		}
		if (latch == NULL)
			latch = w->latch;
		if (w->claimed_at < busy_since)
			grow = true;
	}
	if (grow && !slot->grow)
		slot->grow = true;
	else
		grow = false;
	SpinLockRelease(&shared->mutex);
	if (latch)
		SetLatch(latch);
	if (grow && shared->launcher_latch)
		SetLatch(shared->launcher_latch);
}

bool
worker_running(Oid dboid)
{
	TimestampTz since;
	pid_t		pid;

	return worker_status(dboid, &since, &pid) == WORKER_RUNNING;
}

bool
worker_blocked_by_me(Oid dboid)
{
	DatabaseSlot *slot;
	pid_t		pids[MAX_POOL];
	int			npids = 0;

	if (shared == NULL)
		return false;
	SpinLockAcquire(&shared->mutex);
	slot = database_slot(dboid, false);
	for (int i = 0; slot && i < MAX_POOL; i++)
		if (slot->pool[i].pid != 0)
			pids[npids++] = slot->pool[i].pid;
	SpinLockRelease(&shared->mutex);
	for (int p = 0; p < npids; p++)
	{
		ArrayType  *blockers;
		Datum	   *items;
		int			nitems;

		blockers = DatumGetArrayTypeP(DirectFunctionCall1(pg_blocking_pids, Int32GetDatum(pids[p])));
		deconstruct_array(blockers, INT4OID, sizeof(int32), true, TYPALIGN_INT,
						  &items, NULL, &nitems);
		for (int i = 0; i < nitems; i++)
			if (DatumGetInt32(items[i]) == MyProcPid)
				return true;
	}
	return false;
}

/* Should the launcher start a worker for this database now? */
static bool
database_needs_worker(Oid dboid, TimestampTz now, int running)
{
	DatabaseSlot *slot;
	bool		start;

	SpinLockAcquire(&shared->mutex);
	slot = database_slot(dboid, true);
	if (slot)
		running = Max(running, pool_alive(slot));
	if (running > 0)
	{
		/* a busy pool grows, one worker at a time */
		start = slot != NULL && slot->grow && running < flowpg_workers_per_database;
		if (slot)
			slot->grow = false;
	}
	else
		start = slot == NULL || slot->wanted || slot->idle_since == 0 ||
			now - slot->idle_since >= IDLE_REPROBE_USECS;
	if (slot && slot->paused_until > now)
		start = false;
	if (slot && start && running == 0)
	{
		slot->wanted = false;
		slot->idle_since = 0;
	}
	SpinLockRelease(&shared->mutex);
	return start;
}

static List *
connectable_databases(void)
{
	List	   *dboids = NIL;
	Relation	rel;
	TableScanDesc scan;
	HeapTuple	tuple;

	StartTransactionCommand();
	rel = table_open(DatabaseRelationId, AccessShareLock);
	scan = table_beginscan_catalog(rel, 0, NULL);
	while ((tuple = heap_getnext(scan, ForwardScanDirection)) != NULL)
	{
		Form_pg_database db = (Form_pg_database) GETSTRUCT(tuple);

		if (db->datallowconn && !db->datistemplate)
		{
			MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);

			dboids = lappend_oid(dboids, db->oid);
			MemoryContextSwitchTo(old);
		}
	}
	table_endscan(scan);
	table_close(rel, AccessShareLock);
	CommitTransactionCommand();
	return dboids;
}

static BackgroundWorkerHandle *
start_worker(Oid dboid, bool first)
{
	BackgroundWorker worker;
	BackgroundWorkerHandle *handle;

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
	worker.bgw_restart_time = BGW_NEVER_RESTART;	/* the launcher restarts it */
	snprintf(worker.bgw_library_name, BGW_MAXLEN, "flowpg");
	snprintf(worker.bgw_function_name, BGW_MAXLEN, "flowpg_worker_main");
	snprintf(worker.bgw_name, BGW_MAXLEN, "flowpg worker for database %u", dboid);
	snprintf(worker.bgw_type, BGW_MAXLEN, "flowpg worker");
	worker.bgw_main_arg = ObjectIdGetDatum(dboid);
	worker.bgw_notify_pid = MyProcPid;
	if (!RegisterDynamicBackgroundWorker(&worker, &handle))
	{
		/* a pool that cannot grow works on with what it has */
		ereport(first ? LOG : DEBUG1,
				(errmsg("flowpg could not start a worker for database %u", dboid),
				 errdetail("All max_worker_processes (%d) background worker slots are in use.",
						   max_worker_processes),
				 errhint("Raise max_worker_processes (see flowpg's README for its sizing); "
						 "flowpg retries whenever a slot frees.")));
		note_start(dboid, false);
		return NULL;
	}
	note_start(dboid, true);
	return handle;
}

typedef struct RunningWorkers
{
	Oid			dboid;
	BackgroundWorkerHandle *handles[MAX_POOL];
} RunningWorkers;

/* Workers of the database still running (forgetting those that stopped). */
static int
count_running(RunningWorkers *rw)
{
	int			n = 0;

	for (int i = 0; i < MAX_POOL; i++)
	{
		pid_t		pid;

		if (rw->handles[i] == NULL)
			continue;
		if (GetBackgroundWorkerPid(rw->handles[i], &pid) == BGWH_STOPPED)
		{
			pfree(rw->handles[i]);
			rw->handles[i] = NULL;
			continue;
		}
		n++;
	}
	return n;
}

void
flowpg_launcher_main(Datum main_arg)
{
	HTAB	   *workers;
	HASHCTL		ctl;

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnection(NULL, NULL, 0);
	pgstat_report_appname("flowpg launcher");

	SpinLockAcquire(&shared->mutex);
	shared->launcher_latch = MyLatch;
	SpinLockRelease(&shared->mutex);

	ctl.keysize = sizeof(Oid);
	ctl.entrysize = sizeof(RunningWorkers);
	workers = hash_create("flowpg workers", 16, &ctl, HASH_ELEM | HASH_BLOBS);

	for (;;)
	{
		List	   *dboids;
		ListCell   *lc;
		TimestampTz now = GetCurrentTimestamp();

		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}

		dboids = connectable_databases();
		foreach(lc, dboids)
		{
			Oid			dboid = lfirst_oid(lc);
			bool		found;
			RunningWorkers *rw = hash_search(workers, &dboid, HASH_ENTER, &found);
			int			running;

			if (!found)
				memset(rw->handles, 0, sizeof(rw->handles));
			running = count_running(rw);
			if (running < MAX_POOL && database_needs_worker(dboid, now, running))
			{
				for (int i = 0; i < MAX_POOL; i++)
					if (rw->handles[i] == NULL)
					{
						rw->handles[i] = start_worker(dboid, running == 0);
						break;
					}
			}
		}
		list_free(dboids);

		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 LAUNCHER_NAP_MS, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
}

/* The next run of a flow after a successful one. */
static TimestampTz
next_run_after(FlowEntry *entry, BatchResult *result, TimestampTz started,
			   TimestampTz finished)
{
	int64		delay;

	if (result->more_pending)
		return finished;		/* a backlog: go on at once */
	if (entry->eval_interval)
		return finished + entry->eval_interval->time +
			(int64) entry->eval_interval->day * USECS_PER_DAY;
	/* adaptive: as long as the run took, within [min interval, window] */
	delay = Max(finished - started, (int64) flowpg_min_refresh_interval_ms * 1000);
	if (result->window_usecs > 0)
		delay = Min(delay, result->window_usecs);
	return finished + delay;
}

static TimestampTz
next_run_after_failure(int consecutive, TimestampTz finished)
{
	int64		delay = Max((int64) flowpg_min_refresh_interval_ms * 1000, USECS_PER_SEC);

	for (int i = 1; i < consecutive && delay < MAX_BACKOFF_USECS; i++)
		delay *= 2;
	return finished + Min(delay, MAX_BACKOFF_USECS);
}

/* What one run of a flow does, in a subtransaction of the run's transaction. */
typedef struct FlowRun
{
	FlowEntry  *entry;
	TimestampTz started;
	TimestampTz finished;
	BatchResult result;
	bool		wait_more;		/* a restored flow whose tables are not in yet */
} FlowRun;

static void
flow_run_call(void *arg)
{
	FlowRun    *run = (FlowRun *) arg;

	batch_limit_lock_waits();	/* until the run's subtransaction ends */
	if (flowpg_query_timeout_ms > 0)
		enable_timeout_after(STATEMENT_TIMEOUT, flowpg_query_timeout_ms);
	/* a restored flow is maintained once its tables are complete */
	if (strcmp(run->entry->state, "restoring") == 0)
		run->wait_more = !restore_finish(run->entry, false);
	else
		run->result = batch_refresh_dirty(run->entry, NULL, NULL);
	disable_timeout(STATEMENT_TIMEOUT, false);
	run->finished = GetCurrentTimestamp();
	if (run->result.log_entries > 0)
		stats_record_run(run->entry->flow_id, &run->result, run->started, run->finished,
						 next_run_after(run->entry, &run->result, run->started, run->finished));
}

/* One run of one flow, in its own transaction; errors stay in it. */
static void
run_flow(int64 flow_id)
{
	FlowEntry  *entry;
	FlowRun		run = {0};
	ErrorData  *edata;

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	entry = catalog_get_by_id(flow_id);
	if (entry == NULL)
	{
		PopActiveSnapshot();
		CommitTransactionCommand();
		return;
	}
	/* someone refreshes, replaces or drops it, or holds its tables: later */
	if (!batch_try_lock_flow(flow_id) || !batch_try_lock_tables(entry))
	{
		set_busy(flow_id, true);
		PopActiveSnapshot();
		CommitTransactionCommand();
		return;
	}
	pgstat_report_activity(STATE_RUNNING, psprintf("flowpg: refreshing flow %s", entry->flow_name));
	run.entry = entry;
	run.started = GetCurrentTimestamp();

	edata = subxact_run(flow_run_call, &run);
	if (edata == NULL)
	{
		set_busy(flow_id, run.wait_more);
		if (flowpg_slow_query_threshold_ms >= 0 &&
			run.finished - run.started > (int64) flowpg_slow_query_threshold_ms * 1000)
			ereport(LOG,
					(errmsg("flowpg: flow \"%s\" took %.1f s to refresh %d dirty ranges",
							entry->flow_name, (run.finished - run.started) / 1000000.0,
							run.result.log_entries)));
	}
	else
	{
		TimestampTz finished = GetCurrentTimestamp();

		disable_timeout(STATEMENT_TIMEOUT, false);
		QueryCancelPending = false; /* the timeout's cancel was this error */
		if (edata->sqlerrcode == ERRCODE_LOCK_NOT_AVAILABLE || worker_was_preempted())
		{
			/* a lock a user's transaction holds, or a drop: not a failure, later */
			ereport(DEBUG1,
					(errmsg("flowpg: flow \"%s\" is busy: %s", entry->flow_name, edata->message)));
			set_busy(flow_id, true);
		}
		else
		{
			int			consecutive;

			ereport(LOG,
					(errmsg("flowpg: flow \"%s\" failed: %s", entry->flow_name, edata->message)));
			consecutive = stats_record_failure(flow_id, edata, run.started, finished);
			stats_set_next_run(flow_id, next_run_after_failure(consecutive, finished));
		}
	}
	PopActiveSnapshot();
	CommitTransactionCommand();
	pgstat_report_activity(STATE_IDLE, NULL);
}

/*
 * Runs the due flows.  Returns false when the database has no flows left;
 * *wait_ms gets the time until the next due run.
 */
static bool
run_due_flows(long *wait_ms, bool *worked)
{
	List	   *due = NIL;
	ListCell   *lc;
	bool		has_flows;
	TimestampTz now = GetCurrentTimestamp();
	TimestampTz next_due = now + WORKER_POLL_MS * 1000L;

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	has_flows = OidIsValid(get_extension_oid("flowpg", true)) && catalog_exists();
	if (has_flows)
	{
		List	   *dirty = dirty_log_flows();

		/* streaming flows: their dirty log is stream_run's */
		catalog_query_privileged("SELECT f.flow_id, r.next_run_at, f.mode <> 'streaming', "
								 "f.state = 'restoring' "
								 "FROM flowpg.flow f LEFT JOIN flowpg.flow_run r USING (flow_id)",
								 0, NULL, NULL, NULL);
		has_flows = SPI_processed > 0;
		for (uint64 i = 0; i < SPI_processed; i++)
		{
			bool		isnull;
			bool		next_null;
			int64		flow_id = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull));
			TimestampTz next = DatumGetTimestampTz(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2, &next_null));
			bool		batching = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 3, &isnull));
			bool		restoring = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 4, &isnull));
			bool		pending = false;
			ListCell   *lc2;

			foreach(lc2, dirty)
				pending |= *(int64 *) lfirst(lc2) == flow_id;
			if (restoring)
				next_null = true;	/* due (once a second), whatever its mode */
			else if (!batching || !pending)
				continue;
			if (busy_until(flow_id) > now)
			{
				next = busy_until(flow_id);
				next_null = false;
			}
			if (next_null || next <= now)
			{
				MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);

				due = lappend(due, palloc(sizeof(int64)));
				*(int64 *) llast(due) = flow_id;
				MemoryContextSwitchTo(old);
			}
			else if (next < next_due)
				next_due = next;
		}
		catalog_query_privileged_end();
	}
	PopActiveSnapshot();
	CommitTransactionCommand();

	if (flowpg_enabled)
	{
		foreach(lc, due)
		{
			int64		flow_id = *(int64 *) lfirst(lc);

			CHECK_FOR_INTERRUPTS();
			/* another worker runs it, or the pool's last free worker is kept */
			if (!worker_claim(flow_id, true))
				continue;
			*worked = true;
			PG_TRY();
			{
				run_flow(flow_id);
			}
			PG_FINALLY();
			{
				worker_release();
			}
			PG_END_TRY();
			/* streaming rounds waiting meanwhile: one pass between runs */
			stream_run(worked);
		}
	}
	*wait_ms = Max(10, (next_due - GetCurrentTimestamp()) / 1000);
	if (due != NIL && flowpg_enabled)
		*wait_ms = 0;			/* look again: a run may have left a backlog */
	list_free_deep(due);
	return has_flows;
}

/* At most this often a streaming round; when a flush_flow waits, sooner. */
#define STREAM_MIN_GAP_MS 10
#define STREAM_FLUSH_GAP_MS 2

/* An extra worker that found nothing to do for this long leaves. */
#define IDLE_EXIT_USECS (10 * USECS_PER_SEC)

void
flowpg_worker_main(Datum main_arg)
{
	TimestampTz next_batching;
	TimestampTz next_stream;
	TimestampTz last_stream = 0;
	TimestampTz last_work;

	Oid			dboid = DatumGetObjectId(main_arg);

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnectionByOid(dboid, InvalidOid, 0);
	pgstat_report_appname("flowpg worker");
	if (!pool_join(dboid))
		proc_exit(0);			/* the pool is full */
	before_shmem_exit(pool_leave, (Datum) 0);
	claim_timeout_id = RegisterTimeout(USER_TIMEOUT, claim_timeout_handler);
	/* the refresh's exactness argument needs a new snapshot per statement */
	SetConfigOption("default_transaction_isolation", "read committed",
					PGC_SUSET, PGC_S_OVERRIDE);

	next_batching = next_stream = 0;
	last_work = GetCurrentTimestamp();

	for (;;)
	{
		long		wait_ms;
		TimestampTz now;
		bool		worked = false;

		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}

		/*
		 * Writers wake a worker at commit; the batching schedule and the
		 * streaming rounds each keep their own pace, so a busy source costs
		 * a worker at most STREAM_MIN_GAP_MS per round of work.
		 */
		now = GetCurrentTimestamp();
		if (now >= next_stream ||
			(now >= last_stream + STREAM_FLUSH_GAP_MS * 1000 && stream_flush_requested()))
		{
			long		stream_wait = stream_run(&worked);

			last_stream = GetCurrentTimestamp();
			next_stream = last_stream + (int64) Max(stream_wait, STREAM_MIN_GAP_MS) * 1000;
		}
		if (now >= next_batching)
		{
			long		batching_wait;

			if (!run_due_flows(&batching_wait, &worked))
			{
				mark_idle(dboid);
				proc_exit(0);
			}
			next_batching = GetCurrentTimestamp() + (int64) batching_wait * 1000;
		}
		now = GetCurrentTimestamp();
		if (worked)
			last_work = now;
		else if (pool_may_shrink(now - last_work > IDLE_EXIT_USECS))
			proc_exit(0);
		wait_ms = (Min(next_batching, next_stream) - now + 999) / 1000;
		if (wait_ms > 0)
		{
			int			rc = WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
									   wait_ms, PG_WAIT_EXTENSION);

			ResetLatch(MyLatch);
			/* a writer committed: a streaming round soon, at the minimum gap */
			if ((rc & WL_LATCH_SET) &&
				next_stream > last_stream + STREAM_MIN_GAP_MS * 1000)
				next_stream = last_stream + STREAM_MIN_GAP_MS * 1000;
			/* and a batching flow may have become dirty */
			if (rc & WL_LATCH_SET)
				next_batching = Min(next_batching, now + 100 * 1000L);
		}
	}
}
