/*-------------------------------------------------------------------------
 *
 * stream_state.c
 *	  Where streaming state is merged and the streaming sink is written.
 *
 * The worker keeps, per streaming flow, a hash table of groups with their
 * aggregate transition values.  Each round it takes the batches writers
 * queued, applies those whose transaction committed (combine functions),
 * drops those that aborted and keeps the rest for later; every
 * flowpg.flush_interval it finalizes the changed groups, evaluates HAVING
 * and upserts them into the sink in one statement.
 *
 * The state is the worker's own memory, bounded by flowpg.state_memory:
 * only the worker reads or writes it, so it needs no locks, and it is
 * rebuilt from the source whenever the worker starts -- a crash loses
 * nothing because the sink and the source are durable and the state is
 * derived from the source.  A refill reads the source under the round's
 * snapshot (a REPEATABLE READ transaction); batches whose transaction that
 * snapshot already sees are skipped for the refilled windows, later ones
 * applied, so nothing counts twice and nothing is lost.
 *
 * Whatever streaming cannot do exactly goes through the dirty log, which
 * the batching refresh recomputes in the same snapshot before the state of
 * those windows is refilled: updates and deletes on the source, TRUNCATE,
 * a full queue, and windows the state had to give up when memory ran short
 * (the oldest half of the windows, below a watermark) -- changes to those
 * are logged as dirty instead of applied.  Windows older than expire_after
 * are evicted and changes to them ignored.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/transam.h"
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "pgstat.h"
#include "storage/procarray.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/ruleutils.h"
#include "utils/snapmgr.h"
#include "utils/timeout.h"
#include "utils/timestamp.h"

#include "batch.h"
#include "dirty_log.h"
#include "catalog.h"
#include "flowpg.h"
#include "operator.h"
#include "queue.h"
#include "settings.h"
#include "sink.h"
#include "stats.h"
#include "stream_state.h"

#define SOURCE_FETCH_ROWS 10000
#define STATS_RECORD_USECS (1000 * 1000)
#define MAX_RETRY_USECS (60 * USECS_PER_SEC)
#define BUSY_RETRY_USECS (1000 * 1000)	/* after a lock timeout (and a reset) */
#define BUSY_SKIP_USECS (20 * 1000)		/* after a lock found taken */

/* Windows (as window-value ordinals) a refill already read from the source. */
typedef struct SkipRange
{
	bool		all;
	bool		has_lo;
	int64		lo;
	bool		has_hi;
	int64		hi;
} SkipRange;

typedef struct PendingBatch
{
	QueuedBatch *batch;
	List	   *skips;			/* SkipRange */
} PendingBatch;

typedef struct StreamFlow
{
	int64		flow_id;
	uint32		version;
	MemoryContext memory;		/* everything of the flow */
	MemoryContext batch_memory; /* one group of one batch */
	MemoryContext flush_memory; /* sink rows being written */
	FlowEntry  *entry;
	StreamGraph *graph;
	WindowProbe *probe;
	GroupTable *state;			/* NULL until loaded, or given up */
	bool		loaded;
	bool		degraded;		/* no window to evict by: state given up */
	List	   *pending;		/* PendingBatch, oldest first */
	List	   *changed;		/* FlowGroup not yet in the sink */
	SinkRows   *append_rows;	/* flows without aggregates */

	/* windows below these are not in the state */
	bool		has_watermark;	/* given up for memory */
	int64		watermark_time;
	int64		watermark_window;
	bool		has_expiry;		/* expire_after */
	int64		expiry_time;
	int64		expiry_window;
	bool		evict_requested;

	/* changes the worker itself logged as dirty this round */
	bool		fallback_logged;
	bool		fallback_whole;
	int64		fallback_lo;
	int64		fallback_hi;

	TimestampTz oldest_unflushed;
	TimestampTz last_flush;
	TimestampTz next_dirty_check;
	TimestampTz retry_at;		/* after a failure */
	TimestampTz busy_until;		/* after a lock a user's transaction held */
	int			failures;

	/* flow_stats */
	StreamStats stats;
	BatchResult unrecorded;
	TimestampTz unrecorded_since;
} StreamFlow;

static List *stream_flows = NIL;
static MemoryContext stream_memory = NULL;

static StreamFlow *
find_flow(int64 flow_id)
{
	ListCell   *lc;

	foreach(lc, stream_flows)
		if (((StreamFlow *) lfirst(lc))->flow_id == flow_id)
			return lfirst(lc);
	return NULL;
}

static void
forget_flow(StreamFlow *flow)
{
	queue_forget(flow->flow_id);
	stream_flows = list_delete_ptr(stream_flows, flow);
	MemoryContextDelete(flow->memory);
}

static StreamFlow *
new_flow(FlowEntry *entry)
{
	MemoryContext memory = AllocSetContextCreate(stream_memory, "flowpg streaming flow",
												 ALLOCSET_DEFAULT_SIZES);
	MemoryContext old = MemoryContextSwitchTo(memory);
	StreamFlow *flow = palloc0(sizeof(StreamFlow));

	flow->flow_id = entry->flow_id;
	flow->version = graph_version(entry);
	flow->memory = memory;
	flow->batch_memory = AllocSetContextCreate(memory, "flowpg batch", ALLOCSET_DEFAULT_SIZES);
	flow->flush_memory = AllocSetContextCreate(memory, "flowpg flush", ALLOCSET_DEFAULT_SIZES);
	flow->stats.freshness_us = -1;
	flow->stats.status = STREAM_STATUS_RECOVERING;
	MemoryContextSwitchTo(stream_memory);
	stream_flows = lappend(stream_flows, flow);
	MemoryContextSwitchTo(old);
	return flow;
}

