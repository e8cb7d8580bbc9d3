/*-------------------------------------------------------------------------
 *
 * batch.h
 *	  The batching refresh: recompute time windows of a flow from its source.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLOWPG_BATCH_H
#define FLOWPG_BATCH_H

#include "catalog.h"

typedef struct BatchResult
{
	uint64		rows_out;		/* sink rows written */
	int64		rows_in;		/* source rows the consumed log entries covered */
	int			log_entries;	/* dirty log entries consumed */
	bool		more_pending;	/* the log held more than one run may take */
	int64		window_usecs;	/* width of the flow's current window, 0 if none */
} BatchResult;

/*
 * One run over the flow's dirty log: recomputes the windows it names and
 * deletes the entries it consumed, in the current transaction.
 */
extern BatchResult batch_refresh_dirty(FlowEntry *entry);

/* Runs until the log entries visible now are consumed (flush_flow). */
extern BatchResult batch_flush(FlowEntry *entry);

/*
 * Recomputes the windows that intersect [start, end) of the time column (an
 * absent bound is unbounded), or the whole flow when it has no window.
 */
extern uint64 batch_refresh_range(FlowEntry *entry, bool has_start, Datum start,
								  bool has_end, Datum end);

/* Serializes refreshes of one flow until the end of the transaction. */
extern void batch_lock_flow(int64 flow_id);

#endif							/* FLOWPG_BATCH_H */
