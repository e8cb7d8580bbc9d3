/*-------------------------------------------------------------------------
 *
 * refresh.h
 *	  The batching refresh: recompute time windows of a flow from its source.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLOWPG_REFRESH_H
#define FLOWPG_REFRESH_H

#include "catalog.h"
#include "planner.h"
#include "progress.h"
#include "settings.h"
#include "sink.h"
#include "stats.h"
#include "window.h"

/* Window-aligned range of time ordinals [start, end). */
typedef struct WindowRange
{
	int64		start;
	int64		end;
	bool		from_beginning; /* no start: everything up to end */
	bool		unbounded;		/* no end: everything from start on */
} WindowRange;

/*
 * A run in the flow's world: its plan and window probe (NULL without a time
 * window), as its owner in a restricted security context, under its pinned
 * settings, connected to SPI.  The refresh reads the source in it, and so
 * does verify_flow.
 */
typedef struct RefreshRun
{
	FlowEntry  *entry;
	FlowPlan   *plan;
	WindowProbe *probe;
	FlowIdentity identity;
	/* a recording rule's evaluation, recorded by refresh_run_end */
	bool		recorded;
	TimestampTz recorded_tick;
} RefreshRun;

/* command: what flowpg.flow_progress says the run does */
extern void refresh_run_begin(RefreshRun *run, FlowEntry *entry, ProgressCommand command);
extern void refresh_run_end(RefreshRun *run);

/*
 * The windows a flow maintains, in its run: one range from the expiry
 * cutoff on with expire_after, NIL for all of them.
 */
extern List *refresh_maintained_ranges(RefreshRun *run);

/*
 * The windows a refresh recomputed, for a caller that keeps state of them
 * (the streaming round): ranges, or the whole flow when whole.  When open,
 * the refresh's run is still open -- as the owner, under the flow's
 * settings, connected to SPI, in the snapshot the sink was rewritten in --
 * so that the caller reads the source as the recompute did; it then calls
 * refresh_done, which ends the run and consumes the log entries.
 */
typedef struct RefreshRecomputed
{
	bool		open;
	bool		whole;
	List	   *ranges;			/* WindowRange */
	RefreshRun	run;			/* its plan and probe */
	List	   *consumed;		/* log entries, deleted by refresh_done */
} RefreshRecomputed;

/*
 * One run over the flow's dirty log: recomputes the windows it names and
 * deletes the entries it consumed, in the current transaction.  With
 * recomputed, a run that recomputed windows returns them open (above).
 */
extern RunResult refresh_dirty(FlowEntry *entry, RefreshRecomputed *recomputed);
extern void refresh_done(RefreshRecomputed *recomputed, RunResult *result);

/* Copies of the ranges without their parts before cutoff (NIL: nothing left). */
extern List *refresh_clip_ranges(List *ranges, int64 cutoff);

/* Adds "the time column is in one of the ranges" to a copy of the flow's query. */
extern void refresh_restrict_query(FlowPlan *plan, Query *query, List *ranges);

/* Recomputes the whole flow and consumes its dirty log. */
extern RunResult refresh_recompute_all(FlowEntry *entry);

/* Runs until the log entries visible now are consumed (flush_flow). */
extern RunResult refresh_flush(FlowEntry *entry);

/*
 * Recomputes the windows that intersect [start, end) of the time column (an
 * absent bound is unbounded), or the whole flow when it has no window.
 */
extern uint64 refresh_range(FlowEntry *entry, bool has_start, Datum start,
								  bool has_end, Datum end);

/*
 * The backfill's refresh, over time ordinals (window.h): the windows holding
 * lo to hi; without has_lo from the first window, without has_hi to the
 * last; null_window: the NULL window's rows deleted.  Within expire_after,
 * unless history: windows before the horizon too.
 */
extern uint64 refresh_ordinals(FlowEntry *entry, bool has_lo, int64 lo,
									 bool has_hi, int64 hi, bool null_window,
									 bool history);

/*
 * The smallest and largest time ordinals of the flow's time column in its
 * source, its number of rows and whether some have no time, as the flow's
 * owner; false when the flow has no time window or the source no time.
 * With expire_after, the smallest is from start on when has_start, and no
 * later than the horizon: true whenever there is a window.
 */
extern bool refresh_time_bounds(FlowEntry *entry, bool has_start, TimestampTz start,
							  int64 *lo, int64 *hi, int64 *rows, bool *null_times);

/* In a run: the newest time ordinal of the flow's time column; false: none. */
extern bool refresh_newest_time(RefreshRun *run, int64 *x);

/* The same as the caller, connected to SPI as the flow's owner. */
extern bool refresh_source_newest(FlowEntry *entry, Oid time_type, int64 *x);

/*
 * What a refresh executes, built as a run builds it: the flow's query
 * restricted to the ranges it recomputes, and the sink's DELETE and
 * INSERT of that query (sink.h).
 */
typedef struct RefreshStatements
{
	List	   *ranges;			/* WindowRange; NIL: the whole flow */
	char	   *select_sql;
	SinkRefreshStatements sink;
} RefreshStatements;

/*
 * In a run: the statements of a refresh of the window holding time
 * ordinal x, or (whole, or a flow without a window) of a recompute of the
 * whole flow, within expire_after.  False when x is in no window the flow
 * maintains any more.  Nothing is executed.
 */
extern bool refresh_statements(RefreshRun *run, bool whole, int64 x, RefreshStatements *out);

#endif							/* FLOWPG_REFRESH_H */
