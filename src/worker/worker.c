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
 * make its worker step aside first (pool_before_utility, called from
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

#include "backfill.h"
#include "refresh.h"
#include "catalog.h"
#include "dirty_log.h"
#include "eval_tick.h"
#include "flow_locks.h"
#include "pending.h"
#include "pending_flow.h"
#include "planner.h"
#include "guc.h"
#include "stats.h"
#include "registry.h"
#include "restore.h"
#include "stream_state.h"
#include "subxact.h"
#include "visibility.h"
#include "pool.h"
#include "waits.h"
#include "worker.h"

PGDLLEXPORT void flowpg_launcher_main(Datum main_arg);
PGDLLEXPORT void flowpg_worker_main(Datum main_arg);

#define LAUNCHER_NAP_MS 10000
#define WORKER_POLL_MS 1000
#define MAX_BACKOFF_USECS (600 * USECS_PER_SEC)


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
				 errhint("Raise max_worker_processes (see flowpg's docs/operations.md, Sizing the workers and the memory); "
						 "flowpg retries whenever a slot frees.")));
		pool_note_start(dboid, false);
		return NULL;
	}
	pool_note_start(dboid, true);
	return handle;
}

typedef struct RunningWorkers
{
	Oid			dboid;
	BackgroundWorkerHandle *handles[POOL_MAX];
} RunningWorkers;