/* Forgets the flow's state: the next round reloads it from the source. */
static void
reset_flow(StreamFlow *flow)
{
	if (flow->state)
		group_table_free(flow->state);
	flow->state = NULL;
	list_free(flow->changed);
	flow->changed = NIL;
	flow->append_rows = NULL;
	MemoryContextReset(flow->flush_memory);
	flow->loaded = false;
	flow->degraded = false;
	flow->has_watermark = false;
	flow->has_expiry = false;	/* expire_after may have changed */
	flow->stats.status = STREAM_STATUS_RECOVERING;
	if (flow->graph)
		graph_free(flow->graph);
	flow->graph = NULL;
	flow->probe = NULL;
}

/*
 * Follows the catalog: new streaming flows are adopted, changed ones start
 * over (their queued batches stay: the refill sorts them out), dropped ones
 * are forgotten with their queues.  Runs in a transaction.
 */
static void
sync_flows(void)
{
	List	   *slots = queue_flows();	/* before the catalog: see below */
	List	   *entries = catalog_get_all();
	List	   *seen = NIL;
	ListCell   *lc;

	if (stream_memory == NULL)
		stream_memory = AllocSetContextCreate(TopMemoryContext, "flowpg streaming",
											  ALLOCSET_DEFAULT_SIZES);
	foreach(lc, entries)
	{
		FlowEntry  *entry = lfirst(lc);
		StreamFlow *flow;

		/* a restored flow is the batching side's until its tables are in */
		if (strcmp(entry->mode, "streaming") != 0 || strcmp(entry->state, "restoring") == 0)
			continue;
		flow = find_flow(entry->flow_id);
		if (flow && flow->version != graph_version(entry))
		{
			/* start over; its batches stay: a refill sorts them out */
			reset_flow(flow);
			flow->version = graph_version(entry);
		}
		if (flow == NULL)
			flow = new_flow(entry);
		seen = lappend(seen, flow);
	}
	foreach(lc, list_copy(stream_flows))
	{
		StreamFlow *flow = lfirst(lc);

		if (!list_member_ptr(seen, flow))
			forget_flow(flow);
	}

	/*
	 * Queues of flows that are gone.  A writer takes a slot only for a flow
	 * it saw committed, so a slot listed before the catalog was read belongs
	 * to a flow the catalog shows, unless that flow was dropped.
	 */
	foreach(lc, slots)
	{
		int64		flow_id = *(int64 *) lfirst(lc);

		if (find_flow(flow_id) == NULL)
			queue_forget(flow_id);
	}
}

/* Window-value ordinal of the window starting at a time ordinal. */
static int64
window_of_time(StreamFlow *flow, int64 time)
{
	Oid			type = TupleDescAttr(flow->graph->key_desc, flow->graph->window_key)->atttypid;

	return window_datum_to_ordinal(type, window_probe_eval(flow->probe, time));
}

static void
mark_changed(StreamFlow *flow, FlowGroup *group)
{
	if (!group->changed)
	{
		MemoryContext old = MemoryContextSwitchTo(flow->memory);

		group->changed = true;
		flow->changed = lappend(flow->changed, group);
		MemoryContextSwitchTo(old);
	}
}

static bool
in_skip_ranges(List *skips, bool window_null, int64 w)
{
	ListCell   *lc;

	foreach(lc, skips)
	{
		SkipRange  *r = lfirst(lc);

		if (r->all)
			return true;
		if (window_null)
			continue;
		if ((!r->has_lo || w >= r->lo) && (!r->has_hi || w < r->hi))
			return true;
	}
	return false;
}

/* Converts recomputed time ranges to window ranges (NIL ranges: all). */
static List *
skip_ranges_for(StreamFlow *flow, List *ranges, bool whole)
{
	List	   *skips = NIL;
	ListCell   *lc;

	if (whole || flow->graph->window_key < 0)
	{
		SkipRange  *r = palloc0(sizeof(SkipRange));

		r->all = true;
		return list_make1(r);
	}
	foreach(lc, ranges)
	{
		WindowRange *wr = lfirst(lc);
		SkipRange  *r = palloc0(sizeof(SkipRange));

		r->has_lo = !wr->from_beginning;
		if (r->has_lo)
			r->lo = window_of_time(flow, wr->start);
		r->has_hi = !wr->unbounded;
		if (r->has_hi)
			r->hi = window_of_time(flow, wr->end);
		skips = lappend(skips, r);
	}
	return skips;
}

/* The lowest time the state holds windows from (-1 when all). */
static bool
state_floor(StreamFlow *flow, int64 *time, int64 *window)
{
	bool		has = false;

	if (flow->has_expiry)
	{
		*time = flow->expiry_time;
		*window = flow->expiry_window;
		has = true;
	}
	if (flow->has_watermark && (!has || flow->watermark_time > *time))
	{
		*time = flow->watermark_time;
		*window = flow->watermark_window;
		has = true;
	}
	return has;
}

typedef bool (*GroupFilter) (StreamFlow *flow, FlowGroup *group, void *arg);

