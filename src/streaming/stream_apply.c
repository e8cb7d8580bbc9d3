/*-------------------------------------------------------------------------
 *
 * stream_apply.c
 *	  Where queued batches are merged into a streaming flow's state.
 *
 * A round takes copies of the flow's queued batches; those whose
 * transaction committed are merged into the shared groups -- their groups
 * with the aggregates' combine functions, their rows through the
 * transition functions -- those that aborted are dropped, the rest wait.
 * Batches leave the queue only when the round's transaction has committed
 * (stream_round.c), so a worker that dies loses none.
 *
 * A batch is not merged where the state cannot take it exactly: windows a
 * refill of this round already read from the source (skip ranges), windows
 * below expire_after (ignored, as in the batching engine), below the
 * memory watermark or the cold floor (stream_evict.c), and batches computed by an older definition of the
 * flow -- those windows go to the dirty log and are recomputed.
 *
 * Before any group is changed, its windows are added to the round's
 * "touched" range in shared memory (stream_state_touch, in
 * stream_state_merge_group): should the round not finish, the next one
 * recomputes and refills them (stream_round.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/transam.h"
#include "storage/procarray.h"
#include "utils/datum.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"

#include "batch_codec.h"
#include "planner.h"
#include "subxact.h"
#include "dirty_log.h"
#include "stream_flow.h"
#include "window.h"

/* This round's batches: copies of what is queued now, oldest first. */
void
stream_apply_take(StreamFlow *flow)
{
	MemoryContext old;
	List	   *peeked;
	ListCell   *lc;

	MemoryContextReset(flow->round_memory);
	flow->pending = NIL;
	old = MemoryContextSwitchTo(flow->round_memory);
	peeked = queue_peek(flow->flow_id);
	foreach(lc, peeked)
	{
		PendingBatch *pb = palloc0(sizeof(PendingBatch));

		pb->batch = lfirst(lc);
		flow->pending = lappend(flow->pending, pb);
	}
	MemoryContextSwitchTo(old);
}

/*
 * Notes that a change could not be applied: its windows go to the dirty
 * log.  Overlapping ranges merge; beyond FALLBACK_RANGES, the two closest.
 */
static void
fall_back(StreamFlow *flow, bool whole, int64 lo, int64 hi)
{
	int			n = flow->nfallbacks;
	int			closest = -1;
	uint64		gap = PG_UINT64_MAX;

	if (whole || lo > hi)
	{
		flow->fallback_whole = true;
		return;
	}
	for (int i = 0; i < n; i++)
		if (lo <= flow->fallback_hi[i] && hi >= flow->fallback_lo[i])
		{
			flow->fallback_lo[i] = Min(flow->fallback_lo[i], lo);
			flow->fallback_hi[i] = Max(flow->fallback_hi[i], hi);
			return;
		}
	if (n == FALLBACK_RANGES)
	{
		/* merge the new range into the range nearest to it */
		for (int i = 0; i < n; i++)
		{
			uint64		d = hi < flow->fallback_lo[i] ?
				(uint64) flow->fallback_lo[i] - (uint64) hi :
				(uint64) lo - (uint64) flow->fallback_hi[i];

			if (d < gap)
			{
				gap = d;
				closest = i;
			}
		}
		flow->fallback_lo[closest] = Min(flow->fallback_lo[closest], lo);
		flow->fallback_hi[closest] = Max(flow->fallback_hi[closest], hi);
		return;
	}
	flow->fallback_lo[n] = lo;
	flow->fallback_hi[n] = hi;
	flow->nfallbacks++;
}

/*
 * One group or one taken-back row of a batch -- its key in key_slot, its
 * partial states in flow->partials (a group) or its inputs in
 * flow->inputs (a row) -- merged into the state where the state can take
 * it exactly, else its windows noted for the recompute.
 */