/* Workers of the database still running (forgetting those that stopped). */
static int
count_running(RunningWorkers *rw)
{
	int			n = 0;

	for (int i = 0; i < POOL_MAX; i++)
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

	pool_set_launcher(MyLatch);

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
			if (running < POOL_MAX && pool_needs_worker(dboid, now, running))
			{
				for (int i = 0; i < POOL_MAX; i++)
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

/*
 * A database whose flowpg objects are older than this library (the package
 * was upgraded, ALTER EXTENSION flowpg UPDATE not run yet): its tables may
 * lack what this library uses, so its worker waits for the update.  The
 * writers' capture is the same in both versions, so no change is lost
 * meanwhile (streaming writers send their partials to the dirty log, as
 * nobody drains their queues).  Looked at once a second.  A database
 * without flows has nothing to wait for: *idle tells its worker to leave,
 * for its place serves other databases (create_flow asks for one again,
 * and refuses to run before the update).
 */
#define UPDATE_CHECK_MS 1000

static bool
waiting_for_update(bool *idle)
{
	static bool logged = false;
	static bool current = true;
	static TimestampTz checked_at = 0;

	*idle = false;
	if (GetCurrentTimestamp() - checked_at < UPDATE_CHECK_MS * 1000L)
		return !current;
	checked_at = GetCurrentTimestamp();
	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	current = catalog_version_current();
	if (!current)
	{
		PushActiveSnapshot(GetTransactionSnapshot());
		*idle = !catalog_has_any_flow();
		PopActiveSnapshot();
	}
	if (!current && !logged)
		ereport(LOG,
				(errmsg("flowpg: database \"%s\" has flowpg %s, the library is %s: its flows wait for ALTER EXTENSION flowpg UPDATE",
						get_database_name(MyDatabaseId), catalog_extension_version(),
						FLOWPG_VERSION)));
	logged = !current;
	CommitTransactionCommand();
	pool_set_outdated(!current);
	return !current;
}

/*
 * A run the poll found due: for a flow with eval_interval, the tick it
 * evaluates (see eval_tick.c).
 */
typedef struct DueFlow
{
	int64		flow_id;
	bool		has_tick;
	TimestampTz tick;
	Oid			owner;
	TimestampTz due_at;			/* 0: at once */
	bool		backfilling;	/* a piece of its backfill is due */
	bool		superuser;		/* its owner is (read in the poll's transaction) */
} DueFlow;

/* What one run of a flow does, in a subtransaction of the run's transaction. */
typedef struct FlowRun
{
	DueFlow    *due;
	FlowEntry  *entry;
	TimestampTz started;
	TimestampTz finished;
	RunResult result;
	bool		wait_more;		/* a restored flow whose tables are not in yet */
	/* the tick it evaluates: the poll's, if the flow still has ticks */
	bool		has_tick;
	bool		uses_now;
} FlowRun;

/* The next run of a flow after a successful one. */
static TimestampTz
next_run_after(FlowRun *run)
{
	FlowEntry  *entry = run->entry;
	int64		delay;

	if (run->result.more_pending)
		return run->finished;	/* a backlog: go on at once */
	if (run->has_tick && run->uses_now)
		return run->due->tick + eval_interval_usecs(entry->eval_interval);	/* missed ones next */
	if (entry->eval_interval)
		return eval_tick_after(entry->eval_interval, run->finished);
	/* adaptive: as long as the run took, within [min interval, window] */
	delay = Max(run->finished - run->started, (int64) flowpg_min_refresh_interval_ms * 1000);
	if (run->result.window_usecs > 0)
		delay = Min(delay, run->result.window_usecs);
	return run->finished + delay;
}

static TimestampTz
next_run_after_failure(int consecutive, TimestampTz finished)
{
	int64		delay = Max((int64) flowpg_min_refresh_interval_ms * 1000, USECS_PER_SEC);

	for (int i = 1; i < consecutive && delay < MAX_BACKOFF_USECS; i++)
		delay *= 2;
	return finished + Min(delay, MAX_BACKOFF_USECS);
}



static void
flow_run_call(void *arg)
{
	FlowRun    *run = (FlowRun *) arg;

	flow_limit_lock_waits();	/* until the run's subtransaction ends */
	if (flowpg_query_timeout_ms > 0)
		enable_timeout_after(STATEMENT_TIMEOUT, flowpg_query_timeout_ms);
	/* a restored flow is maintained once its tables are complete */
	if (strcmp(run->entry->state, "restoring") == 0)
		run->wait_more = !restore_finish(run->entry, false);
	else if (run->due->backfilling && backfill_pending(run->entry->flow_id))
	{
		/*
		 * One piece per run: other flows get their turns in between.  Not
		 * under query_timeout: a piece is what create_flow ran inline
		 * before, and one that timed out would only start over.  Each is a
		 * run (a failure's backoff and state end with the next success).
		 */
		disable_timeout(STATEMENT_TIMEOUT, false);
		(void) backfill_step(run->entry, &run->result.rows_out);
		run->finished = GetCurrentTimestamp();
		stats_record_run(run->entry->flow_id, &run->result, run->started, run->finished,
						 run->finished);
		return;
	}
	else
	{
		/*
		 * The poll's view of the flow may be stale: replaced meanwhile
		 * (without eval_interval, or without now()), or its tick run by
		 * another worker since (its next run is on a later tick then; a
		 * failure's backoff is not: that tick is still to run).
		 */
		TimestampTz next;

		run->has_tick = run->due->has_tick && run->entry->eval_interval != NULL;
		run->uses_now = run->has_tick && flow_plan_for_entry(run->entry)->uses_now;
		if (run->uses_now && stats_next_run(run->entry->flow_id, &next) &&
			eval_tick_floor(run->entry->eval_interval, next) > run->due->tick)
		{
			disable_timeout(STATEMENT_TIMEOUT, false);
			return;
		}
		/* now() in the query is the tick's time */
		if (run->has_tick)
			eval_tick_set(run->due->tick);
		if (run->uses_now)
			run->result = refresh_recompute_all(run->entry);
		else
			run->result = refresh_dirty(run->entry, NULL);
		eval_tick_clear();
	}
	disable_timeout(STATEMENT_TIMEOUT, false);
	run->finished = GetCurrentTimestamp();
	if (run->result.log_entries > 0 || run->uses_now)
		stats_record_run(run->entry->flow_id, &run->result, run->started, run->finished,
						 next_run_after(run));
}

/* One run of one flow, in its own transaction; errors stay in it. */
static void
run_flow(DueFlow *due)
{
	int64		flow_id = due->flow_id;
	FlowEntry  *entry;
	FlowRun		run = {0};
	ErrorData  *edata;

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	/* flowpg's tables first, all at once (lock order in flow_locks.h) */
	if (!flow_locks_try_tables(RowExclusiveLock))
	{
		set_busy(flow_id, true);
		PopActiveSnapshot();
		CommitTransactionCommand();
		return;
	}
	entry = catalog_get_by_id(flow_id);
	if (entry == NULL)
	{
		PopActiveSnapshot();
		CommitTransactionCommand();
		return;
	}
	/* someone refreshes, replaces or drops it, or holds its tables: later */
	if (!flow_try_lock(flow_id) || !flow_try_lock_tables(entry))
	{
		set_busy(flow_id, true);
		PopActiveSnapshot();
		CommitTransactionCommand();
		return;
	}
	/* paused since the schedule was read: pause_flow held the lock until it committed */
	entry = catalog_get_by_id(flow_id);
	if (entry == NULL || entry->paused)
	{
		PopActiveSnapshot();
		CommitTransactionCommand();
		return;
	}
	pgstat_report_activity(STATE_RUNNING, psprintf("flowpg: refreshing flow %s", entry->flow_name));
	run.entry = entry;
	run.due = due;
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
		bool		timed_out = get_timeout_indicator(STATEMENT_TIMEOUT, false);

		disable_timeout(STATEMENT_TIMEOUT, false);
		QueryCancelPending = false; /* the timeout's cancel was this error */
		if (edata->sqlerrcode == ERRCODE_LOCK_NOT_AVAILABLE ||
			(edata->sqlerrcode == ERRCODE_QUERY_CANCELED && !timed_out))
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
	pgstat_report_activity(STATE_IDLE, "flowpg: idle");
}

/*
 * The batching flows (FlowSchedule) that may be due now, by their
 * schedule (restored and backfilling flows are due whatever the dirty log
 * holds: they do not count); *earliest gets the first next_run_at of the
 * others (DT_NOEND when there is none).
 */
static List *
batching_may_be_due(List *flows, TimestampTz now, TimestampTz *earliest)
{
	ListCell   *lc;
	List	   *due = NIL;

	*earliest = DT_NOEND;

	foreach(lc, flows)
	{
		FlowSchedule *f = lfirst(lc);

		if (!f->batching || f->restoring || f->backfilling)
			continue;
		if (!f->has_next_run || f->next_run_at <= now)
			due = lappend(due, f);
		else
			*earliest = Min(*earliest, f->next_run_at);
	}
	return due;
}

/*
 * Runs the due flows.  Returns false when the database has no flows left;
 * *wait_ms gets the time until the next due run.
 */
static bool
run_due_flows(long *wait_ms, bool *worked)
{
	bool		ran_any = false;
	List	   *due = NIL;
	List	   *owners = NIL;	/* of batching flows, distinct */
	ListCell   *lc;
	bool		has_flows;
	TimestampTz now = GetCurrentTimestamp();
	TimestampTz next_due = now + WORKER_POLL_MS * 1000L;

	/* before the snapshot: a flow created after it counts as a change */
	uint64		schedule_changes = pool_schedule_changes();

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	has_flows = OidIsValid(get_extension_oid("flowpg", true)) && catalog_exists();
	if (has_flows && !flow_locks_try_tables(AccessShareLock))
	{
		/* someone changes flowpg's tables (DROP EXTENSION, say): later */
		PopActiveSnapshot();
		CommitTransactionCommand();
		*wait_ms = 100;
		return true;
	}
	if (has_flows)
	{
		List	   *flows = catalog_schedule();
		List	   *dirty = NIL;
		TimestampTz earliest;
		List	   *may_be_due;
		ListCell   *lf;

		/* a database with pending flows only keeps its worker: it starts them */
		has_flows = flows != NIL || pending_any();
		foreach(lf, flows)
			if (((FlowSchedule *) lfirst(lf))->batching)
			{
				MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);

				owners = list_append_unique_oid(owners, ((FlowSchedule *) lfirst(lf))->owner);
				MemoryContextSwitchTo(old);
			}

		/*
		 * The dirty log is read (for the flows that may be due) only when
		 * a batching flow may be due now: one that has never run, or whose
		 * next run (min_refresh_interval after its last) has come.  Until
		 * then, no change makes one due -- an EVAL INTERVAL tick comes no
		 * sooner than next_run_at either -- so the worker sleeps until the
		 * earliest next_run_at instead of reading, at every wake-up by a
		 * committing writer, a log that grows with the ingest rate.
		 * Writers of batching flows do not wake it before then either.
		 */
		may_be_due = batching_may_be_due(flows, now, &earliest);
		next_due = Min(next_due, earliest); /* the others, when they can be */
		if (may_be_due != NIL)
		{
			dirty_log_trim();
			dirty = dirty_log_flows(may_be_due);
			pool_set_batching_due_from(0, schedule_changes);
		}
		else
			pool_set_batching_due_from(earliest, schedule_changes);
		foreach(lf, flows)
		{
			FlowSchedule *f = lfirst(lf);
			int64		flow_id = f->flow_id;
			TimestampTz next = f->next_run_at;
			bool		next_null = !f->has_next_run;
			DirtyFlow  *dirty_flow = NULL;
			DueFlow		tick = {flow_id, false, 0, f->owner, 0, f->backfilling};
			ListCell   *lc2;

			foreach(lc2, dirty)
				if (((DirtyFlow *) lfirst(lc2))->flow_id == flow_id)
					dirty_flow = lfirst(lc2);
			/* streaming flows: their dirty log is stream_run's */
			if (f->restoring)
				next_null = true;	/* due, whatever its mode */
			else if (f->backfilling)
			{
				/* due, unless a failure's backoff delays it */
			}
			else if (!f->batching || (dirty_flow == NULL && !f->uses_now))
				continue;
			else if (f->eval_interval)
			{
				/*
				 * On ticks: a flow using now() at every tick (the scheduled
				 * one, missed ones within a bound; the last one when none is
				 * scheduled, as after a restore), another at the first tick
				 * after its oldest change.
				 */
				TimestampTz at = f->uses_now ?
					(next_null ? eval_tick_floor(f->eval_interval, now) : next) :
					eval_tick_after(f->eval_interval, dirty_flow->oldest);

				if (!next_null && next > at)
					at = next;	/* backing off after a failure */
				next = at;
				next_null = false;
				tick.has_tick = true;
				tick.tick = f->uses_now ? eval_tick_to_run(f->eval_interval, at, now) :
					eval_tick_floor(f->eval_interval, now);
			}
			if (busy_until(flow_id) > now)
			{
				next = busy_until(flow_id);
				next_null = false;
			}
			if (next_null || next <= now)
			{
				MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);

				tick.due_at = next_null ? 0 : next;
				tick.superuser = superuser_arg(tick.owner);
				due = lappend(due, palloc(sizeof(DueFlow)));
				*(DueFlow *) llast(due) = tick;
				MemoryContextSwitchTo(old);
			}
			else if (next < next_due)
				next_due = next;
		}
	}
	PopActiveSnapshot();
	CommitTransactionCommand();

	/*
	 * One run per poll, chosen fairly between roles (pool_claim_fair):
	 * the next poll sees what other workers claimed and finished meanwhile.
	 */
	if (flowpg_enabled && due != NIL)
	{
		PoolCandidate *candidates = palloc(sizeof(PoolCandidate) * list_length(due));
		PoolWait   *waits = palloc(sizeof(PoolWait) * list_length(due));
		int			pick;

		foreach(lc, due)
		{
			DueFlow    *due_flow = lfirst(lc);

			candidates[foreach_current_index(lc)].flow_id = due_flow->flow_id;
			candidates[foreach_current_index(lc)].owner = due_flow->owner;
			candidates[foreach_current_index(lc)].due_at = due_flow->due_at;
			candidates[foreach_current_index(lc)].superuser = due_flow->superuser;
		}
		CHECK_FOR_INTERRUPTS();
		pick = pool_claim_fair(candidates, list_length(due), owners, waits);
		/* flow_stats says why a due flow waits */
		for (int c = 0; c < list_length(due); c++)
		{
			if (waits[c].reason != POOL_WAIT_NONE)
				waits_record(candidates[c].flow_id, waits[c].reason, waits[c].held,
							 waits[c].capacity);
			else if (c == pick)
				waits_clear(candidates[c].flow_id);
		}
		if (pick < 0)
		{
			/*
			 * Other workers run them, or the pool's last free worker is
			 * kept: look again a little later, not in a busy loop.
			 */
			foreach(lc, due)
				set_busy(((DueFlow *) lfirst(lc))->flow_id, true);
		}
		else
		{
			ran_any = true;
			*worked = true;
			PG_TRY();
			{
				run_flow(list_nth(due, pick));
			}
			PG_FINALLY();
			{
				pool_release();
			}
			PG_END_TRY();
			/* streaming rounds waiting meanwhile: one pass between runs */
			stream_run(worked);
		}
		pfree(candidates);
		pfree(waits);
	}
	list_free(owners);
	*wait_ms = Max(10, (next_due - GetCurrentTimestamp()) / 1000);
	if (ran_any)
		*wait_ms = 0;			/* look again: a run may have left a backlog */
	else if (due != NIL)
		*wait_ms = Min(*wait_ms, BUSY_RETRY_USECS / 1000);
	list_free_deep(due);
	return has_flows;
}

