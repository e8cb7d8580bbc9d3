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

#include "stream_flow.h"
#include "window.h"

/* The lowest time the state holds windows from; false when all. */
bool
state_floor(StreamFlow *flow, int64 *time, int64 *window)
{
	FlowShared *sh = flow->sh;
	bool		has = false;

	if (sh->has_expiry)
	{
		*time = sh->expiry_time;
		*window = sh->expiry_window;
		has = true;
	}
	if (sh->has_watermark && (!has || sh->watermark_time > *time))
	{
		*time = sh->watermark_time;
		*window = sh->watermark_window;
		has = true;
	}
	return has;
}

static bool
below_floor(StoredGroup *group, void *arg)
{
	/* a partial state holds no NULL window (the loads cannot read one) */
	return (group->flags & STORED_WNULL) || group->window < *(int64 *) arg;
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
evict_for_memory(StreamFlow *flow)
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
		flow_state_drop_store(flow);
		sh->degraded = true;
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
		flow_state_drop_store(flow);
		sh->degraded = true;
		return;
	}
	if (!sh->has_watermark || end > sh->watermark_time)
	{
		sh->has_watermark = true;
		sh->watermark_time = end;
		sh->watermark_window = window_of_time(flow, end);
	}
	store_delete_where(flow->store, below_floor, &sh->watermark_window);
}

/* Moves the expiry cutoff; evicts the windows that fell behind it. */
void
expire_windows(StreamFlow *flow)
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
	sh->expiry_window = window_of_time(flow, cutoff);
	if (flow->store && sh->loaded)
		store_delete_where(flow->store, below_floor, &sh->expiry_window);
}
