/*-------------------------------------------------------------------------
 *
 * stream_refill.c
 *	  Where windows of a streaming flow's state are refilled from the source.
 *
 * A refill reads the source rows of some windows (or all) under the
 * round's snapshot, runs them through the flow's graph into a local table
 * and merges that into the shared state, in pieces so that a large refill
 * needs little local memory.  Queued batches whose transaction that
 * snapshot already sees are marked to skip the refilled windows, later
 * ones are applied: nothing counts twice and nothing is lost.
 *
 * Refills happen when a flow's state is first loaded (or reloaded: a
 * changed definition, refresh_flow, a server crash), after the batching
 * refresh recomputed windows of the sink (the dirty log), and after a
 * round that did not finish (stream_round.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/transam.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/ruleutils.h"
#include "utils/snapmgr.h"

#include "backfill.h"
#include "catalog.h"
#include "dirty_log.h"
#include "progress.h"
#include "state_memory.h"
#include "stats.h"
#include "stream_flow.h"

#define SOURCE_FETCH_ROWS 10000
#define REFILL_PIECE_GROUPS 65536
/* stale groups recomputed one by one at most; more go to their windows' recompute */
#define REGROUP_MAX_GROUPS 1000

/*
 * Clips time ranges to what the state holds: from its floor on, and the
 * warm windows below it (stream_evict.c); NIL when nothing is left.
 */
static List *
clip_to_floor(StreamFlow *flow, List *ranges, bool *whole)
{
	FlowShared *sh = flow->sh;
	int64		floor_time;
	int64		floor_window;
	List	   *kept;
	ListCell   *lc;

	if (!stream_state_floor(flow, &floor_time, &floor_window))
		return ranges;
	if (*whole)
	{
		WindowRange *r = palloc0(sizeof(WindowRange));

		r->start = floor_time;
		r->unbounded = true;
		*whole = false;
		ranges = list_make1(r);
		for (int i = 0; i < sh->nwarm; i++)
		{
			WindowRange *w = palloc0(sizeof(WindowRange));

			w->start = sh->warm[i].start;
			w->end = sh->warm[i].end;
			ranges = lappend(ranges, w);
		}
		return ranges;
	}
	kept = refresh_clip_ranges(ranges, floor_time);
	foreach(lc, ranges)
	{
		WindowRange *r = lfirst(lc);

		for (int i = 0; i < sh->nwarm; i++)
		{
			int64		start = r->from_beginning ? sh->warm[i].start : Max(r->start, sh->warm[i].start);
			int64		end = r->unbounded ? sh->warm[i].end : Min(r->end, sh->warm[i].end);

			if (start < end)
			{
				WindowRange *w = palloc0(sizeof(WindowRange));

				w->start = start;
				w->end = end;
				kept = lappend(kept, w);
			}
		}
	}
	return kept;
}

/* Moves a local table of refilled groups into the state, and empties it. */
static void
merge_refilled(StreamFlow *flow, GroupTable **table, bool mark_changed, bool regroup)
{
	StreamGraph *graph = flow->graph;
	GroupIterator iter = {0};
	FlowGroup  *group;
	StoredGroup *stored;

	int64		floor_time;
	int64		floor_window;
	bool		has_floor = stream_state_floor(flow, &floor_time, &floor_window);
	int64		skipped_lo = PG_INT64_MAX;
	int64		skipped_hi = PG_INT64_MIN;
	bool		skipped_whole = false;

	while (flow->store != NULL && (group = group_table_next(*table, &iter)) != NULL)
	{
		/*
		 * Past the state memory the flow gives up its older windows now
		 * (their changes go to the recompute), and what is refilled below
		 * the new floor is dropped: a refill must not run into the limit.
		 */
		if (state_memory_exceeded())
		{
			stream_evict_for_memory(flow);
			if (flow->store == NULL)
			{
				/* gave up the whole state */
				skipped_whole = true;
				break;
			}
			has_floor = stream_state_floor(flow, &floor_time, &floor_window);
		}
		if (has_floor && group->time_lo <= group->time_hi && group->time_hi < floor_time &&
			!stream_evict_is_warm(flow->sh, false, group->time_lo, false))
		{
			skipped_lo = Min(skipped_lo, group->time_lo);
			skipped_hi = Max(skipped_hi, group->time_hi);
			continue;
		}
		store_reset_local(flow->store);
		if (graph->nkeys > 0)
		{
			group_load_key(graph, group);
		}
		if (regroup)
		{
			/* only the groups being recomputed; the others of these rows stand */
			StoredGroup *target = store_lookup(flow->store, false);

			if (target == NULL || !(target->flags & STORED_REGROUP))
				continue;
		}
		for (int i = 0; i < graph->naggs; i++)
			flow->partials[i] = group_get_trans(group, graph->naggs, i);
		stored = stream_state_merge_group(flow, group->time_lo, group->time_hi, flow->partials,
										  NULL, 1, !regroup);
		if (mark_changed)
			store_mark_changed(flow->store, stored);
		CHECK_FOR_INTERRUPTS();
	}

	/*
	 * A refill whose values the sink may not hold yet (mark_changed) and
	 * that gave windows up: those windows are recomputed instead.
	 */
	if (mark_changed && (skipped_whole || skipped_lo <= skipped_hi))
	{
		stream_state_touch(flow, skipped_whole, skipped_lo, skipped_hi);
		dirty_log_append(flow->flow_id, skipped_whole, skipped_whole ? 0 : skipped_lo,
						 skipped_whole ? 0 : skipped_hi, 0);
		flow->sh->fallback_logged = true;
	}
	group_table_free(*table);
	*table = group_table_create(graph, flow->memory);
}

