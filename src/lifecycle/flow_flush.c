/*-------------------------------------------------------------------------
 *
 * flow_flush.c
 *	  flowpg.flush_flow and flowpg.refresh_flow: a flow's sink brought up
 *	  to date in the calling session.
 *
 * flush_flow returns once every change committed before the call is in
 * the sink.  A flow that reads other flows' sinks (a rollup of a rollup)
 * first flushes those, upstream first, so that the top of a chain is exact
 * against the raw rows: each flush runs in the caller's transaction, and
 * sees what the ones before it wrote (a batching flow's flush writes in
 * it; a streaming flow's sink rows written here are this transaction's
 * own changes to the next flow's source, which it then recomputes here
 * too).  An upstream flow the caller may not act for is left as it is,
 * with a NOTICE.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "miscadmin.h"
#include "storage/latch.h"
#include "utils/wait_event.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "backfill.h"
#include "refresh.h"
#include "catalog.h"
#include "dirty_log.h"
#include "flow_flush.h"
#include "flow_names.h"
#include "flow_locks.h"
#include "guc.h"
#include "planner.h"
#include "pool.h"
#include "registry.h"
#include "stats.h"
#include "stream_capture.h"

PG_FUNCTION_INFO_V1(flowpg_flush_flow);
PG_FUNCTION_INFO_V1(flowpg_refresh_flow);
PG_FUNCTION_INFO_V1(flowpg_wait_for_backfill);

Datum
flowpg_flush_flow(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT64(flow_flush(flow_name_arg(fcinfo, 0)));
}

/*
 * The rest of a backfill, here.  Should it fail, this transaction cannot
 * keep the error: the worker is woken to run the backfill, which fails as
 * it did here, and its failure lands in flowpg.flow_errors.
 */
static uint64
complete_backfill(FlowEntry *entry)
{
	uint64		rows = 0;

	PG_TRY();
	{
		rows = backfill_complete(entry);
	}
	PG_CATCH();
	{
		pool_wake(MyDatabaseId);
		pool_wake_for_batching(MyDatabaseId);
		PG_RE_THROW();
	}
	PG_END_TRY();
	return rows;
}