/* Rebuilds the state keeping the groups keep() accepts. */
static void
rebuild_state(StreamFlow *flow, GroupFilter keep, void *arg)
{
	StreamGraph *graph = flow->graph;
	GroupTable *old = flow->state;
	GroupTable *table = group_table_create(graph, flow->memory);
	GroupIterator iter = {0};
	FlowGroup *group;
	List	   *changed = NIL;

	while ((group = group_table_next(old, &iter)) != NULL)
	{
		FlowGroup *copy;

		if (!keep(flow, group, arg))
			continue;
		if (graph->nkeys > 0)
			ExecStoreMinimalTuple(group->key, graph->key_slot, false);
		copy = group_lookup(graph, table, true);
		copy->time_lo = group->time_lo;
		copy->time_hi = group->time_hi;
		copy->in_sink = group->in_sink;
		copy->changed = group->changed;
		for (int i = 0; i < graph->naggs; i++)
		{
			AggTrans	from = group_get_trans(group, graph->naggs, i);
			AggTrans	to;

			agg_copy(old->aggcxt, table->aggcxt, &graph->aggs[i], &from, &to);
			group_put_trans(copy, graph->naggs, i, &to);
		}
		if (copy->changed)
		{
			MemoryContext mc = MemoryContextSwitchTo(flow->memory);

			changed = lappend(changed, copy);
			MemoryContextSwitchTo(mc);
		}
		ResetExprContext(graph->econtext);
	}
	group_table_free(old);
	list_free(flow->changed);
	flow->changed = changed;
	flow->state = table;
}

static bool
keep_outside_skips(StreamFlow *flow, FlowGroup *group, void *arg)
{
	bool		isnull = true;
	int64		w = 0;

	if (flow->graph->window_key >= 0)
		w = group_window_ordinal(flow->graph, group, &isnull);
	return !in_skip_ranges((List *) arg, isnull, w);
}

static bool
keep_from_floor(StreamFlow *flow, FlowGroup *group, void *arg)
{
	int64		floor_window = *(int64 *) arg;
	bool		isnull;
	int64		w = group_window_ordinal(flow->graph, group, &isnull);

	/* a partial state holds no NULL window (the loads cannot read one) */
	return !isnull && w >= floor_window;
}

/* Clips time ranges to the state's floor; NIL when nothing is left. */
static List *
clip_to_floor(StreamFlow *flow, List *ranges, bool *whole)
{
	int64		floor_time;
	int64		floor_window;
	List	   *kept = NIL;
	ListCell   *lc;

	if (!state_floor(flow, &floor_time, &floor_window))
		return ranges;
	if (*whole)
	{
		WindowRange *r = palloc0(sizeof(WindowRange));

		r->start = floor_time;
		r->unbounded = true;
		*whole = false;
		return list_make1(r);
	}
	foreach(lc, ranges)
	{
		WindowRange *r = palloc(sizeof(WindowRange));

		*r = *(WindowRange *) lfirst(lc);
		if (!r->unbounded && r->end <= floor_time)
			continue;
		if (r->from_beginning || r->start < floor_time)
			r->start = floor_time;
		r->from_beginning = false;
		kept = lappend(kept, r);
	}
	return kept;
}

/*
 * Reads the source rows of the windows in ranges (all when whole) under the
 * transaction's snapshot into fresh groups.  The caller is connected to SPI
 * and runs as the owner under the flow's settings.
 */
static void
load_source_rows(StreamFlow *flow, FlowPlan *plan, List *ranges, bool whole)
{
	StreamGraph *graph = flow->graph;
	Query	   *query = copyObject(plan->query);
	RangeTblEntry *rte = linitial_node(RangeTblEntry, query->rtable);
	List	   *tlist = NIL;
	SPIPlanPtr	spiplan;
	Portal		portal;

	for (int c = 0; c < graph->ncols; c++)
	{
		Form_pg_attribute attr = TupleDescAttr(graph->row_desc, c);
		Var		   *var = makeVar(1, get_attnum(rte->relid, graph->col_names[c]),
								  attr->atttypid, attr->atttypmod, attr->attcollation, 0);

		tlist = lappend(tlist, makeTargetEntry((Expr *) var, c + 1,
											   pstrdup(graph->col_names[c]), false));
	}
	if (tlist == NIL)
		tlist = list_make1(makeTargetEntry((Expr *) makeBoolConst(true, false), 1,
										   pstrdup("row"), false));
	query->targetList = tlist;
	query->groupClause = NIL;
	query->havingQual = NULL;
	query->hasAggs = false;
	if (!whole)
		batch_restrict_query(plan, query, ranges);

	spiplan = SPI_prepare(pg_get_querydef(query, false), 0, NULL);
	if (spiplan == NULL)
		elog(ERROR, "flowpg could not plan the source scan: %s",
			 SPI_result_code_string(SPI_result));
	portal = SPI_cursor_open(NULL, spiplan, NULL, NULL, true);
	for (;;)
	{
		SPI_cursor_fetch(portal, true, SOURCE_FETCH_ROWS);
		if (SPI_processed == 0)
			break;
		for (uint64 i = 0; i < SPI_processed; i++)
		{
			TupleTableSlot *row = graph->row_slot;

			ExecClearTuple(row);
			if (graph->ncols > 0)
				heap_deform_tuple(SPI_tuptable->vals[i], SPI_tuptable->tupdesc,
								  row->tts_values, row->tts_isnull);
			ExecStoreVirtualTuple(row);
			(void) graph_accumulate_row(graph, flow->state);
			CHECK_FOR_INTERRUPTS();
		}
		SPI_freetuptable(SPI_tuptable);
	}
	SPI_cursor_close(portal);
	SPI_freeplan(spiplan);
}

/*
 * Refills the windows in ranges (all when whole) from the source under the
 * transaction's snapshot, and marks the queued batches that snapshot sees
 * as already counted there.  mark_changed: the sink does not hold the
 * refilled values yet.
 */