/*
 * Reads the source rows of the windows in ranges (all when whole) under
 * the transaction's snapshot into the state.  The caller is connected to
 * SPI and runs as the owner under the flow's settings.
 */
static void
load_source_rows(StreamFlow *flow, FlowPlan *plan, List *ranges, bool whole,
				 bool mark_changed, bool regroup)
{
	StreamGraph *graph = flow->graph;
	Query	   *query = copyObject(plan->query);
	List	   *tlist = NIL;
	SPIPlanPtr	spiplan;
	Portal		portal;
	GroupTable *table = group_table_create(graph, flow->memory);

	for (int c = 0; c < graph->ncols; c++)
	{
		Form_pg_attribute attr = TupleDescAttr(graph->row_desc, c);
		/* by number: the column may have been renamed since the graph was built */
		Var		   *var = makeVar(1, graph->col_attnos[c],
								  attr->atttypid, attr->atttypmod, attr->attcollation, 0);

		tlist = lappend(tlist, makeTargetEntry((Expr *) var, c + 1,
											   psprintf("c%d", c + 1), false));
	}
	if (tlist == NIL)
		tlist = list_make1(makeTargetEntry((Expr *) makeBoolConst(true, false), 1,
										   pstrdup("row"), false));
	query->targetList = tlist;
	query->groupClause = NIL;
	query->havingQual = NULL;
	query->hasAggs = false;
	if (!whole)
		refresh_restrict_query(plan, query, ranges);

	spiplan = SPI_prepare(progress_label_sql(flow->entry->flow_name,
											 pg_get_querydef(query, false)), 0, NULL);
	if (spiplan == NULL)
		elog(ERROR, "flowpg could not plan the source scan: %s",
			 SPI_result_code_string(SPI_result));
	progress_phase(whole ? "loading the state from the source" :
				   regroup ? "recomputing groups from the source" : "reloading windows from the source");
	portal = SPI_cursor_open(NULL, spiplan, NULL, NULL, true);
	for (;;)
	{
		SPI_cursor_fetch(portal, true, SOURCE_FETCH_ROWS);
		if (SPI_processed == 0)
			break;
		progress_add_rows_read(SPI_processed);
		for (uint64 i = 0; i < SPI_processed; i++)
		{
			TupleTableSlot *row = graph->row_slot;

			ExecClearTuple(row);
			if (graph->ncols > 0)
				heap_deform_tuple(SPI_tuptable->vals[i], SPI_tuptable->tupdesc,
								  row->tts_values, row->tts_isnull);
			ExecStoreVirtualTuple(row);
			(void) graph_accumulate_row(graph, table);
			CHECK_FOR_INTERRUPTS();
		}
		SPI_freetuptable(SPI_tuptable);
		if (table->ngroups >= REFILL_PIECE_GROUPS)
			merge_refilled(flow, &table, mark_changed, regroup);
	}
	SPI_cursor_close(portal);
	SPI_freeplan(spiplan);
	merge_refilled(flow, &table, mark_changed, regroup);
	group_table_free(table);
}

static bool
drop_in_skips(StoredGroup *group, void *arg)
{
	return stream_state_in_skips((List *) arg, (group->flags & STORED_WNULL) != 0, group->window);
}

/* The time ordinals a list of window ranges covers, for stream_state_touch. */
static void
touch_ranges(StreamFlow *flow, List *ranges, bool whole)
{
	ListCell   *lc;

	if (whole || flow->graph->window_key < 0)
	{
		stream_state_touch(flow, true, 0, 0);
		return;
	}
	foreach(lc, ranges)
	{
		WindowRange *r = lfirst(lc);

		stream_state_touch(flow, r->from_beginning || r->unbounded, r->start, r->end - 1);
	}
}

