/*-------------------------------------------------------------------------
 *
 * stream_round.c
 *	  One streaming flow's round in a worker: its transactions, its
 *	  errors, and its stages in order.
 *
 * The stages of a round, each in its file, called from here in this order;
 * what they share is the state's (stream_state.c), and only the refill
 * uses another stage's function (it evicts when state memory runs short
 * while it loads):
 *	1. take the queued batches (stream_apply_take, stream_apply.c), under
 *	   the round's snapshot, taken first;
 *	2. expire and evict windows (stream_evict.c);
 *	3. load the state if it has none (stream_refill_load, stream_refill.c);
 *	4. recompute the dirty windows in the sink and refill their state, as
 *	   the recompute read them (stream_refill_dirty, through refresh.c);
 *	5. apply the batches (stream_apply_pending): after the refills,
 *	   because a batch whose transaction their snapshot saw must skip the
 *	   windows they read, and only the refills say which;
 *	6. write the sink (stream_write.c);
 *	7. commit: the applied batches leave the queue (round_committed, here);
 *	8. publish the counters, and now and then record the rounds
 *	   (stream_publish.c).
 *
 * Any worker of the database may run a flow's round, one at a time (the
 * claim, pool.c); the flow's state and bookkeeping are in the state
 * area (stream_state.c, group_store.c), so the next round -- by this worker or
 * another, or after this one exited -- continues where this one stopped.
 * A worker keeps only a compiled graph per flow.
 *
 * A round that does not finish (an error, a lock it could not get, the
 * worker terminated) may have merged part of its batches: the groups it
 * touched are recorded in shared memory before each change, and the next
 * round logs those windows dirty, so that the batching refresh recomputes
 * them in the sink and the state refills them from the source under the
 * same snapshot.  Its batches are still queued (they leave the queue when
 * the round's transaction commits); the refill skips those its snapshot
 * sees.  Only a server crash, which reinitializes shared memory, loses the
 * state: every flow then reloads from the source.
 *
 * Whatever streaming cannot do exactly goes through the dirty log, which
 * the batching refresh recomputes in the same snapshot before the state of
 * those windows is refilled: updates and deletes on the source, TRUNCATE,
 * a full queue, and windows given up for memory.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "commands/extension.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timeout.h"
#include "utils/timestamp.h"

#include "backfill.h"
#include "catalog.h"
#include "dirty_log.h"
#include "flow_locks.h"
#include "guc.h"
#include "settings.h"
#include "state_memory.h"
#include "sink.h"
#include "trust.h"
#include "stats.h"
#include "eval_tick.h"
#include "stream_flow.h"
#include "stream_state.h"
#include "pool.h"
#include "progress.h"

#define MAX_RETRY_USECS (60 * USECS_PER_SEC)
/* A flow degraded for memory tries to load its state again after this. */
#define DEGRADED_RETRY_USECS (5 * USECS_PER_SEC)
#define DEGRADED_FORGET_USECS (600 * USECS_PER_SEC)
/* 5 s, 10 s, 20 s, then 40 s after the latest of degrades in a row */
#define degraded_retry(sh) (DEGRADED_RETRY_USECS << Min(Max((sh)->degrades, 1) - 1, 3))
#define BUSY_SKIP_USECS (20 * 1000)		/* after a lock found taken */


/*
 * When the sink is written next.  Writes are paced by their cost: the next
 * one waits SINK_WRITE_PACE times as long as writing the groups changed
 * now would take at the last write's pace (at least flush_interval), times
 * the number of flows the worker had work for in its last pass -- their
 * writes share its time.  So the worker spends at most a fifth of its time
 * on sink writes, whatever the number of flows (six rollups of one table
 * written every flush_interval took it past the rate of the writers, and
 * the changes it could not keep up with went to the recompute), a group
 * changed again meanwhile is written once, and a live load whose changed
 * groups are few keeps flush_interval.  No change waits longer than
 * flowpg.max_sink_lag; flush_flow writes at once.
 */