/*
 * Pending flows whose tables may exist now (pool.c says when to look): each
 * start in a transaction of its own, as its owner (greptime.c); again while
 * any started, as one flow's sink may be another's source.  Busy ones are
 * looked at again a second later.
 */
static TimestampTz pending_retry_at = 0;

#define PENDING_SECOND_LOOK_USECS (200 * 1000)

static void
start_pending_flows(void)
{
	uint64		pass;
	bool		started;
	bool		retry = false;
	MemoryContext cxt;

	if (!pool_take_pending_check(&pass))
	{
		if (pending_retry_at == 0 || GetCurrentTimestamp() < pending_retry_at)
			return;
		pass = 0;
	}
	pending_retry_at = 0;
	cxt = AllocSetContextCreate(TopMemoryContext, "flowpg pending starts", ALLOCSET_SMALL_SIZES);
	do
	{
		List	   *names = NIL;
		ListCell   *lc;
		bool		installed;

		started = false;
		SetCurrentStatementStartTimestamp();
		StartTransactionCommand();
		PushActiveSnapshot(GetTransactionSnapshot());
		installed = OidIsValid(get_extension_oid("flowpg", true)) && catalog_exists();
		if (installed && !flow_locks_try_tables(AccessShareLock))
			retry = true;		/* someone changes flowpg's tables: a second later */
		else if (installed)
		{
			foreach(lc, pending_get_all())
			{
				MemoryContext old = MemoryContextSwitchTo(cxt);

				names = lappend(names, pstrdup(((PendingFlow *) lfirst(lc))->flow_name));
				MemoryContextSwitchTo(old);
			}
		}
		PopActiveSnapshot();
		CommitTransactionCommand();

		foreach(lc, names)
		{
			bool		busy;

			CHECK_FOR_INTERRUPTS();
			SetCurrentStatementStartTimestamp();
			StartTransactionCommand();
			PushActiveSnapshot(GetTransactionSnapshot());
			pgstat_report_activity(STATE_RUNNING,
								   psprintf("flowpg: starting pending flow %s", (char *) lfirst(lc)));
			if (flow_locks_try_tables(RowExclusiveLock))
				started |= pending_flow_start(lfirst(lc), &busy);
			else
				busy = true;
			retry |= busy;
			PopActiveSnapshot();
			CommitTransactionCommand();
			pgstat_report_activity(STATE_IDLE, "flowpg: idle");
		}
		MemoryContextReset(cxt);
	} while (started);
	MemoryContextDelete(cxt);
	if (retry)
		pending_retry_at = GetCurrentTimestamp() + BUSY_RETRY_USECS;

	/*
	 * A committing session asks for a pass before its invalidation messages
	 * are out (xact callbacks run first): this pass may have found its new
	 * table missing in a stale cache.  A second look, a moment later.
	 */
	else if (pass != 0)
		pending_retry_at = GetCurrentTimestamp() + PENDING_SECOND_LOOK_USECS;
	if (pass != 0)
		pool_pending_pass_end(pass);
}

