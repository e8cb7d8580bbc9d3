/*-------------------------------------------------------------------------
 *
 * stream_evict.c
 *	  Where a streaming flow's state gives up windows: with age, for
 *	  memory, and past expire_after.
 *
 * The state keeps the windows that still change: those that end no more
 * than flowpg.state_keep before the newest row the flow has seen (no later
 * than now()).  Older windows leave it as time goes by (their rows stay in
 * the sink), and a change to one goes to the dirty log, recomputed from
 * the source: late rows are exact, and the state's size follows the rate
 * of rows, not the length of the history.  A window recomputed for late
 * rows is kept warm: refilled into the state with its recompute (a few
 * windows at a time, while the state memory has room), so that the next
 * late rows to it are applied, not recomputed again, until none came for
 * state_keep.  (Only for flows with no NULL
 * window in their state: a time column NOT NULL, or expire_after, which
 * never maintains that window.  A NULL-time change under a floor would
 * recompute the whole flow.)
 *
 * Above flowpg.state_memory (all flows of the server together), the flow
 * with the most state gives up the older half of its windows: a watermark
 * moves up to the median window, and changes below it go to the dirty log
 * too; once memory frees, the state is loaded again.  A flow without a
 * window gives up its whole state and is recomputed from then on.  Windows
 * older than expire_after are evicted and changes to them ignored, as in
 * the batching engine.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "utils/lsyscache.h"

#include "dirty_log.h"
#include "guc.h"
#include "miscadmin.h"
#include "state_memory.h"
#include "stream_flow.h"
#include "window.h"

/* Windows a warm range may span (a late row's window, a few neighbours). */
#define WARM_MAX_WINDOWS 4

/*
 * Which groups leave the state: those of windows below floor (the warm
 * ones too, unless spare), or (range) those of the windows [wstart, wend).
 */
typedef struct Leaving
{
	bool		range;
	int64		floor;
	FlowShared *spare;
	int64		wstart;
	int64		wend;
} Leaving;

static bool
leaves(StoredGroup *group, void *arg)
{
	Leaving    *l = arg;

	if (l->range)
		return !(group->flags & STORED_WNULL) && group->window >= l->wstart &&
			group->window < l->wend;
	/* a partial state holds no NULL window (the loads cannot read one) */
	if (group->flags & STORED_WNULL)
		return true;
	return group->window < l->floor &&
		(l->spare == NULL || !stream_evict_is_warm(l->spare, true, group->window, false));
}