#define SINK_WRITE_PACE 4

static int	busy_flows = 1;		/* of the worker's last pass, at least 1 */

/*
 * The shortest period between two sink writes: flush_interval; a batching
 * flow keeping partial states is written at a batching flow's cadence, its
 * eval_interval or else flowpg.min_refresh_interval.  Taken from the
 * catalog at each round (flow->write_period): a replacement may change it
 * and not the graph.
 */
static int64
sink_write_period(FlowEntry *entry)
{
	if (!entry->partial_states)
		return (int64) flowpg_flush_interval_ms * 1000;
	if (entry->eval_interval)
		return eval_interval_usecs(entry->eval_interval);
	return (int64) Max(flowpg_min_refresh_interval_ms, flowpg_flush_interval_ms) * 1000;
}

static TimestampTz
next_sink_write(StreamFlow *flow, FlowShared *sh)
{
	int64		changed = store_changed_count_at(sh->store);
	double		per_group = sh->last_write_groups > 0 ?
		(double) sh->last_write_us / sh->last_write_groups : 0;
	/* (before its first round: flush_interval) */
	int64		period = flow->write_period > 0 ? flow->write_period :
		(int64) flowpg_flush_interval_ms * 1000;
	int64		max_lag = Max((int64) flowpg_max_sink_lag_ms * 1000, period);
	TimestampTz at = sh->last_flush +
		Max(period, (int64) (SINK_WRITE_PACE * busy_flows * per_group * changed));

	/* changes a refill made have no batch time: the last write bounds them */
	at = Min(at, sh->last_flush + max_lag);
	if (sh->oldest_unflushed != 0)
		at = Min(at, sh->oldest_unflushed + max_lag);
	return at;
}

/*
 * A round of a flow has two transactions.  The first (apply_only) applies
 * the batches committed by now; what it cannot apply goes to the dirty log.
 * The second, REPEATABLE READ, takes its snapshot after that, so the
 * refills and recomputes it runs see every change applied or logged so far
 * (a flush_flow gets all of them in the sink), then applies what committed
 * meanwhile and writes the sink.  Returns the flush request it completed.
 */