/*
 * Refills the windows in ranges (all when whole) from the source under the
 * transaction's snapshot, and marks the queued batches that snapshot sees
 * as already counted there.  mark_changed: the sink does not hold the
 * refilled values yet.
 */
static void
refill(StreamFlow *flow, FlowPlan *plan, List *ranges, bool whole, bool mark_changed)
{
	Snapshot	snapshot = GetTransactionSnapshot();
	FlowShared *sh = flow->sh;
	List	   *skips;
	List	   *state_ranges;
	bool		state_whole = whole;
	ListCell   *lc;
	MemoryContext old;

	/*
	 * In the round's memory (not SPI's, which is gone when the refresh
	 * ends): a batch this snapshot sees committed before the round, so this
	 * round applies it, and the skips go with the round.
	 */
	old = MemoryContextSwitchTo(flow->round_memory);
	skips = stream_state_skips_for(flow, ranges, whole);
	foreach(lc, flow->pending)
	{
		PendingBatch *pb = lfirst(lc);
		TransactionId xid = pb->batch->xid;

		if (!XidInMVCCSnapshot(xid, snapshot) && TransactionIdDidCommit(xid))
			pb->skips = list_concat(pb->skips, skips);
	}
	MemoryContextSwitchTo(old);

	if (!flow->graph->plan->is_aggregate)
	{
		/*
		 * Rows applied but not yet appended came from transactions this
		 * snapshot sees: the recompute of the whole sink has them.
		 */
		flow->append_rows = NULL;
		MemoryContextReset(flow->flush_memory);
		return;
	}
	if (sh->degraded)
		return;

	state_ranges = clip_to_floor(flow, ranges, &state_whole);
	if (!state_whole && state_ranges == NIL)
		return;
	touch_ranges(flow, state_ranges, state_whole);
	if (flow->store == NULL)
		stream_state_open_store(flow);
	else if (state_whole)
		store_clear(flow->store);
	else
		store_delete_where(flow->store, drop_in_skips, stream_state_skips_for(flow, state_ranges, false));

	load_source_rows(flow, plan, state_ranges, state_whole, mark_changed, false);
	if (flow->graph->nkeys == 0 && flow->store != NULL)
	{
		/* one group even over no rows */
		StoredGroup *group = store_lookup(flow->store, true);

		group->flags |= STORED_IN_SINK;
		if (mark_changed)
			store_mark_changed(flow->store, group);
	}
}

/*
 * The batching refresh recomputed these windows of the sink: refill them
 * (in its run, which is still open).
 */
static void
refill_recomputed(StreamFlow *flow, FlowPlan *plan, List *ranges, bool whole)
{
	/* late rows' windows below the cold floor: kept warm from now on */
	if (!whole)
		stream_evict_warm_up(flow, ranges);
	refill(flow, plan, ranges, whole, false);
}

/*
 * Has the flow's sink been written before (or filled by create_flow)?  A
 * flow without a backfill: by its current definition (the first load of a
 * new or replaced one writes only what changes from then on).
 */
static bool
sink_was_filled(StreamFlow *flow)
{
	return flow->entry->backfilled ||
		stats_ever_ran(flow->flow_id, flow->entry->computed_from);
}

/* First round of a flow, or after its state was lost: the state from the source. */
void
stream_refill_load(StreamFlow *flow)
{
	FlowShared *sh = flow->sh;
	List	   *ranges = NIL;
	bool		whole = true;
	bool		mark_all = sink_was_filled(flow);

	int64		floor_time;
	int64		floor_window;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	/* the windows still changing: up to state_keep behind the newest row */
	if (flow->may_go_cold && flow->graph->plan->is_aggregate &&
		refresh_source_newest(flow->entry, flow->graph->time_type, &sh->newest_time))
	{
		sh->has_newest = true;
		sh->has_cold = stream_evict_cold_floor(flow, sh->newest_time, &sh->cold_time);
		if (sh->has_cold)
			sh->cold_window = stream_state_window_of(flow, sh->cold_time);
	}
	if (stream_state_floor(flow, &floor_time, &floor_window))
	{
		WindowRange *r = palloc0(sizeof(WindowRange));

		r->start = floor_time;
		r->unbounded = true;
		ranges = list_make1(r);
		whole = false;
		/* a backfill: the windows before the floor in pieces, after this load */
		if (flow->backfilling)
			backfill_set_end(flow->flow_id, floor_time);
	}

	/*
	 * Every loaded group is written once: changes committed before we came
	 * (while no worker ran, or since create_flow's backfill) are in the
	 * source but maybe not in the sink.  Upserts of unchanged rows write
	 * nothing.  A flow created without backfill only gets the groups that
	 * change from now on.  Flows without aggregates have no groups to
	 * rewrite: their sink is recomputed, in this same snapshot.
	 */
	if (!flow->graph->plan->is_aggregate)
	{
		if (mark_all)
		{
			RunResult result = refresh_recompute_all(flow->entry);

			sh->unrecorded.rows_out += result.rows_out;
			refill(flow, flow->graph->plan, NIL, true, false);
		}
	}
	else
		refill(flow, flow->graph->plan, ranges, whole, mark_all);
	SPI_finish();
	sh->loaded = true;
	sh->refills++;
}