/* Returns once every change committed before the call is in the flow's sink. */
static int64
flush_one(FlowEntry *entry)
{
	const char *flow_name = entry->flow_name;
	TimestampTz started = GetCurrentTimestamp();
	RunResult result = {0};

	catalog_refuse_if_paused(entry, "flush_flow");
	if (flow_on_streams(entry))
	{
		int64		rows;
		FlushOutcome outcome = FLUSH_NO_WORKER;
		bool		backfilling;

		/* a replacement or drop in progress decides what there is to flush */
		flow_lock_wait(entry->flow_id);
		entry = catalog_get_by_id(entry->flow_id);
		if (entry == NULL)
			flow_does_not_exist(flow_name);
		catalog_refuse_if_paused(entry, "flush_flow");

		/*
		 * The worker applies what is queued, recomputes what is dirty --
		 * but cannot see this transaction's own changes, which the caller
		 * expects in the sink as with a batching flow, and must not be
		 * waited for when it needs a lock this transaction holds (it would
		 * wait for us: a deadlock no detector sees).  Those cases, and a
		 * worker found waiting for us meanwhile, flush here instead.
		 */
		backfilling = backfill_pending(entry->flow_id);
		if (flowpg_enabled && !entry->written_here && !backfilling &&
			!stream_capture_changed(entry->flow_id) &&
			!flow_locks_held_by_me(entry))
		{
			outcome = registry_flush_and_wait(entry->flow_id, &rows);

			/*
			 * A flow created without a backfill computes the windows that
			 * change from its creation on, which only the worker's state
			 * knows: the recompute below would write every window.  A
			 * worker that is starting is waited for (up to 10 s).
			 */
			for (int waited = 0; outcome == FLUSH_NO_WORKER && entry->computed_from != 0 &&
				 waited < 200; waited++)
			{
				(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
								 50, PG_WAIT_EXTENSION);
				ResetLatch(MyLatch);
				CHECK_FOR_INTERRUPTS();
				outcome = registry_flush_and_wait(entry->flow_id, &rows);
			}
		}
		/* (the worker's answer sets the flow's last flush, in shared memory) */
		if (outcome == FLUSH_DONE)
			return rows;
		if (outcome == FLUSH_FAILED)
		{
			/* the caller may act for the owner: the message may quote data */
			FlowErrorRecord *failure = stats_last_error(entry->flow_id);

			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("flow \"%s\" could not be flushed", entry->flow_name),
					 failure ?
					 errdetail("The worker failed to write its sink: %s (SQLSTATE %s).",
							   failure->message, failure->sqlstate) :
					 errdetail("The worker failed to write its sink."),
					 errhint("flowpg.flow_errors has the flow's recent errors. Fix the cause; the worker retries with a growing delay.")));
		}
		if (outcome == FLUSH_PAUSED)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("flow \"%s\" was paused while flush_flow waited for it", entry->flow_name),
					 errdetail("A paused flow's sink is not written."),
					 catalog_errhint_resume(entry->flow_name)));
		if (outcome == FLUSH_TIMED_OUT)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("flow \"%s\" could not be flushed: the flowpg worker did not answer within flowpg.query_timeout",
							entry->flow_name),
					 errdetail("The worker may be busy with a long refresh, or kept from the flow's tables by other sessions' locks."),
					 errhint("pg_stat_activity and pg_locks show what the flowpg worker of this database waits for.")));

		/*
		 * No worker to ask (disabled, the flow is not committed yet, or the
		 * worker would wait for us), or a backfill to complete: the sink is
		 * recomputed here; the worker's state, reloaded from the source,
		 * agrees with it.
		 */
		if (backfilling)
		{
			/* what is logged now is in the snapshots of the recompute */
			flow_lock(entry->flow_id);
			result.log_entries = dirty_log_delete_all(entry->flow_id, &result.rows_in);
			result.rows_out = complete_backfill(entry); /* its history too */
		}
		else
			result = refresh_recompute_all(entry);
		registry_request_reset(entry->flow_id);
		stats_record_run(entry->flow_id, &result, started, GetCurrentTimestamp(), 0);
		return (int64) result.rows_out;
	}
	/* a flow using now() is evaluated at the flush's time, changes or not */
	if (flow_plan_for_entry(entry)->uses_now)
	{
		result = refresh_recompute_all(entry);
		backfill_forget(entry->flow_id);
	}
	else
	{
		/* a backfill the worker has not finished: the rest of it here */
		uint64		backfilled = complete_backfill(entry);

		result = refresh_flush(entry);
		result.rows_out += backfilled;
	}
	if (result.log_entries > 0)
		stats_record_run(entry->flow_id, &result, started, GetCurrentTimestamp(), 0);
	else
		stats_record_flush(entry->flow_id, GetCurrentTimestamp());
	return (int64) result.rows_out;
}

/* The flows whose sinks this flow reads. */
static List *
upstream_flows(FlowEntry *entry)
{
	List	   *upstream = NIL;
	ListCell   *lc;

	foreach(lc, entry->source_relids)
	{
		ListCell   *wc;

		foreach(wc, catalog_get_all_by_sink(lfirst_oid(lc)))
		{
			FlowEntry  *writer = lfirst(wc);

			if (writer->flow_id != entry->flow_id)
				upstream = lappend(upstream, writer);
		}
	}
	return upstream;
}

/* Flushes the flows entry reads from, upstream first; visited: flow ids done. */
static void
flush_upstream(FlowEntry *entry, List **visited)
{
	ListCell   *lc;

	*visited = lappend_int(*visited, (int) entry->flow_id);
	foreach(lc, upstream_flows(entry))
	{
		FlowEntry  *writer = lfirst(lc);

		if (list_member_int(*visited, (int) writer->flow_id))
			continue;			/* flushed already, or a cycle */
		if (!has_privs_of_role(GetUserId(), writer->owner))
		{
			ereport(NOTICE,
					(errmsg("flow \"%s\" reads the sink of flow \"%s\", which is not flushed first",
							entry->flow_name, writer->flow_name),
					 errdetail("Only a role that may act for its owner flushes it; its sink may lag its source.")));
			*visited = lappend_int(*visited, (int) writer->flow_id);
			continue;
		}
		flush_upstream(writer, visited);
		if (strcmp(writer->state, "restoring") != 0 && !writer->paused)
			(void) flush_one(writer);
		CommandCounterIncrement();
	}
}