static int64
flow_round(StreamFlow *flow, TimestampTz now, int64 flush_request, bool apply_only)
{
	FlowShared *sh;
	FlowEntry  *entry;
	FlowIdentity identity;
	int64		rows_before;
	bool		dirty;
	bool		repairing;
	bool		wrote;
	TimestampTz t_dirty = 0,
				t_apply = 0,
				t_write = 0;

	flow->ran = false;

	/*
	 * No refresh, inline flush, replacement or drop of this flow meanwhile;
	 * when one is in progress, a later round tries again (the worker never
	 * waits for a user's transaction).
	 */
	sh = stream_state_shared(flow->flow_id, false);
	if (!flow_try_lock(flow->flow_id))
	{
		if (sh)
			sh->busy_until = now + BUSY_SKIP_USECS;
		return 0;
	}
	entry = catalog_get_by_id(flow->flow_id);
	if (entry == NULL || graph_version(entry) != flow->version || !flow_on_streams(entry))
		return 0;				/* gone or changed: the next sync sees it */
	flow->write_period = sink_write_period(entry);
	if (entry->paused)
	{
		flow->paused = true;	/* not tried again before resume_flow's sync */
		return 0;
	}
	if (!flow_try_lock_tables(entry))
	{
		if (sh)
			sh->busy_until = now + BUSY_SKIP_USECS; /* a user's transaction holds them */
		return 0;
	}

	flow_enter(&identity, entry->owner, entry->settings, false);
	stream_state_open(flow);
	/* before a refill reads the sources or a write runs the sink's code */
	trust_require_table_code(sink_untrusted_code(entry->sink_relid, flow->graph->plan,
												 entry->owner, true),
							 entry->flow_name, entry->owner);
	sh = flow->sh;
	flow->ran = true;
	rows_before = sh->unrecorded.rows_out;

	/*
	 * refresh_flow or an inline flush rewrote the sink: reload.  Asked for
	 * while that holds the flow's lock, so seen here once it committed.
	 */
	if (registry_take_reset(flow->flow_id) && sh->loaded)
		stream_state_reset(flow);
	/* state given up for memory (all, or older windows): whole again once half of it is free */
	else if ((sh->degraded || sh->has_watermark) && state_memory_has_room(MyDatabaseId) &&
			 GetCurrentTimestamp() - sh->degraded_at >= degraded_retry(sh))
		stream_state_reset(flow);

	flow->writing = false;
	/* no dirty pass before this apply: what writers logged may wait */
	flow->regroup_retractions = registry_worker_behind(flow->flow_id);
	if (apply_only)
	{
		PushActiveSnapshot(GetTransactionSnapshot());
		stream_apply_take(flow);
		if (sh->loaded && !sh->touched)
			stream_apply_pending(flow);
		PopActiveSnapshot();
		flow_leave(&identity);
		return 0;
	}

	/* the snapshot first: every batch it sees is in the queue by now */
	PushActiveSnapshot(GetTransactionSnapshot());
	stream_apply_take(flow);
	/* a new definition, with a backfill: the state's first load is it */
	if (!flow->backfill_checked)
	{
		flow->backfilling = backfill_pending(flow->flow_id);
		flow->backfill_checked = true;
	}

	stream_evict_aged(flow);
	if (registry_take_evict(flow->flow_id))
		sh->evict_requested = true;
	if (sh->evict_requested && sh->loaded)
	{
		stream_evict_for_memory(flow);
		sh->evict_requested = false;
	}

	/*
	 * The last round did not finish: what it touched is recomputed in the
	 * sink and refilled in the state, under this round's snapshot.
	 */
	repairing = sh->touched && sh->loaded;
	if (repairing)
	{
		ereport(LOG,
				(errmsg("flowpg: flow \"%s\": recomputing what an unfinished round touched",
						entry->flow_name),
				 sh->touched_whole ? errdetail("The whole flow.") :
				 errdetail("Time ordinals " INT64_FORMAT " to " INT64_FORMAT ".",
						   sh->touched_lo, sh->touched_hi)));
		if (sh->touched_whole)
			dirty_log_append(flow->flow_id, true, 0, 0, 0);
		else
			dirty_log_append(flow->flow_id, false, sh->touched_lo, sh->touched_hi, 0);
		sh->repairs++;
		sh->fallback_logged = true;
	}
	if (!sh->loaded)
	{
		stream_refill_load(flow);
		sh->stats.status = STREAM_STATUS_ACTIVE;
	}
	/* (as a time under the flow's settings, for flow_stats) */
	{
		int64		floor_time;
		int64		floor_window;

		sh->stats.state_from = stream_state_floor(flow, &floor_time, &floor_window) ?
			window_ordinal_to_timestamptz(flow->graph->time_type, floor_time) : 0;
	}

	/*
	 * A worker that is behind (batches found no room) leaves the writers'
	 * fallbacks dirty until it has caught up, or for max_sink_lag: the
	 * recompute re-reads their windows from the source, which for the long
	 * windows of a live table takes seconds, while the queue fills and more
	 * writers fall back -- a spiral.  Then every min_refresh_interval.
	 */
	if (flush_request == 0 && !sh->fallback_logged && registry_worker_behind(flow->flow_id) &&
		now < sh->next_dirty_check + (int64) flowpg_max_sink_lag_ms * 1000)
		dirty = false;
	else
		dirty = registry_take_dirty(flow->flow_id) || flush_request != 0 ||
			now >= sh->next_dirty_check || sh->fallback_logged;
	/* the writers' fallbacks wait for a later round: retractions recompute */
	flow->regroup_retractions = !dirty && registry_worker_behind(flow->flow_id);
	sh->fallback_logged = false;
	if (dirty)
	{
		stream_refill_dirty(flow, flush_request != 0 || repairing);
		sh->next_dirty_check = now + (int64) flowpg_min_refresh_interval_ms * 1000;
	}
	t_dirty = GetCurrentTimestamp();

	/* (rows of flows without aggregates wait in the queue, not in a state: not paced) */
	flow->writing = flush_request != 0 || sh->evict_requested || repairing ||
		flow->backfilling ||
		(!flow->graph->plan->is_aggregate &&
		 now - sh->last_flush >= (int64) flowpg_flush_interval_ms * 1000);
	stream_apply_pending(flow);
	sh->last_apply = now;
	/* paced by what writing the groups changed by now costs */
	if (!flow->writing && flow->graph->plan->is_aggregate)
		flow->writing = now >= next_sink_write(flow, sh);
	t_apply = GetCurrentTimestamp();
	wrote = stream_has_changes(flow) && flow->writing;
	if (wrote)
	{
		int64		groups = store_changed_count_at(sh->store);

		stream_write_sink(flow);
		sh->last_flush = now;
		sh->last_write_us = GetCurrentTimestamp() - t_apply;
		sh->last_write_groups = groups;
	}
	t_write = GetCurrentTimestamp();

	/*
	 * The backfill of a streaming flow is its state's first load, which
	 * marks every group changed (stream_refill_load): once they are in the sink
	 * (written by this round, or earlier), it is complete.  Its batches
	 * the load's snapshot saw are skipped, later ones applied, as for any
	 * refill: nothing counts twice.
	 */
	flow->backfill_ended = false;
	if (flow->backfilling && sh->loaded && (wrote || !stream_has_changes(flow)))
	{
		uint64		rows = 0;

		/*
		 * The windows before the state's floor (older than state_keep, or
		 * expire_after), which its load did not read: a piece per round,
		 * recomputed as a batching flow's.  Changes to them go to the
		 * recompute anyway, so the pieces are exact whenever they run.
		 */
		flow->backfill_ended = !backfill_step(entry, &rows);
		sh->unrecorded.rows_out += rows;
	}
	if (repairing)
		ereport(LOG,
				(errmsg("flowpg: flow \"%s\" recomputed what an unfinished round touched in %ld ms",
						entry->flow_name, (long) ((t_dirty - now) / 1000)),
				 errdetail("It then applied %d batches in %ld ms and wrote its sink in %ld ms.",
						   list_length(flow->pending), (long) ((t_apply - t_dirty) / 1000),
						   (long) ((t_write - t_apply) / 1000))));

	PopActiveSnapshot();
	flow_leave(&identity);
	sh->stats.round_rows = sh->unrecorded.rows_out - rows_before;

	/*
	 * What this round could not apply (a degraded state, windows below the
	 * watermark) it logged dirty after its dirty pass; a batch may also
	 * have committed after its snapshot.  The next round recomputes those
	 * under a snapshot that sees them: a flush is done then -- the one
	 * waiting for that, not one asked for since.
	 */
	if (flush_request != 0 && sh->fallback_logged)
	{
		int64		done = sh->flush_after_recompute;

		sh->flush_after_recompute = flush_request;
		return done;
	}
	sh->flush_after_recompute = 0;
	return flush_request;
}

