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
 * below expire_after (ignored, as in the batching engine) or below the
 * memory watermark, and batches computed by an older definition of the
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
#include "utils/memutils.h"
#include "utils/snapmgr.h"

#include "batch_codec.h"
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

/*
 * The batch's groups (combined into the state), then its input rows
 * (through the transition functions): each where the state can take it.
 */
static void
apply_aggregate_batch(StreamFlow *flow, PendingBatch *pb, bool replay)
{
	StreamGraph *graph = flow->graph;
	FlowShared *sh = flow->sh;
	char	   *cursor = pb->batch->data;
	int32		ngroups = codec_read_groups(&cursor);

	for (int g = 0; g < pb->batch->count; g++)
	{
		TupleTableSlot *keys = graph->key_slot;
		bool		is_row = g >= ngroups;
		int64		time_lo;
		int64		time_hi;
		bool		wnull = true;
		int64		w = 0;
		bool		counted;
		bool		expired;
		int			sign = 1;
		StoredGroup *merged;

		if (flow->store)
			store_reset_local(flow->store);
		ResetExprContext(graph->econtext);
		MemoryContextReset(flow->batch_memory);
		if (is_row)
			codec_read_input(&cursor, graph, flow->batch_cxt, &time_lo, &time_hi, &sign,
							 flow->inputs);
		else
			codec_read_group(&cursor, graph, flow->batch_cxt, &time_lo, &time_hi,
							 flow->partials);
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
		counted = stream_state_in_skips(pb->skips, wnull, w);
		expired = sh->has_expiry && (wnull || w < sh->expiry_window);
		if (counted || expired || flow->store == NULL ||
			(sh->has_watermark && (wnull || w < sh->watermark_window)))
		{
			if (replay)
				continue;		/* dealt with when the batch was applied */
			if (counted)
			{
				/* already in the state: make sure the sink gets it */
				StoredGroup *group = flow->store ? store_lookup(flow->store, false) : NULL;

				if (group)
					store_mark_changed(flow->store, group);

				/*
				 * A row taken back from a group the refill did not find:
				 * the group may be gone from the source while the sink
				 * still holds it (a refill only upserts what it read).
				 */
				else if (is_row && sign < 0)
					fall_back(flow, wnull, time_lo, time_hi);
			}
			else if (!expired)
				fall_back(flow, wnull, time_lo, time_hi);	/* its windows, recomputed */
			continue;
		}
		if (!replay && sign < 0 && flow->regroup_retractions)
		{
			(void) stream_state_mark_stale(flow, time_lo, time_hi);
			flow->has_stale = true;
			continue;
		}
		if (replay)
		{
			/* a replay goes only into the groups just recomputed */
			StoredGroup *group = store_lookup(flow->store, false);

			if (group == NULL || !(group->flags & STORED_REGROUP))
				continue;
		}
		merged = stream_state_merge_group(flow, time_lo, time_hi,
										  is_row ? NULL : flow->partials,
										  is_row ? flow->inputs : NULL, sign, false);

		/*
		 * A retraction the state could not take (the maximum deleted): the
		 * group is recomputed after the batches (regroup_stale), and not
		 * written before.
		 */
		if (merged->flags & STORED_STALE)
			flow->has_stale = true;
	}
}

static void
apply_row_batch(StreamFlow *flow, PendingBatch *pb)
{
	StreamGraph *graph = flow->graph;
	char	   *cursor = pb->batch->data;
	Datum	   *values = palloc(sizeof(Datum) * Max(graph->noutputs, 1));
	bool	   *nulls = palloc(sizeof(bool) * Max(graph->noutputs, 1));
	MemoryContext old;

	if (stream_state_in_skips(pb->skips, true, 0))
		return;
	old = MemoryContextSwitchTo(flow->flush_memory);
	if (flow->append_rows == NULL)
		flow->append_rows = sink_rows_create(graph->noutputs);
	for (int r = 0; r < pb->batch->count; r++)
	{
		codec_read_row(&cursor, graph, values, nulls);
		sink_rows_add(flow->append_rows, graph->plan, values, nulls);
	}
	MemoryContextSwitchTo(old);
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

	flow->fallback_whole = false;
	flow->fallback_lo = PG_INT64_MAX;
	flow->fallback_hi = PG_INT64_MIN;
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
		if (pb->batch->version != flow->version)
		{
			/* computed by an older definition and not refilled: recompute */
			if (!stream_state_in_skips(pb->skips, true, 0))
				flow->fallback_whole = true;
		}
		else if (aggregate)
		{
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

	if (flow->has_stale)
		regroup_stale(flow);
	if (flow->fallback_whole)
		dirty_log_append(flow->flow_id, true, 0, 0, 0);
	else if (flow->fallback_lo <= flow->fallback_hi)
		dirty_log_append(flow->flow_id, false, flow->fallback_lo, flow->fallback_hi, 0);
	if (flow->fallback_whole || flow->fallback_lo <= flow->fallback_hi)
	{
		registry_count_fallback(flow->flow_id, 1);
		sh->fallback_logged = true;
	}
}