bool
stream_evict_is_warm(FlowShared *sh, bool by_window, int64 x, bool touch)
{
	for (int i = 0; i < sh->nwarm; i++)
	{
		WarmRange  *r = &sh->warm[i];

		if (by_window ? (x >= r->wstart && x < r->wend) : (x >= r->start && x < r->end))
		{
			if (touch)
				r->touched = GetCurrentTimestamp();
			return true;
		}
	}
	return false;
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
log_changed(StreamFlow *flow, Leaving *leaving)
{
	ListCell   *lc;
	bool		whole = false;
	int64		lo = PG_INT64_MAX;
	int64		hi = PG_INT64_MIN;

	foreach(lc, store_changed_list(flow->store))
	{
		StoredGroup *group = lfirst(lc);

		if (!leaves(group, leaving))
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

/* The groups that leave go; those the sink does not have yet are recomputed. */
static void
give_up(StreamFlow *flow, Leaving *leaving)
{
	log_changed(flow, leaving);
	store_delete_where(flow->store, leaves, leaving);
}

/* Warm ranges whose windows start below floor go cold, their groups with them. */
static void
cool_below(StreamFlow *flow, int64 floor_window)
{
	FlowShared *sh = flow->sh;
	int			kept = 0;

	for (int i = 0; i < sh->nwarm; i++)
	{
		WarmRange  *r = &sh->warm[i];

		if (r->wstart >= floor_window)
		{
			sh->warm[kept++] = *r;
			continue;
		}
		if (flow->store)
		{
			Leaving		range = {true, 0, NULL, r->wstart, r->wend};

			give_up(flow, &range);
		}
	}
	sh->nwarm = kept;
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
	cool_below(flow, sh->watermark_window);
	{
		Leaving		below = {false, sh->watermark_window, NULL, 0, 0};

		give_up(flow, &below);
	}
}

/*
 * The start of the oldest window the state keeps by age, given the newest
 * time it has seen: the window holding min(newest, now) - state_keep.
 * False when every window is kept.
 */
bool
stream_evict_cold_floor(StreamFlow *flow, int64 newest, int64 *floor_time)
{
	Oid			type = flow->graph->time_type;
	int64		now = window_ordinal_from_timestamptz(type, GetCurrentTransactionStartTimestamp());
	int64		x;
	int64		end;
	bool		unbounded;

	if (flowpg_state_keep_s < 0 || !flow->may_go_cold ||
		!window_ordinal_minus_seconds(type, Min(newest, now), flowpg_state_keep_s, &x))
		return false;
	window_bounds(flow->probe, x, floor_time, &end, &unbounded);
	return true;
}

/*
 * Sets a floor of the state: windows below it leave.  The cold floor
 * spares the warm windows and recomputes the changes the sink does not
 * have yet; past expire_after nothing is maintained any more.
 */
static void
raise_floor(StreamFlow *flow, bool *has, int64 *time, int64 *window, int64 to, bool cold)
{
	Leaving		below = {false, 0, cold ? flow->sh : NULL, 0, 0};

	*has = true;
	*time = to;
	*window = stream_state_window_of(flow, to);
	below.floor = *window;
	if (!cold)
		cool_below(flow, *window);
	if (flow->store == NULL || !flow->sh->loaded)
		return;
	if (cold)
		log_changed(flow, &below);
	store_delete_where(flow->store, leaves, &below);
}

/*
 * Moves the expiry cutoff and the cold floor up with time; evicts the
 * windows that fell behind them.
 */
void
stream_evict_aged(StreamFlow *flow)
{
	FlowShared *sh = flow->sh;
	int64		to;
	TimestampTz now;

	if (flow->probe == NULL)
		return;
	if (flow->entry->expire_after)
	{
		to = window_expiry_cutoff(flow->probe, flow->entry->expire_after);
		/* what an expired window had not written yet is not maintained */
		if (!sh->has_expiry || to > sh->expiry_time)
			raise_floor(flow, &sh->has_expiry, &sh->expiry_time, &sh->expiry_window, to, false);
	}
	if (sh->loaded && sh->has_newest && stream_evict_cold_floor(flow, sh->newest_time, &to) &&
		(!sh->has_cold || to > sh->cold_time))
		raise_floor(flow, &sh->has_cold, &sh->cold_time, &sh->cold_window, to, true);

	/* warm windows no late row came to for state_keep go cold again */
	now = GetCurrentTimestamp();
	for (int i = sh->nwarm - 1; i >= 0; i--)
	{
		WarmRange  *r = &sh->warm[i];

		if (now - r->touched < (int64) flowpg_state_keep_s * USECS_PER_SEC)
			continue;
		if (flow->store)
		{
			Leaving		range = {true, 0, NULL, r->wstart, r->wend};

			give_up(flow, &range);
		}
		sh->warm[i] = sh->warm[--sh->nwarm];
	}
}

/*
 * The dirty pass is about to recompute these ranges and refill the state
 * with what it reads: those below the cold floor -- late rows' windows,
 * a few at a time -- are kept warm, while the state memory has room.
 */
void
stream_evict_warm_up(StreamFlow *flow, List *ranges)
{
	FlowShared *sh = flow->sh;
	ListCell   *lc;

	if (!sh->has_cold || flow->probe == NULL || flowpg_state_keep_s < 0)
		return;
	foreach(lc, ranges)
	{
		WindowRange *r = lfirst(lc);
		int64		x;
		int			windows = 0;
		bool		fits = true;

		if (r->from_beginning || r->unbounded || r->end > sh->cold_time ||
			(sh->has_expiry && r->start < sh->expiry_time) ||
			(sh->has_watermark && r->start < sh->watermark_time) ||
			stream_evict_is_warm(sh, false, r->start, false))
			continue;
		for (x = r->start; fits && x < r->end; windows++)
		{
			int64		start;
			bool		unbounded;

			window_bounds(flow->probe, x, &start, &x, &unbounded);
			fits = !unbounded && windows < WARM_MAX_WINDOWS;
		}
		if (!fits || sh->nwarm == WARM_RANGES || !state_memory_has_room(MyDatabaseId))
			continue;
		sh->warm[sh->nwarm].start = r->start;
		sh->warm[sh->nwarm].end = r->end;
		sh->warm[sh->nwarm].wstart = stream_state_window_of(flow, r->start);
		sh->warm[sh->nwarm].wend = stream_state_window_of(flow, r->end);
		sh->warm[sh->nwarm].touched = GetCurrentTimestamp();
		sh->nwarm++;
	}
}