/* The round's transaction committed: its batches leave the queue, its touch is void. */
static void
round_committed(StreamFlow *flow)
{
	List	   *done = NIL;
	ListCell   *lc;

	foreach(lc, flow->pending)
	{
		PendingBatch *pb = lfirst(lc);

		if (pb->done)
			done = lappend(done, pb->batch);
	}
	queue_remove(flow->flow_id, done);
	list_free(done);
	if (flow->backfill_ended)
	{
		/* the sink is up to date with the source: last_execution_time */
		if (flow->sh)
			flow->sh->stats.last_flush_at = GetCurrentTimestamp();
		flow->backfilling = flow->backfill_ended = false;
	}
	if (flow->written != NIL)
	{
		ListCell   *lg;
		ListCell   *lk;

		/* the written groups: what the sink holds now, and no longer changed */
		forboth(lg, flow->written, lk, flow->written_keep)
		{
			StoredGroup *group = lfirst(lg);

			if (lfirst_int(lk) == WRITTEN_KEPT)
				group->flags |= STORED_IN_SINK;
			else
				group->flags &= ~STORED_IN_SINK;
		}
		store_clear_changed(flow->store);
		/* groups whose last row went: gone from the sink, now from the state */
		forboth(lg, flow->written, lk, flow->written_keep)
		{
			if (lfirst_int(lk) == WRITTEN_GONE)
				store_drop_group(flow->store, lfirst(lg));
		}
	}
	flow->written = flow->written_keep = NIL;
	if (flow->sh)
	{
		flow->sh->write_pending = false;
		flow->sh->touched = flow->sh->touched_whole = false;
	}
	MemoryContextReset(flow->round_memory);
	flow->pending = NIL;
}

