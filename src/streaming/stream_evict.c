/*-------------------------------------------------------------------------
 *
 * stream_evict.c
 *	  Where a streaming flow's state gives up windows: for memory, and
 *	  past expire_after.
 *
 * Above flowpg.state_memory (all flows of the server together), the flow
 * with the most state gives up the older half of its windows: a watermark
 * moves up to the median window, and changes below it go to the dirty log
 * (recomputed from the source) instead of the state.  A flow without a
 * window gives up its whole state and is recomputed from then on.  Windows
 * older than expire_after are evicted and changes to them ignored, as in
 * the batching engine.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/lsyscache.h"

#include "dirty_log.h"
#include "stream_flow.h"
#include "window.h"

static bool
below_floor(StoredGroup *group, void *arg)
{
	/* a partial state holds no NULL window (the loads cannot read one) */
	return (group->flags & STORED_WNULL) || group->window < *(int64 *) arg;
}

/* A time ordinal as its column's type prints it. */
static char *
time_text(StreamFlow *flow, int64 ordinal)
{
	Oid			output;
	bool		varlena;

	getTypeOutputInfo(flow->graph->time_type, &output, &varlena);
	return OidOutputFunctionCall(output, window_ordinal_to_datum(flow->graph->time_type, ordinal));
}

/*
 * Changed groups the sink does not have yet, about to be given up: their
 * windows go to the dirty log, recomputed in this round.
 */
static void
log_changed_below(StreamFlow *flow, int64 floor_window)
{
	ListCell   *lc;
	bool		whole = false;
	int64		lo = PG_INT64_MAX;
	int64		hi = PG_INT64_MIN;

	foreach(lc, store_changed_list(flow->store))
	{
		StoredGroup *group = lfirst(lc);

		if (!below_floor(group, &floor_window))
			continue;
		if ((group->flags & STORED_WNULL) || group->time_lo > group->time_hi)
			whole = true;
		lo = Min(lo, group->time_lo);
		hi = Max(hi, group->time_hi);
	}
	if (!whole && lo > hi)
		return;
	/* the log entry goes with the round: should it not commit, the repair has them */
	stream_state_touch(flow, whole, lo, hi);
	dirty_log_append(flow->flow_id, whole, whole ? 0 : lo, whole ? 0 : hi, 0);
	flow->sh->fallback_logged = true;
}

/* No window to give up by: the whole state goes, the flow is recomputed. */
static void
give_up_all(StreamFlow *flow)
{
	if (store_has_changed(flow->store))
	{
		stream_state_touch(flow, true, 0, 0);
		dirty_log_append(flow->flow_id, true, 0, 0, 0);
		flow->sh->fallback_logged = true;
	}
	stream_state_drop_store(flow);
	flow->sh->degraded = true;
	flow->sh->degraded_at = GetCurrentTimestamp();
	flow->sh->degrades_total++;
	ereport(LOG,
			(errmsg("flowpg: flow \"%s\" gives up its state for memory",
					flow->entry->flow_name),
			 errdetail("flowpg.state_memory is exceeded; the flow is recomputed from the source from now on.")));
}

static int
compare_int64(const void *a, const void *b)
{
	int64		x = *(const int64 *) a;
	int64		y = *(const int64 *) b;

	return x < y ? -1 : x > y ? 1 : 0;
}

/* Gives up the older half of the windows (or all state without a window). */
void
stream_evict_for_memory(StreamFlow *flow)
{
	FlowShared *sh = flow->sh;
	StreamGraph *graph = flow->graph;
	int64	   *windows;
	int64	   *times;
	int64	   *sorted;
	int			n = 0;
	StoreIterator iter = {0};
	StoredGroup *group;
	int64		start;
	int64		end;
	bool		unbounded;
	int			median = 0;

	if (flow->store == NULL)
		return;
	if (graph->window_key < 0 || flow->probe == NULL)
	{
		give_up_all(flow);
		return;
	}
	windows = palloc(sizeof(int64) * Max(store_groups(flow->store), 1));
	times = palloc(sizeof(int64) * Max(store_groups(flow->store), 1));
	while ((group = store_next(flow->store, &iter)) != NULL)
	{
		if ((group->flags & STORED_WNULL) || group->time_lo > group->time_hi)
			continue;
		windows[n] = group->window;
		times[n] = group->time_lo;
		n++;
	}
	if (n == 0)
		return;
	/* the median window */
	sorted = palloc(sizeof(int64) * n);
	memcpy(sorted, windows, sizeof(int64) * n);
	qsort(sorted, n, sizeof(int64), compare_int64);
	for (int i = 0; i < n; i++)
		if (windows[i] == sorted[n / 2])
			median = i;
	window_bounds(flow->probe, times[median], &start, &end, &unbounded);
	if (unbounded)
	{
		give_up_all(flow);
		return;
	}
	sh->degraded_at = GetCurrentTimestamp();	/* loaded whole again once memory frees */
	sh->evictions++;
	if (!sh->has_watermark || end > sh->watermark_time)
	{
		sh->has_watermark = true;
		sh->watermark_time = end;
		sh->watermark_window = stream_state_window_of(flow, end);
	}
	ereport(LOG,
			(errmsg("flowpg: flow \"%s\" gives up the state of its older windows for memory",
					flow->entry->flow_name),
			 errdetail("flowpg.state_memory is exceeded; changes to windows before %s are recomputed from the source.",
					   time_text(flow, sh->watermark_time))));
	log_changed_below(flow, sh->watermark_window);
	store_delete_where(flow->store, below_floor, &sh->watermark_window);
}

/* Moves the expiry cutoff; evicts the windows that fell behind it. */
void
stream_evict_expired(StreamFlow *flow)
{
	FlowShared *sh = flow->sh;
	int64		cutoff;

	if (flow->entry->expire_after == NULL || flow->probe == NULL)
		return;
	cutoff = window_expiry_cutoff(flow->probe, flow->entry->expire_after);
	if (sh->has_expiry && cutoff <= sh->expiry_time)
		return;
	sh->has_expiry = true;
	sh->expiry_time = cutoff;
	sh->expiry_window = stream_state_window_of(flow, cutoff);
	if (flow->store && sh->loaded)
		store_delete_where(flow->store, below_floor, &sh->expiry_window);
}