static void
apply_one(StreamFlow *flow, PendingBatch *pb, bool replay, bool is_row, int sign,
		  int64 time_lo, int64 time_hi)
{
	StreamGraph *graph = flow->graph;
	FlowShared *sh = flow->sh;
	TupleTableSlot *keys = graph->key_slot;
	bool		wnull = true;
	int64		w = 0;
	bool		counted;
	bool		expired;
	StoredGroup *merged;

	if (flow->store)
		store_reset_local(flow->store);
	if (graph->window_key >= 0 && !keys->tts_isnull[graph->window_key])
	{
		wnull = false;
		w = window_datum_to_ordinal(TupleDescAttr(graph->key_desc, graph->window_key)->atttypid,
									keys->tts_values[graph->window_key]);
	}

	/*
	 * With expire_after a NULL window is never maintained (as in the
	 * batching engine); below a memory watermark or the cold floor
	 * (flowpg.state_keep) the state has no NULL-window group either, so
	 * those changes are recomputed.
	 */
	counted = stream_state_in_skips(pb->skips, wnull, w);
	expired = sh->has_expiry && (wnull || w < sh->expiry_window);
	if (counted || expired || flow->store == NULL ||
		(sh->has_watermark && (wnull || w < sh->watermark_window)) ||
		(sh->has_cold && (wnull || (w < sh->cold_window &&
									!stream_evict_is_warm(sh, true, w, true)))))
	{
		if (replay)
			return;				/* dealt with when the batch was applied */
		if (counted)
		{
			/* already in the state: make sure the sink gets it */
			StoredGroup *group = flow->store ? store_lookup(flow->store, false) : NULL;

			if (group)
				store_mark_changed(flow->store, group);

			/*
			 * A row taken back from a group the refill did not find: the
			 * group may be gone from the source while the sink still holds
			 * it (a refill only upserts what it read).
			 */
			else if (is_row && sign < 0)
				fall_back(flow, wnull, time_lo, time_hi);
		}
		else if (!expired)
			fall_back(flow, wnull, time_lo, time_hi);	/* its windows, recomputed */
		return;
	}
	if (!replay && sign < 0 && flow->regroup_retractions)
	{
		(void) stream_state_mark_stale(flow, time_lo, time_hi);
		flow->has_stale = true;
		return;
	}
	if (replay)
	{
		/* a replay goes only into the groups just recomputed */
		StoredGroup *group = store_lookup(flow->store, false);

		if (group == NULL || !(group->flags & STORED_REGROUP))
			return;
	}
	merged = stream_state_merge_group(flow, time_lo, time_hi,
									  is_row ? NULL : flow->partials,
									  is_row ? flow->inputs : NULL, sign, false);
	/* how far the state's windows reach: the cold floor follows it */
	if (time_lo <= time_hi && (!sh->has_newest || time_hi > sh->newest_time))
	{
		sh->newest_time = time_hi;
		sh->has_newest = true;
	}

	/*
	 * A retraction the state could not take (the maximum deleted): the
	 * group is recomputed after the batches (regroup_stale), and not
	 * written before.
	 */
	if (merged->flags & STORED_STALE)
		flow->has_stale = true;
}

/*
 * Where the flow's columns are in a chunk, as attribute numbers of its
 * rows; false when the chunk does not have them as the flow reads them
 * (the flow changed since the rows were copied).
 */
static bool
chunk_columns(StreamGraph *graph, ChunkReader *reader, AttrNumber *map)
{
	if (reader->nmap != graph->ncols)
		return false;
	for (int c = 0; c < graph->ncols; c++)
	{
		if (reader->map[c] < 0 || reader->map[c] >= reader->desc->natts ||
			codec_column_type(reader, reader->map[c]) !=
			TupleDescAttr(graph->row_desc, c)->atttypid)
			return false;
		map[c] = reader->map[c] + 1;
	}
	return true;
}

/*
 * The time range of a batch's rows, read from their time column without
 * evaluating anything; false when some have no time (or the columns do
 * not match).
 */
static bool
batch_time_range(StreamFlow *flow, PendingBatch *pb, int64 *lo, int64 *hi)
{
	StreamGraph *graph = flow->graph;
	AttrNumber *map = palloc(sizeof(AttrNumber) * Max(graph->ncols, 1));
	ChunkReader reader;
	bool		timed = graph->time_col >= 0;

	codec_reader_init(&reader, pb->batch->data, pb->batch->len, flow->flow_id,
					  CurrentMemoryContext);
	while (timed && codec_next_chunk(&reader))
		timed = chunk_columns(graph, &reader, map) &&
			codec_rows_time_range(&reader, map[graph->time_col] - 1, graph->time_type, lo, hi);
	codec_reader_end(&reader);
	return timed;
}

/* The batch goes to the recompute: the windows of its rows. */
static void
batch_fall_back(StreamFlow *flow, PendingBatch *pb)
{
	int64		lo = PG_INT64_MAX;
	int64		hi = PG_INT64_MIN;

	if (batch_time_range(flow, pb, &lo, &hi))
		fall_back(flow, false, lo, hi);
	else
		fall_back(flow, true, 0, 0);
}

/*
 * The rows of a batch through the flow's graph, as its owner: added rows
 * into the group table added (each group's transitions run here, once per
 * row); taken-back rows evaluated (key, time, inputs), copied into the
 * list taken_back for the inverse transitions.  columns_match false when
 * the batch's columns are not the flow's.
 */