static void
refill(StreamFlow *flow, FlowPlan *plan, List *ranges, bool whole, bool mark_all_changed)
{
	Snapshot	snapshot = GetTransactionSnapshot();
	List	   *skips;
	List	   *state_ranges;
	bool		state_whole = whole;
	ListCell   *lc;
	MemoryContext old;

	/*
	 * In the round's memory (not SPI's, which is gone when the refresh
	 * ends): a batch this snapshot sees committed before the round, so this
	 * round applies it, and the round forgets the skips when it ends.
	 */
	old = MemoryContextSwitchTo(TopTransactionContext);
	skips = skip_ranges_for(flow, ranges, whole);
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
	if (flow->degraded)
		return;

	state_ranges = clip_to_floor(flow, ranges, &state_whole);
	if (!state_whole && state_ranges == NIL)
		return;
	if (flow->state == NULL)
		flow->state = group_table_create(flow->graph, flow->memory);
	else if (state_whole)
	{
		group_table_free(flow->state);
		list_free(flow->changed);
		flow->changed = NIL;
		flow->state = group_table_create(flow->graph, flow->memory);
	}
	else
		rebuild_state(flow, keep_outside_skips, skip_ranges_for(flow, state_ranges, false));

	load_source_rows(flow, plan, state_ranges, state_whole);
	if (flow->graph->nkeys == 0)
		(void) group_lookup(flow->graph, flow->state, true);	/* even over no rows */

	/* the loaded groups: in the sink (recomputed there, or to be written) */
	{
		List	   *loaded = skip_ranges_for(flow, state_ranges, state_whole);
		GroupIterator iter = {0};
		FlowGroup *group;

		while ((group = group_table_next(flow->state, &iter)) != NULL)
		{
			bool		isnull = true;
			int64		w = 0;

			if (flow->graph->window_key >= 0)
				w = group_window_ordinal(flow->graph, group, &isnull);
			if (!in_skip_ranges(loaded, isnull, w))
				continue;
			group->in_sink = true;
			if (mark_all_changed)
				mark_changed(flow, group);
		}
	}
}

/* The batching refresh recomputed these windows of the sink: refill them. */
static void
after_recompute(void *arg, FlowPlan *plan, WindowProbe *probe, List *ranges, bool whole)
{
	refill((StreamFlow *) arg, plan, ranges, whole, false);
}

/* Has the flow's sink been written before (or filled by create_flow)? */
static bool
sink_was_filled(StreamFlow *flow)
{
	Oid			argtypes[1] = {INT8OID};
	Datum		args[1] = {Int64GetDatum(flow->flow_id)};
	bool		filled;

	if (strstr(flow->entry->options, "\"backfill\": true") != NULL)
		return true;
	catalog_query_privileged("SELECT 1 FROM flowpg.flow_run WHERE flow_id = $1 "
							 "AND last_run_at IS NOT NULL", 1, argtypes, args, NULL);
	filled = SPI_processed > 0;
	catalog_query_privileged_end();
	return filled;
}

/* First round of a flow: its state from the source. */
static void
load_flow(StreamFlow *flow)
{
	List	   *ranges = NIL;
	bool		whole = true;

	bool		mark_all = sink_was_filled(flow);

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (flow->has_expiry)
	{
		WindowRange *r = palloc0(sizeof(WindowRange));

		r->start = flow->expiry_time;
		r->unbounded = true;
		ranges = list_make1(r);
		whole = false;
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
			BatchResult result = batch_recompute_all(flow->entry);

			flow->unrecorded.rows_out += result.rows_out;
			refill(flow, flow->graph->plan, NIL, true, false);
		}
	}
	else
		refill(flow, flow->graph->plan, ranges, whole, mark_all);
	SPI_finish();
	flow->loaded = true;
}

/* Notes that a change could not be applied: its windows go to the dirty log. */
static void
fall_back(StreamFlow *flow, bool whole, int64 lo, int64 hi)
{
	if (whole || lo > hi)
		flow->fallback_whole = true;
	else
	{
		flow->fallback_lo = Min(flow->fallback_lo, lo);
		flow->fallback_hi = Max(flow->fallback_hi, hi);
	}
}

static void
apply_aggregate_batch(StreamFlow *flow, PendingBatch *pb)
{
	StreamGraph *graph = flow->graph;
	char	   *cursor = pb->batch->data;
	MemoryContext old = MemoryContextSwitchTo(flow->batch_memory);

	for (int g = 0; g < pb->batch->count; g++)
	{
		TupleTableSlot *keys = graph->key_slot;
		int64		time_lo;
		int64		time_hi;
		bool		wnull = true;
		int64		w = 0;
		FlowGroup *group;

		MemoryContextReset(flow->batch_memory);
		ResetExprContext(graph->econtext);
		ExecClearTuple(keys);
		for (int k = 0; k < graph->nkeys; k++)
			keys->tts_values[k] = datum_read(&cursor, &keys->tts_isnull[k]);
		ExecStoreVirtualTuple(keys);
		memcpy(&time_lo, cursor, sizeof(int64));
		cursor += sizeof(int64);
		memcpy(&time_hi, cursor, sizeof(int64));
		cursor += sizeof(int64);
		if (graph->window_key >= 0 && !keys->tts_isnull[graph->window_key])
		{
			wnull = false;
			w = window_datum_to_ordinal(TupleDescAttr(graph->key_desc, graph->window_key)->atttypid,
										keys->tts_values[graph->window_key]);
		}

		/*
		 * With expire_after a NULL window is never maintained (as in the
		 * batching engine); below a memory watermark the state has no
		 * NULL-window group either, so those changes are recomputed.
		 */
		if (in_skip_ranges(pb->skips, wnull, w) ||
			(flow->has_expiry && (wnull || w < flow->expiry_window)) ||
			flow->state == NULL ||
			(flow->has_watermark && (wnull || w < flow->watermark_window)))
		{
			bool		counted = in_skip_ranges(pb->skips, wnull, w);
			bool		expired = flow->has_expiry && (wnull || w < flow->expiry_window);

			for (int i = 0; i < graph->naggs; i++)
			{
				bool		isnull;

				(void) datum_read(&cursor, &isnull);
			}
			if (counted)
			{
				/* already in the state: make sure the sink gets it */
				group = flow->state ? group_lookup(graph, flow->state, false) : NULL;
				if (group)
					mark_changed(flow, group);
			}
			else if (!expired)
				fall_back(flow, flow->state == NULL || wnull, time_lo, time_hi);
			continue;
		}

		group = group_lookup(graph, flow->state, true);
		group->time_lo = Min(group->time_lo, time_lo);
		group->time_hi = Max(group->time_hi, time_hi);
		for (int i = 0; i < graph->naggs; i++)
		{
			bool		isnull;
			Datum		value = agg_deserialize(flow->state->aggcxt, &graph->aggs[i],
												&cursor, &isnull);
			AggTrans	trans = group_get_trans(group, graph->naggs, i);

			agg_combine(flow->state->aggcxt, &graph->aggs[i], &trans, value, isnull, true);
			group_put_trans(group, graph->naggs, i, &trans);
		}
		mark_changed(flow, group);
	}
	MemoryContextSwitchTo(old);
}