/*
 * A round that failed: what it touched stays marked for the next round to
 * recompute, and the error is recorded -- unless it was a lock a user's
 * transaction held, which is no failure of the flow.
 */
static void
round_failed(StreamFlow *flow, ErrorData *edata, TimestampTz started, bool busy, bool refused)
{
	FlowShared *sh = flow->sh ? flow->sh : stream_state_shared(flow->flow_id, false);
	int64		delay = USECS_PER_SEC;
	bool		was_loaded;

	MemoryContextReset(flow->round_memory);
	flow->pending = NIL;
	flow->written = flow->written_keep = NIL;
	flow->append_rows = NULL;
	MemoryContextReset(flow->flush_memory);
	if (busy)
	{
		ereport(DEBUG1,
				(errmsg("flowpg: streaming flow %lld is busy: %s",
						(long long) flow->flow_id, edata->message)));
		/* not before the lock may be gone */
		if (sh)
			sh->busy_until = GetCurrentTimestamp() + BUSY_RETRY_USECS;
		return;
	}
	if (refused && sh == NULL)
	{
		/* no room even for its bookkeeping: a second later, no failure */
		flow->no_shared_until = GetCurrentTimestamp() + BUSY_RETRY_USECS;
		return;
	}
	if (refused)
	{
		/*
		 * Its state gets no more memory (flowpg.state_memory, or its
		 * database's share of it): the flow gives its state up and is
		 * recomputed from the source, as a batching flow, until memory
		 * frees (flow_round).  No failure: what the round touched is
		 * recomputed by the next one; a state never loaded, or holding
		 * changes not written to the sink yet, leaves the sink to a whole
		 * recompute.
		 */
		ereport(LOG,
				(errmsg("flowpg: streaming flow %lld gives up its state for memory: %s",
						(long long) flow->flow_id, edata->message),
				 errdetail("It is recomputed from the source until half of flowpg.state_memory is free again.")));
		/* groups changed but not written yet go with the state: recompute */
		was_loaded = sh->loaded &&
			!(DsaPointerIsValid(sh->store) && store_has_changed_at(sh->store));
		if (DsaPointerIsValid(sh->store))
			stream_state_drop_store(flow);
		/* each degrade soon after the last waits longer to load again */
		if (GetCurrentTimestamp() - sh->degraded_at > DEGRADED_FORGET_USECS)
			sh->degrades = 0;
		sh->degrades++;
		sh->degrades_total++;
		sh->degraded = true;
		sh->degraded_at = GetCurrentTimestamp();
		sh->loaded = true;
		sh->has_watermark = false;
		if (!was_loaded)
		{
			SetCurrentStatementStartTimestamp();
			StartTransactionCommand();
			PushActiveSnapshot(GetTransactionSnapshot());
			if (flow_locks_try_tables(RowExclusiveLock))
				dirty_log_append(flow->flow_id, true, 0, 0, 0);
			else
				sh->loaded = false; /* loaded again next time, or given up then */
			PopActiveSnapshot();
			CommitTransactionCommand();
		}
		return;
	}
	ereport(LOG,
			(errmsg("flowpg: streaming flow %lld failed: %s",
					(long long) flow->flow_id, edata->message)));
	if (sh)
	{
		for (int i = 0; i < sh->failures && delay < MAX_RETRY_USECS; i++)
			delay *= 2;
		sh->failures++;
		sh->retry_at = GetCurrentTimestamp() + Min(delay, MAX_RETRY_USECS);
		if (edata->sqlerrcode == ERRCODE_OUT_OF_MEMORY)
			sh->evict_requested = true;
		/* the sink holds a group the state thought new: upsert everything next */
		if (edata->sqlerrcode == ERRCODE_UNIQUE_VIOLATION)
			sh->write_pending = true;
	}

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	/* (when flowpg's tables are being dropped, there is nothing to record into) */
	if (flow_locks_try_tables(RowExclusiveLock))
		(void) stats_record_failure(flow->flow_id, edata, started, GetCurrentTimestamp());
	PopActiveSnapshot();
	CommitTransactionCommand();
}