typedef struct TakenBack
{
	int64		time_lo;
	int64		time_hi;
	Datum	   *keys;
	bool	   *key_nulls;
	AggInput   *inputs;
} TakenBack;

typedef struct BatchRows
{
	StreamFlow *flow;
	List	   *batches;		/* PendingBatch, read in order */
	MemoryContext memory;		/* added, taken_back */
	GroupTable *added;
	List	   *taken_back;
	bool		columns_match;
} BatchRows;

/* A copy of the evaluated row taken back, in the batch's memory. */
static TakenBack *
copy_taken_back(StreamGraph *graph, AggInput *inputs, int64 lo, int64 hi, MemoryContext memory)
{
	MemoryContext old = MemoryContextSwitchTo(memory);
	TakenBack  *tb = palloc(sizeof(TakenBack));
	TupleTableSlot *keys = graph->key_slot;

	tb->time_lo = lo;
	tb->time_hi = hi;
	tb->keys = palloc(sizeof(Datum) * Max(graph->nkeys, 1));
	tb->key_nulls = palloc(sizeof(bool) * Max(graph->nkeys, 1));
	for (int k = 0; k < graph->nkeys; k++)
	{
		Form_pg_attribute attr = TupleDescAttr(graph->key_desc, k);

		tb->key_nulls[k] = keys->tts_isnull[k];
		tb->keys[k] = keys->tts_isnull[k] ? (Datum) 0 :
			datumCopy(keys->tts_values[k], attr->attbyval, attr->attlen);
	}
	tb->inputs = graph_inputs_create(graph);
	for (int i = 0; i < graph->nuser_aggs; i++)
	{
		AggSupport *agg = &graph->aggs[i];

		tb->inputs[i].skip = inputs[i].skip;
		for (int a = 0; a < agg->nargs && !inputs[i].skip; a++)
		{
			tb->inputs[i].nulls[a] = inputs[i].nulls[a];
			tb->inputs[i].values[a] = inputs[i].nulls[a] ? (Datum) 0 :
				datumCopy(inputs[i].values[a], agg->argbyvals[a], agg->arglens[a]);
		}
	}
	MemoryContextSwitchTo(old);
	return tb;
}

static void
run_batch_rows(void *arg)
{
	BatchRows  *br = arg;
	StreamGraph *graph = br->flow->graph;
	AttrNumber *map = palloc(sizeof(AttrNumber) * Max(graph->ncols, 1));
	ChunkReader reader;
	Datum	   *values;
	bool	   *isnull;
	int			sign;
	ListCell   *lc;

	br->columns_match = true;
	foreach(lc, br->batches)
	{
		PendingBatch *pb = lfirst(lc);

		codec_reader_init(&reader, pb->batch->data, pb->batch->len, br->flow->flow_id,
						  CurrentMemoryContext);
		codec_reader_share(&reader, pb->batch->xid);
		while (br->columns_match && codec_next_chunk(&reader))
		{
			if (!chunk_columns(graph, &reader, map))
			{
				br->columns_match = false;
				break;
			}
			while (codec_next_row_values(&reader, &values, &isnull, &sign))
			{
				int64		lo;
				int64		hi;

				graph_load_row(graph, values, isnull, map);

				/*
				 * A key the state or the sink could not keep fails here,
				 * not in the merge (such a row taken back was never in
				 * them).
				 */
				graph->refuse_large_keys = true;
				if (sign > 0)
					(void) graph_accumulate_row(graph, br->added);
				else if (graph_eval_row(graph, &lo, &hi))
				{
					graph_eval_inputs(graph, br->flow->inputs);
					br->taken_back = lappend(br->taken_back,
											 copy_taken_back(graph, br->flow->inputs, lo, hi,
															 br->memory));
				}
			}
		}
		codec_reader_end(&reader);
		if (!br->columns_match)
			break;
	}
}

/*
 * Batches of an aggregate flow (pb: the one they share the skips and
 * replay of): their added rows aggregated into groups of their own, each
 * group then combined into the state once; then their taken-back rows,
 * after every added one (a row trigger's UPDATE of a row its INSERT added
 * in the same transaction), so that each inverse removes a row the state
 * has.  The flow's expressions run before the state is touched; false,
 * with nothing touched, when they failed (an error of the flow's own
 * making: an aggregate argument divides by zero) or the batches' columns
 * are not the flow's.
 */