static void
apply_row_batch(StreamFlow *flow, PendingBatch *pb)
{
	StreamGraph *graph = flow->graph;
	char	   *cursor = pb->batch->data;
	Datum	   *values = palloc(sizeof(Datum) * graph->noutputs);
	bool	   *nulls = palloc(sizeof(bool) * graph->noutputs);
	MemoryContext old;

	if (in_skip_ranges(pb->skips, true, 0))
		return;
	old = MemoryContextSwitchTo(flow->flush_memory);
	if (flow->append_rows == NULL)
		flow->append_rows = sink_rows_create(graph->noutputs);
	for (int r = 0; r < pb->batch->count; r++)
	{
		for (int o = 0; o < graph->noutputs; o++)
			values[o] = datum_read(&cursor, &nulls[o]);
		sink_rows_add(flow->append_rows, graph->plan, values, nulls);
	}
	MemoryContextSwitchTo(old);
}

static void
free_batch(PendingBatch *pb)
{
	pfree(pb->batch->data);
	pfree(pb->batch);
	pfree(pb);
}

/* Applies committed batches, drops aborted ones, keeps the others. */
static void
apply_pending(StreamFlow *flow)
{
	List	   *still = NIL;
	List	   *done = NIL;
	ListCell   *lc;
	MemoryContext old;

	flow->fallback_whole = false;
	flow->fallback_lo = PG_INT64_MAX;
	flow->fallback_hi = PG_INT64_MIN;
	foreach(lc, flow->pending)
	{
		PendingBatch *pb = lfirst(lc);
		TransactionId xid = pb->batch->xid;

		if (TransactionIdIsInProgress(xid))
		{
			old = MemoryContextSwitchTo(flow->memory);
			still = lappend(still, pb);
			MemoryContextSwitchTo(old);
			continue;
		}
		/* freed once the list no longer holds it: an error may come first */
		done = lappend(done, pb);
		if (!TransactionIdDidCommit(xid))
		{
			flow->stats.batches_dropped++;
			continue;
		}
		if (pb->batch->version != flow->version)
		{
			/* computed by an older definition and not refilled: recompute */
			if (!in_skip_ranges(pb->skips, true, 0))
				flow->fallback_whole = true;
		}
		else if (flow->graph->plan->is_aggregate)
			apply_aggregate_batch(flow, pb);
		else
			apply_row_batch(flow, pb);
		flow->stats.batches_applied++;
		flow->unrecorded.log_entries++;
		flow->unrecorded.rows_in += pb->batch->nrows;
		if (flow->oldest_unflushed == 0 || pb->batch->queued_at < flow->oldest_unflushed)
			flow->oldest_unflushed = pb->batch->queued_at;
	}
	list_free(flow->pending);
	flow->pending = still;
	foreach(lc, done)
		free_batch(lfirst(lc));
	list_free(done);

	if (flow->fallback_whole)
		dirty_log_append(flow->flow_id, true, 0, 0, 0);
	else if (flow->fallback_lo <= flow->fallback_hi)
		dirty_log_append(flow->flow_id, false, flow->fallback_lo, flow->fallback_hi, 0);
	if (flow->fallback_whole || flow->fallback_lo <= flow->fallback_hi)
	{
		queue_count_fallback(flow->flow_id, 1);
		flow->fallback_logged = true;
	}
}