/*
 * Roles changed somewhere in the server (visibility.c): this database's
 * flows over tables with row-level security are recomputed.
 */
static void
recheck_visibility(void)
{
	if (!visibility_roles_changed())
		return;
	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	if (OidIsValid(get_extension_oid("flowpg", true)) && flow_locks_try_tables(RowExclusiveLock))
		visibility_recheck_if_roles_changed();
	PopActiveSnapshot();
	CommitTransactionCommand();
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
		bool		idle;

		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
		if (waiting_for_update(&idle))
		{
			if (idle)
			{
				pool_mark_idle(dboid);
				proc_exit(0);
			}
			(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
							 UPDATE_CHECK_MS, PG_WAIT_EXTENSION);
			ResetLatch(MyLatch);
			last_work = GetCurrentTimestamp();	/* waiting is not idling: stay */
			continue;
		}

		/*
		 * Writers wake a worker at commit; the batching schedule and the
		 * streaming rounds each keep their own pace, so a busy source costs
		 * a worker at most STREAM_MIN_GAP_MS per round of work.
		 */
		now = GetCurrentTimestamp();
		if (now >= next_stream ||
			(now >= last_stream + STREAM_FLUSH_GAP_MS * 1000 && registry_any_flush_requested()))
		{
			long		stream_wait = stream_run(&worked);

			last_stream = GetCurrentTimestamp();
			next_stream = last_stream + (int64) Max(stream_wait, STREAM_MIN_GAP_MS) * 1000;
		}
		start_pending_flows();
		recheck_visibility();
		if (now >= next_batching)
		{
			long		batching_wait;

			if (!run_due_flows(&batching_wait, &worked))
			{
				/* the last flows' state and queues go with them */
				stream_sync();
				pool_mark_idle(dboid);
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