static void
run_one(StreamFlow *flow, int64 flush_request)
{
	TimestampTz started = GetCurrentTimestamp();
	MemoryContext oldcontext = CurrentMemoryContext;
	volatile int64 flush_done = 0;
	volatile bool succeeded = false;

	char		activity[NAMEDATALEN + 64];

	/* (no palloc: this runs in the worker's long-lived context, once a round) */
	if (flow->entry)
		snprintf(activity, sizeof(activity), "flowpg: streaming round of flow %s",
				 flow->entry->flow_name);
	else
		snprintf(activity, sizeof(activity), "flowpg: streaming round of flow %lld",
				 (long long) flow->flow_id);
	pgstat_report_activity(STATE_RUNNING, activity);
	progress_begin(flow->flow_id, PROGRESS_STREAM_ROUND);
	(void) state_memory_take_refusal();	/* a note of an earlier, survived refusal */
	flow->sh = stream_state_shared(flow->flow_id, false);
	/* a failed round's counts go with it (kept in the handle: across the longjmp) */
	memset(&flow->counts_before, 0, sizeof(RunResult));
	if (flow->sh)
		flow->counts_before = flow->sh->unrecorded;
	PG_TRY();
	{
		if (flow->sh && flow->sh->loaded && !flow->sh->touched)
		{
			SetCurrentStatementStartTimestamp();
			StartTransactionCommand();
			flow_limit_lock_waits();
			flow_locks_tables_or_busy();
			(void) flow_round(flow, started, flush_request, true);
			CommitTransactionCommand();
			MemoryContextSwitchTo(oldcontext);
			if (flow->ran)
				round_committed(flow);
			/* applied and out of the queue: its counts stay, whatever follows */
			if (flow->sh)
				flow->counts_before = flow->sh->unrecorded;
		}
		SetCurrentStatementStartTimestamp();
		StartTransactionCommand();
		XactIsoLevel = XACT_REPEATABLE_READ;
		flow_limit_lock_waits();
		flow_locks_tables_or_busy();
		if (flowpg_query_timeout_ms > 0)
			enable_timeout_after(STATEMENT_TIMEOUT, flowpg_query_timeout_ms);
		flush_done = flow_round(flow, started, flush_request, false);
		disable_timeout(STATEMENT_TIMEOUT, false);
		CommitTransactionCommand();
		MemoryContextSwitchTo(oldcontext);
		/* a round that did not get its locks changed nothing: nothing to clear */
		if (flow->ran)
			round_committed(flow);
		if (flow->sh)
			flow->sh->failures = 0;
		succeeded = true;
	}
	PG_CATCH();
	{
		ErrorData  *edata;
		bool		timed_out = get_timeout_indicator(STATEMENT_TIMEOUT, false);
		bool		busy;
		bool		refused;

		disable_timeout(STATEMENT_TIMEOUT, false);
		QueryCancelPending = false;
		MemoryContextSwitchTo(oldcontext);
		edata = CopyErrorData();
		FlushErrorState();
		AbortCurrentTransaction();
		MemoryContextSwitchTo(oldcontext);
		/* a lock a user holds, or a cancel from outside (drop_flow): no failure */
		busy = edata->sqlerrcode == ERRCODE_LOCK_NOT_AVAILABLE ||
			(edata->sqlerrcode == ERRCODE_QUERY_CANCELED && !timed_out);

		/*
		 * A flush_flow waiting for this round gets the failure -- not a
		 * busy one, nor one that ran out of state memory (the flow degrades
		 * to the recompute, and the next round serves the flush).
		 */
		refused = edata->sqlerrcode == ERRCODE_OUT_OF_MEMORY && state_memory_take_refusal();
		if (busy || refused)
			flush_request = 0;
		if (flow->sh)
			flow->sh->unrecorded = flow->counts_before;
		round_failed(flow, edata, started, busy, refused);
		stream_publish(flow, flush_request, flush_request != 0, GetCurrentTimestamp());
		FreeErrorData(edata);	/* in the worker's long-lived context */
	}
	PG_END_TRY();

	if (succeeded && flow->sh &&
		(flow->sh->unrecorded.log_entries != flow->counts_before.log_entries ||
		 flow->sh->unrecorded.rows_out != flow->counts_before.rows_out))
	{
		/* a round that applied batches or wrote the sink: a run */
		flow->sh->unrecorded_runs++;
		flow->sh->last_round_at = GetCurrentTimestamp();
		flow->sh->last_round_us = flow->sh->last_round_at - started;
	}
	if (succeeded)
	{
		/* the run is on record before a waiting flush_flow returns */
		PG_TRY();
		{
			stream_record_rounds(flow, GetCurrentTimestamp(), flush_done != 0);
		}
		PG_CATCH();
		{
			/* only statistics: the round itself is committed */
			MemoryContextSwitchTo(oldcontext);
			EmitErrorReport();
			FlushErrorState();
			AbortCurrentTransaction();
			MemoryContextSwitchTo(oldcontext);
		}
		PG_END_TRY();
		stream_publish(flow, flush_done, false, GetCurrentTimestamp());
	}
	progress_end_all();
	pgstat_report_activity(STATE_IDLE, "flowpg: idle");
}