/* Writes the changed groups (or new rows) to the sink; connected to SPI. */
static void
write_sink(StreamFlow *flow)
{
	StreamGraph *graph = flow->graph;
	FlowPlan   *plan = graph->plan;
	Oid			sink = flow->entry->sink_relid;
	MemoryContext old = MemoryContextSwitchTo(flow->flush_memory);
	SinkWriteContext write_context;

	sink_write_context_push(&write_context, sink, plan, flow->entry->flow_name);

	if (plan->is_aggregate)
	{
		SinkRows   *upserts = sink_rows_create(graph->noutputs);
		SinkRows   *inserts = sink_rows_create(graph->noutputs);
		SinkRows   *deletes = sink_rows_create(graph->noutputs);
		Datum	   *values = palloc(sizeof(Datum) * Max(graph->noutputs, 1));
		bool	   *nulls = palloc(sizeof(bool) * Max(graph->noutputs, 1));
		ListCell   *lc;

		foreach(lc, flow->changed)
		{
			FlowGroup *group = lfirst(lc);
			bool		keep;

			ResetExprContext(graph->econtext);
			keep = graph_group_output(graph, flow->state, group, values, nulls);
			if (keep)
				sink_rows_add(group->in_sink ? upserts : inserts, plan, values, nulls);
			else if (group->in_sink)
				sink_rows_add(deletes, plan, values, nulls);
			group->in_sink = keep;
			group->changed = false;
		}
		/*
		 * A group the sink does not hold is inserted plainly (cheaper than
		 * an upsert).  Should the sink hold it after all -- refresh_flow or
		 * a flush without the worker rewrote it meanwhile -- the unique
		 * index refuses the row and the round fails: the flow is then
		 * reloaded from the source, which puts it right.
		 */
		sink_upsert(sink, plan, upserts);
		if (plan->window_expr || graph->nkeys > 0)
			sink_append(sink, plan, inserts);
		else
			sink_upsert(sink, plan, inserts);
		sink_delete_groups(sink, plan, deletes);
		flow->unrecorded.rows_out += upserts->nrows + inserts->nrows + deletes->nrows;
		list_free(flow->changed);
		flow->changed = NIL;
	}
	else if (flow->append_rows)
	{
		sink_append(sink, plan, flow->append_rows);
		flow->unrecorded.rows_out += flow->append_rows->nrows;
		flow->append_rows = NULL;
	}
	sink_write_context_pop(&write_context);
	MemoryContextSwitchTo(old);
	MemoryContextReset(flow->flush_memory);
}

static bool
has_changes(StreamFlow *flow)
{
	return flow->changed != NIL || flow->append_rows != NULL;
}

static int
compare_int64(const void *a, const void *b)
{
	int64		x = *(const int64 *) a;
	int64		y = *(const int64 *) b;

	return x < y ? -1 : x > y ? 1 : 0;
}

/* Gives up the older half of the windows (or all state without a window). */
static void
evict_for_memory(StreamFlow *flow)
{
	StreamGraph *graph = flow->graph;
	int64	   *windows;
	int64	   *times;
	int			n = 0;
	GroupIterator iter = {0};
	FlowGroup *group;
	int64		start;
	int64		end;
	bool		unbounded;
	int			median;

	if (flow->state == NULL)
		return;
	if (graph->window_key < 0 || flow->probe == NULL)
	{
		group_table_free(flow->state);
		flow->state = NULL;
		flow->degraded = true;
		return;
	}
	windows = palloc(sizeof(int64) * Max(flow->state->ngroups, 1));
	times = palloc(sizeof(int64) * Max(flow->state->ngroups, 1));
	while ((group = group_table_next(flow->state, &iter)) != NULL)
	{
		bool		isnull;
		int64		w = group_window_ordinal(graph, group, &isnull);

		if (isnull || group->time_lo > group->time_hi)
			continue;
		windows[n] = w;
		times[n] = group->time_lo;
		n++;
	}
	if (n == 0)
		return;
	/* the median window by a selection over the ordinals */
	median = 0;
	{
		int64	   *sorted = palloc(sizeof(int64) * n);
		int64		target;

		memcpy(sorted, windows, sizeof(int64) * n);
		qsort(sorted, n, sizeof(int64), compare_int64);
		target = sorted[n / 2];
		for (int i = 0; i < n; i++)
			if (windows[i] == target)
				median = i;
	}
	window_bounds(flow->probe, times[median], &start, &end, &unbounded);
	if (unbounded)
	{
		group_table_free(flow->state);
		flow->state = NULL;
		flow->degraded = true;
		return;
	}
	if (!flow->has_watermark || end > flow->watermark_time)
	{
		flow->has_watermark = true;
		flow->watermark_time = end;
		flow->watermark_window = window_of_time(flow, end);
	}
	rebuild_state(flow, keep_from_floor, &flow->watermark_window);
}

/* Moves the expiry cutoff; evicts the windows that fell behind it. */
static void
expire_windows(StreamFlow *flow)
{
	int64		cutoff;

	if (flow->entry->expire_after == NULL || flow->probe == NULL)
		return;
	cutoff = window_expiry_cutoff(flow->probe, flow->entry->expire_after);
	if (flow->has_expiry && cutoff <= flow->expiry_time)
		return;
	flow->has_expiry = true;
	flow->expiry_time = cutoff;
	flow->expiry_window = window_of_time(flow, cutoff);
	if (flow->state && flow->loaded)
		rebuild_state(flow, keep_from_floor, &flow->expiry_window);
}

static int64
state_bytes(StreamFlow *flow)
{
	return flow->state ? (int64) MemoryContextMemAllocated(flow->state->memory, true) : 0;
}

/*
 * One round of one flow, in the current transaction (REPEATABLE READ: the
 * refills and the recompute share its snapshot).  Returns the flush
 * request it completed, 0 when none.
 */
/* Skip ranges live in a round's memory: forget them when it ends. */
static void
clear_skips(StreamFlow *flow)
{
	ListCell   *lc;

	foreach(lc, flow->pending)
		((PendingBatch *) lfirst(lc))->skips = NIL;
}

static void
take_batches(StreamFlow *flow)
{
	MemoryContext old = MemoryContextSwitchTo(flow->memory);
	List	   *taken = queue_take(flow->flow_id);
	ListCell   *lc;

	foreach(lc, taken)
	{
		PendingBatch *pb = palloc0(sizeof(PendingBatch));

		pb->batch = lfirst(lc);
		flow->pending = lappend(flow->pending, pb);
	}
	list_free(taken);
	MemoryContextSwitchTo(old);
}

