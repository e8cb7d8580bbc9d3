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

typedef struct DatabaseSlot
{
	Oid			dboid;
	bool		wanted;			/* create_flow asked for a worker */
	TimestampTz idle_since;		/* its worker left: no flowpg or no flows */
	TimestampTz paused_until;	/* DROP/ALTER DATABASE needs it gone */
	pid_t		worker_pid;
	Latch	   *worker_latch;	/* writers wake it when they commit */
	TimestampTz no_worker_since;	/* its worker could not be started */
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
static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

#define DATABASE_DDL_PAUSE_USECS (30 * USECS_PER_SEC)

/*
 * DROP DATABASE, ALTER DATABASE ... RENAME and CREATE DATABASE ... TEMPLATE
 * refuse to run while another session is connected to the database: the
 * worker steps aside (and stays away for a while) so that they work.
 */
static void
pause_worker_of(const char *dbname)
{
	Oid			dboid = get_database_oid(dbname, true);
	DatabaseSlot *slot;
	pid_t		pid = 0;

	if (!OidIsValid(dboid) || shared == NULL)
		return;
	SpinLockAcquire(&shared->mutex);
	slot = database_slot(dboid, false);
	if (slot)
	{
		slot->paused_until = GetCurrentTimestamp() + DATABASE_DDL_PAUSE_USECS;
		pid = slot->worker_pid;
	}
	SpinLockRelease(&shared->mutex);
	if (pid == 0)
		return;
	(void) kill(pid, SIGTERM);
	/* wait (at most 5 s) until it is gone */
	for (int i = 0; i < 500; i++)
	{
		bool		gone;

		SpinLockAcquire(&shared->mutex);
		gone = slot->worker_pid != pid;
		SpinLockRelease(&shared->mutex);
		if (gone || kill(pid, 0) != 0)
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

static void
flowpg_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(MAXALIGN(sizeof(FlowpgShared)));
	queue_shmem_request();
}

static void
flowpg_shmem_startup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	shared = ShmemInitStruct("flowpg", sizeof(FlowpgShared), &found);
	if (!found)
	{
		memset(shared, 0, sizeof(FlowpgShared));
		SpinLockInit(&shared->mutex);
	}
	queue_shmem_startup();
	LWLockRelease(AddinShmemInitLock);
}

void
worker_register(void)
{
	BackgroundWorker worker;

	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = flowpg_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = flowpg_shmem_startup;

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
	for (int i = 0; i < shared->nslots; i++)
		if (shared->slots[i].dboid == dboid)
			return &shared->slots[i];
	if (!create || shared->nslots == MAX_DATABASES)
		return NULL;
	shared->slots[shared->nslots].dboid = dboid;
	shared->slots[shared->nslots].wanted = false;
	shared->slots[shared->nslots].idle_since = 0;
	shared->slots[shared->nslots].paused_until = 0;
	shared->slots[shared->nslots].worker_pid = 0;
	shared->slots[shared->nslots].worker_latch = NULL;
	shared->slots[shared->nslots].no_worker_since = 0;
	return &shared->slots[shared->nslots++];
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

/* Records (or clears, at exit) this worker's pid in its database's slot. */
static void
set_worker_pid(Oid dboid, pid_t pid)
{
	DatabaseSlot *slot;

	SpinLockAcquire(&shared->mutex);
	slot = database_slot(dboid, true);
	if (slot)
	{
		slot->worker_pid = pid;
		slot->worker_latch = pid ? MyLatch : NULL;
		if (pid)
			slot->no_worker_since = 0;
	}
	SpinLockRelease(&shared->mutex);
}

/* The launcher: whether a worker for the database could be registered. */
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
	if (slot && !started && slot->no_worker_since == 0)
		slot->no_worker_since = now;
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
	if (slot && slot->worker_pid != 0)
	{
		status = WORKER_RUNNING;
		*pid = slot->worker_pid;
	}
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

void
worker_wake(Oid dboid)
{
	DatabaseSlot *slot;
	Latch	   *latch = NULL;

	if (shared == NULL)
		return;
	SpinLockAcquire(&shared->mutex);
	slot = database_slot(dboid, false);
	if (slot)
		latch = slot->worker_latch;
	SpinLockRelease(&shared->mutex);
	if (latch)
		SetLatch(latch);
}

bool
worker_running(Oid dboid)
{
	DatabaseSlot *slot;
	bool		running = false;

	if (shared == NULL)
		return false;
	SpinLockAcquire(&shared->mutex);
	slot = database_slot(dboid, false);
	if (slot)
		running = slot->worker_pid != 0;
	SpinLockRelease(&shared->mutex);
	return running;
}

bool
worker_blocked_by_me(Oid dboid)
{
	DatabaseSlot *slot;
	pid_t		pid = 0;
	ArrayType  *blockers;
	Datum	   *items;
	int			nitems;

	if (shared == NULL)
		return false;
	SpinLockAcquire(&shared->mutex);
	slot = database_slot(dboid, false);
	if (slot)
		pid = slot->worker_pid;
	SpinLockRelease(&shared->mutex);
	if (pid == 0)
		return false;
	blockers = DatumGetArrayTypeP(DirectFunctionCall1(pg_blocking_pids, Int32GetDatum(pid)));
	deconstruct_array(blockers, INT4OID, sizeof(int32), true, TYPALIGN_INT,
					  &items, NULL, &nitems);
	for (int i = 0; i < nitems; i++)
		if (DatumGetInt32(items[i]) == MyProcPid)
			return true;
	return false;
}

static void
worker_exit_callback(int code, Datum arg)
{
	set_worker_pid(DatumGetObjectId(arg), 0);
}

/* Should the launcher start a worker for this database now? */
static bool
database_needs_worker(Oid dboid, TimestampTz now)
{
	DatabaseSlot *slot;
	bool		start;

	SpinLockAcquire(&shared->mutex);
	slot = database_slot(dboid, true);
	start = slot == NULL || slot->wanted || slot->idle_since == 0 ||
		now - slot->idle_since >= IDLE_REPROBE_USECS;
	if (slot && slot->paused_until > now)
		start = false;
	if (slot && start)
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
start_worker(Oid dboid)
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
		ereport(LOG,
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

typedef struct RunningWorker
{
	Oid			dboid;
	BackgroundWorkerHandle *handle;
} RunningWorker;

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
	ctl.entrysize = sizeof(RunningWorker);
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
			RunningWorker *rw = hash_search(workers, &dboid, HASH_ENTER, &found);
			pid_t		pid;

			if (found && rw->handle &&
				GetBackgroundWorkerPid(rw->handle, &pid) != BGWH_STOPPED)
				continue;
			if (found && rw->handle)
				pfree(rw->handle);
			rw->handle = database_needs_worker(dboid, now) ? start_worker(dboid) : NULL;
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
		if (edata->sqlerrcode == ERRCODE_LOCK_NOT_AVAILABLE)
		{
			/* a lock a user's transaction holds: not a failure, later */
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
run_due_flows(long *wait_ms)
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
			CHECK_FOR_INTERRUPTS();
			run_flow(*(int64 *) lfirst(lc));
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

void
flowpg_worker_main(Datum main_arg)
{
	TimestampTz next_batching;
	TimestampTz next_stream;
	TimestampTz last_stream = 0;

	Oid			dboid = DatumGetObjectId(main_arg);

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnectionByOid(dboid, InvalidOid, 0);
	pgstat_report_appname("flowpg worker");
	set_worker_pid(dboid, MyProcPid);
	before_shmem_exit(worker_exit_callback, ObjectIdGetDatum(dboid));
	/* the refresh's exactness argument needs a new snapshot per statement */
	SetConfigOption("default_transaction_isolation", "read committed",
					PGC_SUSET, PGC_S_OVERRIDE);

	next_batching = next_stream = 0;

	for (;;)
	{
		long		wait_ms;
		TimestampTz now;

		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}

		/*
		 * Writers wake the worker at every commit; the batching schedule and
		 * the streaming rounds each keep their own pace, so a busy source
		 * costs the worker at most STREAM_MIN_GAP_MS per round of work.
		 */
		now = GetCurrentTimestamp();
		if (now >= next_batching)
		{
			long		batching_wait;

			if (!run_due_flows(&batching_wait))
			{
				mark_idle(dboid);
				proc_exit(0);
			}
			next_batching = GetCurrentTimestamp() + (int64) batching_wait * 1000;
		}
		if (now >= next_stream ||
			(now >= last_stream + STREAM_FLUSH_GAP_MS * 1000 && stream_flush_requested()))
		{
			long		stream_wait = stream_run();

			last_stream = GetCurrentTimestamp();
			next_stream = last_stream + (int64) Max(stream_wait, STREAM_MIN_GAP_MS) * 1000;
		}
		now = GetCurrentTimestamp();
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
		}
	}
}