/*
 * Does the flow need a round now?  *wake_ms gets when it may next need
 * one, if that is sooner.  Reads only shared memory; the caller holds the
 * flow's claim.
 */
typedef enum RoundDue
{
	ROUND_NOT_DUE,
	ROUND_CHECK,				/* only the periodic look at the dirty log */
	ROUND_WORK
} RoundDue;

static RoundDue
round_due(StreamFlow *flow, TimestampTz now, int64 flush_request, long *wake_ms)
{
	FlowShared *sh = stream_state_shared(flow->flow_id, false);
	TimestampTz at;
	QueueWant	want;

	if (sh == NULL)
	{
		if (flow->no_shared_until > now)
		{
			*wake_ms = Min(*wake_ms, Max((flow->no_shared_until - now) / 1000, 1));
			return ROUND_NOT_DUE;
		}
		return ROUND_WORK;		/* never run: its first round */
	}
	if (sh->busy_until > now || (sh->retry_at > now && flush_request == 0))
	{
		at = Max(sh->busy_until, flush_request ? 0 : sh->retry_at);
		*wake_ms = Min(*wake_ms, Max((at - now) / 1000, 1));
		return ROUND_NOT_DUE;
	}
	if (flush_request != 0 || !sh->loaded || sh->touched || sh->evict_requested ||
		flow->backfilling || !flow->backfill_checked)
		return ROUND_WORK;
	/* given up for memory: a round loads it again once there is room (flow_round) */
	if (sh->degraded || sh->has_watermark)
	{
		if (now - sh->degraded_at >= degraded_retry(sh) && state_memory_has_room(MyDatabaseId))
			return ROUND_WORK;
		*wake_ms = Min(*wake_ms, 1000);
	}
	want = registry_round_wanted(flow->flow_id);
	if (want == QUEUE_WANT_NOW)
		return ROUND_WORK;

	/*
	 * Batches are applied when the sink is written next: one round applies
	 * all that came meanwhile, and the sink would show them no sooner.  So
	 * are the windows the last round logged dirty itself (a retraction the
	 * state could not take): the recompute should not wait for the check.
	 */
	if (want == QUEUE_WANT_BATCHES || sh->fallback_logged)
	{
		at = Max(sh->last_flush, sh->last_apply) + (int64) flowpg_flush_interval_ms * 1000;
		if (at <= now)
			return ROUND_WORK;
		*wake_ms = Min(*wake_ms, Max((at - now) / 1000, 1));
	}
	/* only changes waiting for their paced write */
	else if (DsaPointerIsValid(sh->store) && store_has_changed_at(sh->store))
	{
		at = Max(next_sink_write(flow, sh),
				 sh->last_apply + (int64) flowpg_flush_interval_ms * 1000);
		if (at <= now)
			return ROUND_WORK;
		*wake_ms = Min(*wake_ms, Max((at - now) / 1000, 1));
	}
	if (now >= sh->next_dirty_check)
		return ROUND_CHECK;
	*wake_ms = Min(*wake_ms, Max((sh->next_dirty_check - now) / 1000, 1));
	return ROUND_NOT_DUE;
}