/*
 * The round's recompute stage: the batching refresh recomputes the flow's
 * dirty windows in the sink, and the state of those windows is refilled as
 * that recompute read them (its run still open: same owner, settings and
 * snapshot) before the run ends and deletes the log entries it consumed.
 * Until nothing is left when until_done (a flush_flow, a repair); else one
 * pass, and what is left waits for the next round.
 */
void
stream_refill_dirty(StreamFlow *flow, bool until_done)
{
	RunResult result;

	do
	{
		RefreshRecomputed recomputed;

		result = refresh_dirty(flow->entry, &recomputed);
		if (recomputed.open)
		{
			refill_recomputed(flow, recomputed.run.plan, recomputed.ranges,
							  recomputed.whole);
			refresh_done(&recomputed, &result);
		}
		flow->sh->unrecorded.rows_out += result.rows_out;
		flow->sh->unrecorded.rows_in += result.rows_in; /* rows that came by the dirty log */
	} while (result.more_pending && until_done);
	if (result.more_pending)
		(void) registry_note_dirty(flow->flow_id);
}

/* Time ranges (ordinals, inclusive) by start, for merging. */
typedef struct TimeSpan
{
	int64		lo;
	int64		hi;
} TimeSpan;

static int
compare_spans(const void *a, const void *b)
{
	int64		x = ((const TimeSpan *) a)->lo;
	int64		y = ((const TimeSpan *) b)->lo;

	return x < y ? -1 : x > y ? 1 : 0;
}

bool
stream_refill_groups(StreamFlow *flow)
{
	StreamGraph *graph = flow->graph;
	AggContext *cxt;
	List	   *stale = NIL;
	List	   *ranges = NIL;
	TimeSpan   *spans;
	int			nspans = 0;
	ListCell   *lc;

	if (flow->store == NULL || graph->window_key < 0)
		return false;
	foreach(lc, store_changed_list(flow->store))
	{
		StoredGroup *group = lfirst(lc);

		if (!(group->flags & STORED_STALE))
			continue;
		/* a group without a window, or of rows without times: no rows to read by time */
		if ((group->flags & STORED_WNULL) || group->time_lo > group->time_hi)
			return false;
		stale = lappend(stale, group);
	}
	/* past this, reading their windows' rows once (the dirty log) is cheaper */
	if (stale == NIL || list_length(stale) > REGROUP_MAX_GROUPS)
		return false;

	/* the rows of every group lie in the times its state has seen */
	spans = palloc(sizeof(TimeSpan) * list_length(stale));
	foreach(lc, stale)
	{
		StoredGroup *group = lfirst(lc);

		spans[nspans].lo = group->time_lo;
		spans[nspans++].hi = group->time_hi;
	}
	qsort(spans, nspans, sizeof(TimeSpan), compare_spans);
	for (int i = 0; i < nspans; i++)
	{
		WindowRange *r;

		if (ranges != NIL && spans[i].lo <= ((WindowRange *) llast(ranges))->end)
		{
			r = llast(ranges);
			r->end = Max(r->end, spans[i].hi + 1);
			continue;
		}
		r = palloc0(sizeof(WindowRange));
		r->start = spans[i].lo;
		r->end = spans[i].hi + 1;
		ranges = lappend(ranges, r);
	}

	/* back to their initial states, then the rows of their times into them */
	cxt = store_agg_context(flow->store);
	foreach(lc, stale)
	{
		StoredGroup *group = lfirst(lc);

		stream_state_touch(flow, false, group->time_lo, group->time_hi);
		store_reset_local(flow->store);
		agg_init_trans(cxt, graph->aggs, graph->naggs, flow->trans);
		store_save_trans(flow->store, group, flow->trans);
		group->flags &= ~STORED_STALE;
		group->flags |= STORED_REGROUP;
	}
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	load_source_rows(flow, graph->plan, ranges, false, false, true);
	SPI_finish();
	return true;
}