static bool
apply_aggregate_batches(StreamFlow *flow, List *batches, PendingBatch *pb, bool replay)
{
	StreamGraph *graph = flow->graph;
	MemoryContext memory = AllocSetContextCreate(flow->round_memory, "flowpg batch rows",
												 ALLOCSET_DEFAULT_SIZES);
	BatchRows	br = {flow, batches, memory, NULL, NIL, true};
	GroupIterator iter = {0};
	FlowGroup  *group;
	ErrorData  *edata;
	ListCell   *lc;

	br.added = group_table_create(graph, memory);
	edata = subxact_run(run_batch_rows, &br);
	graph->refuse_large_keys = false;
	graph->key_too_large = false;
	if (edata != NULL || !br.columns_match)
	{
		if (edata)
			FreeErrorData(edata);
		MemoryContextDelete(memory);
		return false;
	}
	while ((group = group_table_next(br.added, &iter)) != NULL)
	{
		ResetExprContext(graph->econtext);
		MemoryContextReset(flow->batch_memory);
		if (graph->nkeys > 0)
			group_load_key(graph, group);
		for (int i = 0; i < graph->naggs; i++)
			flow->partials[i] = group_get_trans(group, graph->naggs, i);
		apply_one(flow, pb, replay, false, 1, group->time_lo, group->time_hi);
	}
	foreach(lc, br.taken_back)
	{
		TakenBack  *tb = lfirst(lc);
		TupleTableSlot *keys = graph->key_slot;

		MemoryContextReset(flow->batch_memory);
		ExecClearTuple(keys);
		memcpy(keys->tts_values, tb->keys, sizeof(Datum) * graph->nkeys);
		memcpy(keys->tts_isnull, tb->key_nulls, sizeof(bool) * graph->nkeys);
		ExecStoreVirtualTuple(keys);
		for (int i = 0; i < graph->nuser_aggs; i++)
		{
			int			nargs = graph->aggs[i].nargs;

			flow->inputs[i].skip = tb->inputs[i].skip;
			memcpy(flow->inputs[i].values, tb->inputs[i].values, sizeof(Datum) * nargs);
			memcpy(flow->inputs[i].nulls, tb->inputs[i].nulls, sizeof(bool) * nargs);
		}
		apply_one(flow, pb, replay, true, -1, tb->time_lo, tb->time_hi);
	}
	MemoryContextDelete(memory);
	return true;
}

/* One batch; one that fails goes to the recompute, the windows of its rows. */
static void
apply_aggregate_batch(StreamFlow *flow, PendingBatch *pb, bool replay)
{
	if (!apply_aggregate_batches(flow, list_make1(pb), pb, replay) && !replay)
		batch_fall_back(flow, pb);
}

/*
 * The round's batches that no refill counted (no skips), together: their
 * added rows into one set of groups, so that a group is combined into the
 * state once per round, not once per transaction.  When their rows fail,
 * each batch is applied alone, so that only the one at fault goes to the
 * recompute.
 */
static void
apply_round_batches(StreamFlow *flow, List *batches)
{
	PendingBatch plain = {0};
	ListCell   *lc;

	if (batches == NIL)
		return;
	if (list_length(batches) > 1 && apply_aggregate_batches(flow, batches, &plain, false))
		return;
	foreach(lc, batches)
		apply_aggregate_batch(flow, lfirst(lc), false);
}

/* A batch of a flow without aggregates: its rows projected for the sink. */
static void
apply_row_batch(StreamFlow *flow, PendingBatch *pb)
{
	StreamGraph *graph = flow->graph;
	Datum	   *values = palloc(sizeof(Datum) * Max(graph->noutputs, 1));
	bool	   *nulls = palloc(sizeof(bool) * Max(graph->noutputs, 1));
	AttrNumber *map = palloc(sizeof(AttrNumber) * Max(graph->ncols, 1));
	ChunkReader reader;
	Datum	   *row_values;
	bool	   *row_nulls;
	int			sign;
	MemoryContext old;

	if (stream_state_in_skips(pb->skips, true, 0))
		return;
	old = MemoryContextSwitchTo(flow->flush_memory);
	if (flow->append_rows == NULL)
		flow->append_rows = sink_rows_create(graph->noutputs);
	MemoryContextSwitchTo(old);
	codec_reader_init(&reader, pb->batch->data, pb->batch->len, flow->flow_id,
					  CurrentMemoryContext);
	codec_reader_share(&reader, pb->batch->xid);
	while (codec_next_chunk(&reader))
	{
		if (!chunk_columns(graph, &reader, map))
		{
			fall_back(flow, true, 0, 0);
			break;
		}
		while (codec_next_row_values(&reader, &row_values, &row_nulls, &sign))
		{
			graph_load_row(graph, row_values, row_nulls, map);
			if (!graph_project_row(graph, values, nulls))
				continue;
			old = MemoryContextSwitchTo(flow->flush_memory);
			sink_rows_add(flow->append_rows, graph->plan, values, nulls);
			MemoryContextSwitchTo(old);
		}
	}
	codec_reader_end(&reader);
}