/* Returns once every change committed before the call is in the sink. */
int64
flow_flush(const char *flow_name)
{
	FlowEntry  *entry;
	List	   *visited = NIL;

	if (IsolationUsesXactSnapshot())
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("flush_flow must run in a READ COMMITTED transaction"),
				 errdetail("It must see every change committed before the call.")));
	entry = flow_owned(flow_name);
	flush_upstream(entry, &visited);
	return flush_one(entry);
}

Datum
flowpg_refresh_flow(PG_FUNCTION_ARGS)
{
	FlowEntry  *entry = flow_owned_by_caller(flow_required_text_arg(fcinfo, 0, "flow_name"));
	uint64		rows;

	catalog_refuse_if_paused(entry, "refresh_flow");
	if (!PG_ARGISNULL(1) && !PG_ARGISNULL(2) &&
		PG_GETARG_TIMESTAMPTZ(1) >= PG_GETARG_TIMESTAMPTZ(2))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("window_start must be before window_end")));
	/* a flow using now() holds one instant's result: all of it, or none */
	if (flow_plan_for_entry(entry)->uses_now)
		rows = refresh_recompute_all(entry).rows_out;
	else
		rows = refresh_range(entry, !PG_ARGISNULL(1), PG_GETARG_DATUM(1),
								   !PG_ARGISNULL(2), PG_GETARG_DATUM(2));
	/* the whole flow recomputed: nothing left to backfill */
	if (PG_ARGISNULL(1) && PG_ARGISNULL(2))
		backfill_forget(entry->flow_id);

	/*
	 * The worker's state of a streaming flow does not know what was
	 * rewritten: it reloads it (after this transaction, whose lock on the
	 * flow it waits for).
	 */
	if (flow_on_streams(entry))
		registry_request_reset(entry->flow_id);
	PG_RETURN_INT64((int64) rows);
}

/*
 * flowpg.wait_for_backfill(flow_name, timeout): returns once the worker has
 * computed the sink of a new or replaced flow (create_flow returns before
 * that: the backfill runs online, after its commit).  The backfill's
 * failure is raised here; NULL timeout: wait as long as it takes.  Unlike
 * flush_flow, which completes a backfill in the calling session, it leaves
 * the work to the worker.
 */
Datum
flowpg_wait_for_backfill(PG_FUNCTION_ARGS)
{
	FlowEntry  *entry = flow_owned_by_caller(flow_required_text_arg(fcinfo, 0, "flow_name"));
	TimestampTz started = GetCurrentTimestamp();
	TimestampTz deadline = 0;

	if (IsolationUsesXactSnapshot())
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("wait_for_backfill must run in a READ COMMITTED transaction"),
				 errdetail("It must see the worker's commits.")));
	if (entry->written_here)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the backfill of flow \"%s\" starts when this transaction commits",
						entry->flow_name),
				 errhint("Commit first, or call flowpg.flush_flow, which completes the backfill here.")));
	if (!PG_ARGISNULL(1))
		deadline = DatumGetTimestampTz(DirectFunctionCall2(timestamptz_pl_interval,
														   TimestampTzGetDatum(started),
														   PG_GETARG_DATUM(1)));
	while (backfill_pending(entry->flow_id))
	{
		FlowErrorRecord *failure = stats_last_error(entry->flow_id);

		if (failure && failure->at >= started)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("the backfill of flow \"%s\" failed: %s", entry->flow_name,
							failure->message),
					 failure->detail ? errdetail("%s", failure->detail) : 0,
					 errhint("flowpg.flow_errors has the flow's errors; the worker retries with a growing delay.")));
		if (!PG_ARGISNULL(1) && GetCurrentTimestamp() >= deadline)
			ereport(ERROR,
					(errcode(ERRCODE_QUERY_CANCELED),
					 errmsg("the backfill of flow \"%s\" did not complete within the timeout",
							entry->flow_name),
					 errhint("flowpg.flow_backfills shows its progress.")));
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, 100,
						 PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
	PG_RETURN_VOID();
}
