/*-------------------------------------------------------------------------
 *
 * stream_write.c
 *	  The round's sink stage: the groups a round changed, finalized and
 *	  written to the sink in one statement per kind (upserts, plain
 *	  inserts, deletes), or the rows of a flow without aggregates appended.
 *
 * The groups keep their "changed" marks until the round's transaction
 * commits (stream_round.c's round_committed): a round that fails changed
 * nothing of the state here, and the next one writes them again.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "executor/spi.h"
#include "utils/memutils.h"

#include "sink.h"
#include "stream_flow.h"

/* Has the state (or the rows to append) anything the sink does not hold yet? */
bool
stream_has_changes(StreamFlow *flow)
{
	return (flow->store && store_has_changed(flow->store)) || flow->append_rows != NULL;
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

	if (plan->is_aggregate && flow->store)
	{
		SinkRows   *upserts = sink_rows_create(graph->noutputs);
		SinkRows   *inserts = sink_rows_create(graph->noutputs);
		SinkRows   *deletes = sink_rows_create(graph->noutputs);
		Datum	   *values = palloc(sizeof(Datum) * Max(graph->noutputs, 1));
		bool	   *nulls = palloc(sizeof(bool) * Max(graph->noutputs, 1));
		bool		trust = !flow->sh->write_pending;
		List	   *changed;
		ListCell   *lc;
		MemoryContext round = MemoryContextSwitchTo(flow->round_memory);

		/*
		 * The groups keep their marks until the round has committed
		 * (round_committed): a round that does not get there changed
		 * nothing of the state here, and the next one writes them again.
		 */
		changed = store_changed_list(flow->store);
		flow->written = NIL;
		flow->written_keep = NIL;
		MemoryContextSwitchTo(round);
		foreach(lc, changed)
		{
			StoredGroup *group = lfirst(lc);
			bool		in_sink = !trust || (group->flags & STORED_IN_SINK);
			int			keep;

			/* waiting for its window's recompute: its state is not the source's */
			if (group->flags & STORED_STALE)
				continue;
			ResetExprContext(graph->econtext);
			store_reset_local(flow->store);
			if (graph->nkeys > 0)
				store_load_key(flow->store, group);
			store_load_trans(flow->store, group, flow->trans);
			if (graph->rows_counter >= 0 && graph->nkeys > 0 &&
				DatumGetInt64(flow->trans[graph->rows_counter].value) == 0)
			{
				/* its last row was taken back: the group is gone */
				keep = WRITTEN_GONE;
				graph_key_outputs(graph, values, nulls);
			}
			else
				keep = graph_finalize_output(graph, store_agg_context(flow->store), flow->trans,
											 values, nulls) ? WRITTEN_KEPT : WRITTEN_DELETED;
			if (keep == WRITTEN_KEPT)
				sink_rows_add(in_sink ? upserts : inserts, plan, values, nulls);
			else if (in_sink)
				sink_rows_add(deletes, plan, values, nulls);
			round = MemoryContextSwitchTo(flow->round_memory);
			flow->written = lappend(flow->written, group);
			flow->written_keep = lappend_int(flow->written_keep, keep);
			MemoryContextSwitchTo(round);
		}

		/*
		 * A group the sink does not hold is inserted plainly (cheaper than
		 * an upsert).  Should the sink hold it after all (a row inserted
		 * there by someone else), the unique index refuses the row and the
		 * round fails; the next write then upserts every group.
		 */
		sink_upsert(sink, plan, upserts);
		if (plan->window_expr || graph->nkeys > 0)
			sink_append(sink, plan, inserts);
		else
			sink_upsert(sink, plan, inserts);
		sink_delete_groups(sink, plan, deletes);
		flow->sh->unrecorded.rows_out += upserts->nrows + inserts->nrows + deletes->nrows;
		flow->sh->write_pending = true;
	}
	else if (flow->append_rows)
	{
		sink_append(sink, plan, flow->append_rows);
		flow->sh->unrecorded.rows_out += flow->append_rows->nrows;
		flow->append_rows = NULL;
	}
	sink_write_context_pop(&write_context);
	MemoryContextSwitchTo(old);
	MemoryContextReset(flow->flush_memory);
}

void
stream_write_sink(StreamFlow *flow)
{
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	write_sink(flow);
	SPI_finish();
}