long
stream_run(bool *worked)
{
	ListCell   *lc;
	long		wait_ms = 1000;
	TimestampTz now = GetCurrentTimestamp();
	TimestampTz started = now;
	int			busy = 0;

	if (!flowpg_enabled)
		return 1000;
	/* a chunk is deformed once per pass for all the flows of its table */
	codec_decoded_reset();
	foreach(lc, stream_state_handles())
	{
		StreamFlow *flow = lfirst(lc);
		int64		flush_request = registry_flush_requested(flow->flow_id);

		RoundDue	due;

		CHECK_FOR_INTERRUPTS();
		now = GetCurrentTimestamp();
		if (flow->paused)
			continue;			/* resume_flow: the next sync */

		/*
		 * The claim first: the flow's shared part and store that round_due
		 * reads are freed by whoever claims a dropped flow (stream_state.c).
		 */
		if (!pool_claim(flow->flow_id, false))
			continue;			/* another worker runs it */
		due = round_due(flow, now, flush_request, &wait_ms);
		if (due == ROUND_NOT_DUE)
		{
			pool_release();
			continue;
		}
		/* a periodic look does not keep an extra worker from leaving */
		if (due == ROUND_WORK)
		{
			*worked = true;
			busy++;
		}
		PG_TRY();
		{
			run_one(flow, flush_request);
		}
		PG_FINALLY();
		{
			pool_release();
		}
		PG_END_TRY();
		if (registry_round_wanted(flow->flow_id) == QUEUE_WANT_NOW)
			wait_ms = Min(wait_ms, 10);
		else
			wait_ms = Min(wait_ms, flowpg_flush_interval_ms);
	}
	busy_flows = Max(busy, 1);

	/*
	 * A pass over several flows' rounds that outlasts flush_interval twice:
	 * this worker falls behind the writers, and the flows' rows wait (then
	 * go to the recompute).  Another worker takes some of the flows' rounds.
	 */
	if (busy > 1 && GetCurrentTimestamp() - started > (int64) 2 * flowpg_flush_interval_ms * 1000)
		pool_grow();
	if (state_memory_exceeded())
		registry_request_evict_largest();
	return wait_ms;
}