/*
 * A round of a flow has two transactions.  The first (apply_only) applies
 * the batches committed by now; what it cannot apply goes to the dirty log.
 * The second, REPEATABLE READ, takes its snapshot after that, so the
 * refills and recomputes it runs see every change applied or logged so far
 * (a flush_flow gets all of them in the sink), then applies what committed
 * meanwhile and writes the sink.
 */
static int64
flow_round(StreamFlow *flow, TimestampTz now, int64 flush_request, bool apply_only)
{
	int64		rows_before = flow->unrecorded.rows_out;
	FlowEntry  *entry;
	bool		dirty;
	FlowIdentity identity;

	/*
	 * No refresh, inline flush, replacement or drop of this flow meanwhile;
	 * when one is in progress, the next round tries again (the worker never
	 * waits for a user's transaction).
	 */
	if (!batch_try_lock_flow(flow->flow_id))
	{
		flow->busy_until = now + BUSY_SKIP_USECS;
		return 0;
	}
	entry = catalog_get_by_id(flow->flow_id);
	if (entry == NULL || graph_version(entry) != flow->version)
		return 0;				/* gone or changed: the next sync sees it */
	if (!batch_try_lock_tables(entry))
	{
		flow->busy_until = now + BUSY_SKIP_USECS;	/* a user's transaction holds them */
		return 0;
	}

	/*
	 * refresh_flow or an inline flush rewrote the sink: reload.  Asked for
	 * while that holds the flow's lock, so seen here once it committed.
	 */
	if (queue_take_reset(flow->flow_id) && flow->loaded)
		reset_flow(flow);

	flow_enter(&identity, entry->owner, entry->settings, false);

	if (flow->graph == NULL)
	{
		MemoryContext old = MemoryContextSwitchTo(flow->memory);

		flow->entry = catalog_get_by_id(flow->flow_id);
		flow->graph = graph_build(flow->entry, flow->memory);
		if (flow->graph->plan->window_expr && flow->graph->window_key >= 0)
			flow->probe = flow_plan_window_probe(flow->graph->plan);
		MemoryContextSwitchTo(old);
	}

	if (apply_only)
	{
		PushActiveSnapshot(GetTransactionSnapshot());
		take_batches(flow);
		if (flow->loaded)
			apply_pending(flow);
		PopActiveSnapshot();
		flow_leave(&identity);
		return 0;
	}

	/* the snapshot first: every batch it sees is in the queue by now */
	PushActiveSnapshot(GetTransactionSnapshot());
	take_batches(flow);

	expire_windows(flow);
	if (!flow->loaded)
	{
		load_flow(flow);
		flow->stats.status = STREAM_STATUS_ACTIVE;
	}

	dirty = queue_take_dirty(flow->flow_id) || flush_request != 0 ||
		now >= flow->next_dirty_check || flow->fallback_logged;
	flow->fallback_logged = false;
	if (dirty)
	{
		BatchResult result;

		do
		{
			result = batch_refresh_dirty(flow->entry, after_recompute, flow);
			flow->unrecorded.rows_out += result.rows_out;
		} while (result.more_pending && flush_request != 0);
		if (result.more_pending)
			queue_note_dirty(flow->flow_id);
		flow->next_dirty_check = now + (int64) flowpg_min_refresh_interval_ms * 1000;
	}

	apply_pending(flow);
	if (has_changes(flow) &&
		(flush_request != 0 || flow->evict_requested ||
		 now - flow->last_flush >= (int64) flowpg_flush_interval_ms * 1000))
	{
		if (SPI_connect() != SPI_OK_CONNECT)
			elog(ERROR, "SPI_connect failed");
		write_sink(flow);
		if (flow->evict_requested)
		{
			evict_for_memory(flow);
			flow->evict_requested = false;
		}
		SPI_finish();
		flow->last_flush = now;
	}
	else if (flow->evict_requested)
	{
		evict_for_memory(flow);
		flow->evict_requested = false;
	}

	PopActiveSnapshot();
	flow_leave(&identity);
	clear_skips(flow);
	flow->stats.round_rows = flow->unrecorded.rows_out - rows_before;
	return flush_request;
}

/* After a committed round: counters for flow_stats and flush_flow. */
static void
publish(StreamFlow *flow, int64 flush_done, bool failed, TimestampTz committed)
{
	if (flow->oldest_unflushed != 0 && !has_changes(flow))
	{
		flow->stats.freshness_us = committed - flow->oldest_unflushed;
		flow->stats.last_flush_at = committed;
		flow->oldest_unflushed = 0;
	}
	flow->stats.state_groups = flow->state ? flow->state->ngroups : 0;
	flow->stats.state_bytes = state_bytes(flow);
	queue_publish(flow->flow_id, &flow->stats, flush_done, failed);
}

static void
record_run(StreamFlow *flow, TimestampTz now, bool force)
{
	if (flow->unrecorded.log_entries == 0 && flow->unrecorded.rows_out == 0)
		return;
	if (flow->unrecorded_since == 0)
		flow->unrecorded_since = now;
	if (!force && now - flow->unrecorded_since < STATS_RECORD_USECS)
		return;
	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	stats_record_run(flow->flow_id, &flow->unrecorded, flow->unrecorded_since, now, 0);
	PopActiveSnapshot();
	CommitTransactionCommand();
	memset(&flow->unrecorded, 0, sizeof(BatchResult));
	flow->unrecorded_since = now;
}