/*
 * The groups the batches left STORED_STALE: recomputed from the rows of
 * their times under the round's snapshot (stream_refill_groups), then the
 * batches that snapshot does not see -- committed since, applied this
 * round -- replayed into them.  What could not be recomputed so, or went
 * stale again in the replay, has its windows recomputed through the dirty
 * log, and is not written meanwhile.
 */
static void
regroup_stale(StreamFlow *flow)
{
	Snapshot	snapshot = GetActiveSnapshot();
	ListCell   *lc;

	flow->has_stale = false;
	if (stream_refill_groups(flow))
	{
		foreach(lc, flow->pending)
		{
			PendingBatch *pb = lfirst(lc);

			if (pb->applied && XidInMVCCSnapshot(pb->batch->xid, snapshot))
				apply_aggregate_batch(flow, pb, true);
		}
	}
	/* the refill gave the whole state up for memory: it is recomputed */
	if (flow->store == NULL)
		return;
	foreach(lc, store_changed_list(flow->store))
	{
		StoredGroup *group = lfirst(lc);

		group->flags &= ~STORED_REGROUP;
		if (group->flags & STORED_STALE)
			fall_back(flow, (group->flags & STORED_WNULL) != 0 || flow->graph->window_key < 0,
					  group->time_lo, group->time_hi);
	}
	flow->has_stale = false;
}

/*
 * Applies this round's committed batches, drops aborted ones, leaves the
 * others queued.  Rows of flows without aggregates are taken only by a
 * round that writes the sink (they have no state to wait in).
 */
void
stream_apply_pending(StreamFlow *flow)
{
	FlowShared *sh = flow->sh;
	ListCell   *lc;

	bool		rights_checked = false;
	bool		row_security = false;
	List	   *plain = NIL;	/* aggregate batches without skips */

	flow->fallback_whole = false;
	flow->nfallbacks = 0;
	foreach(lc, flow->pending)
	{
		PendingBatch *pb = lfirst(lc);
		TransactionId xid = pb->batch->xid;
		bool		aggregate = flow->graph->plan->is_aggregate;

		if (pb->done || TransactionIdIsInProgress(xid))
			continue;
		if (!TransactionIdDidCommit(xid))
		{
			pb->done = true;
			sh->stats.batches_dropped++;
			continue;
		}
		/*
		 * Rows wait in the queue for a round that writes -- unless a refill
		 * of this round already counted them: the skips go with the round.
		 */
		if (!aggregate && !flow->writing && !stream_state_in_skips(pb->skips, true, 0))
			continue;
		pb->done = true;

		/*
		 * The rows are the writers' and the owner's rights are not checked
		 * there: what the owner may not read never reaches the sink (a
		 * lost privilege fails the round, as it fails a batching run), and
		 * rows row-level security may hide from the owner go to the
		 * recompute, which applies the policies.
		 */
		if (!rights_checked)
		{
			flow_plan_check_rights(flow->graph->plan);
			row_security = flow_plan_uses_row_security(flow->graph->plan);
			rights_checked = true;
		}
		if (pb->batch->version != flow->version)
		{
			/* computed by an older definition and not refilled: recompute */
			if (!stream_state_in_skips(pb->skips, true, 0))
				flow->fallback_whole = true;
		}
		else if (row_security)
			batch_fall_back(flow, pb);
		else if (aggregate)
		{
			if (pb->skips == NIL)
				plain = lappend(plain, pb);
			else
				apply_aggregate_batch(flow, pb, false);
			pb->applied = true;
		}
		else
			apply_row_batch(flow, pb);
		sh->stats.batches_applied++;
		sh->unrecorded.log_entries++;
		sh->unrecorded.rows_in += pb->batch->nrows;
		if (sh->oldest_unflushed == 0 || pb->batch->queued_at < sh->oldest_unflushed)
			sh->oldest_unflushed = pb->batch->queued_at;
	}
	apply_round_batches(flow, plain);

	if (flow->has_stale)
		regroup_stale(flow);
	if (flow->fallback_whole)
		dirty_log_append(flow->flow_id, true, 0, 0, 0);
	else
		for (int i = 0; i < flow->nfallbacks; i++)
			dirty_log_append(flow->flow_id, false, flow->fallback_lo[i], flow->fallback_hi[i], 0);
	if (flow->fallback_whole || flow->nfallbacks > 0)
	{
		registry_count_fallback(flow->flow_id, 1);
		sh->fallback_logged = true;
	}
}