/*
 * A round that failed: the state is rebuilt later (the round may have
 * applied part of its batches) and the error recorded -- unless it was a
 * lock a user's transaction held, which is no failure of the flow.
 */
static void
round_failed(StreamFlow *flow, ErrorData *edata, TimestampTz started)
{
	int64		delay = USECS_PER_SEC;

	if (edata->sqlerrcode == ERRCODE_LOCK_NOT_AVAILABLE)
	{
		ereport(DEBUG1,
				(errmsg("flowpg: streaming flow %lld is busy: %s",
						(long long) flow->flow_id, edata->message)));
		clear_skips(flow);
		reset_flow(flow);
		/* not before the lock may be gone: a reload each time is not cheap */
		flow->busy_until = GetCurrentTimestamp() + BUSY_RETRY_USECS;
		return;
	}
	ereport(LOG,
			(errmsg("flowpg: streaming flow %lld failed: %s",
					(long long) flow->flow_id, edata->message)));
	for (int i = 0; i < flow->failures && delay < MAX_RETRY_USECS; i++)
		delay *= 2;
	flow->failures++;
	flow->retry_at = GetCurrentTimestamp() + Min(delay, MAX_RETRY_USECS);

	/* start over from the source; the batches taken stay pending */
	clear_skips(flow);
	reset_flow(flow);

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	(void) stats_record_failure(flow->flow_id, edata, started, GetCurrentTimestamp());
	PopActiveSnapshot();
	CommitTransactionCommand();
}

static void
run_one(StreamFlow *flow)
{
	TimestampTz started = GetCurrentTimestamp();
	MemoryContext oldcontext = CurrentMemoryContext;
	volatile int64 flush_done = 0;
	volatile bool succeeded = false;
	int64		flush_request = queue_flush_requested(flow->flow_id);

	if ((flow->retry_at > started && flush_request == 0) || flow->busy_until > started)
		return;
	pgstat_report_activity(STATE_RUNNING, "flowpg: streaming");
	PG_TRY();
	{
		if (flow->loaded)
		{
			SetCurrentStatementStartTimestamp();
			StartTransactionCommand();
			batch_limit_lock_waits();
			(void) flow_round(flow, started, flush_request, true);
			CommitTransactionCommand();
		}
		SetCurrentStatementStartTimestamp();
		StartTransactionCommand();
		XactIsoLevel = XACT_REPEATABLE_READ;
		batch_limit_lock_waits();
		if (flowpg_query_timeout_ms > 0)
			enable_timeout_after(STATEMENT_TIMEOUT, flowpg_query_timeout_ms);
		flush_done = flow_round(flow, started, flush_request, false);
		disable_timeout(STATEMENT_TIMEOUT, false);
		CommitTransactionCommand();
		MemoryContextSwitchTo(oldcontext);
		flow->failures = 0;
		succeeded = true;
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		disable_timeout(STATEMENT_TIMEOUT, false);
		QueryCancelPending = false;
		MemoryContextSwitchTo(oldcontext);
		edata = CopyErrorData();
		FlushErrorState();
		AbortCurrentTransaction();
		MemoryContextSwitchTo(oldcontext);
		/* a flush_flow waiting for this round gets the failure -- not a busy one */
		if (edata->sqlerrcode == ERRCODE_LOCK_NOT_AVAILABLE)
			flush_request = 0;
		round_failed(flow, edata, started);
		publish(flow, flush_request, flush_request != 0, GetCurrentTimestamp());
	}
	PG_END_TRY();

	if (succeeded)
	{
		/* the run is on record before a waiting flush_flow returns */
		PG_TRY();
		{
			record_run(flow, GetCurrentTimestamp(), flush_done != 0);
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
		publish(flow, flush_done, false, GetCurrentTimestamp());
	}
	pgstat_report_activity(STATE_IDLE, NULL);
}

long
stream_run(void)
{
	ListCell   *lc;
	int64		total_bytes = 0;
	StreamFlow *largest = NULL;
	long		wait_ms = 1000;
	TimestampTz now;

	if (!flowpg_enabled)
	{
		/* flush_flow recomputes sinks meanwhile: start over when back */
		ListCell   *lc2;

		foreach(lc2, stream_flows)
			if (((StreamFlow *) lfirst(lc2))->loaded)
				reset_flow(lfirst(lc2));
		return 1000;
	}
	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	sync_flows();
	PopActiveSnapshot();
	CommitTransactionCommand();

	foreach(lc, stream_flows)
	{
		StreamFlow *flow = lfirst(lc);

		CHECK_FOR_INTERRUPTS();
		run_one(flow);
		total_bytes += state_bytes(flow);
		if (largest == NULL || state_bytes(flow) > state_bytes(largest))
			largest = flow;
	}
	if (largest && total_bytes > (int64) flowpg_state_memory_kb * 1024)
		largest->evict_requested = true;

	now = GetCurrentTimestamp();
	foreach(lc, stream_flows)
	{
		StreamFlow *flow = lfirst(lc);

		if (flow->busy_until > now || flow->retry_at > now)
			wait_ms = Min(wait_ms, Max((Max(flow->busy_until, flow->retry_at) - now) / 1000, 1));
		else if (flow->evict_requested || !flow->loaded)
			wait_ms = 0;
		else if (has_changes(flow))
		{
			long		due = (flow->last_flush + (int64) flowpg_flush_interval_ms * 1000 - now) / 1000;

			wait_ms = Min(wait_ms, Max(due, 1));
		}
		else if (flow->pending != NIL)
			wait_ms = Min(wait_ms, 10);
	}
	return wait_ms;
}
