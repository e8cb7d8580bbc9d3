/*-------------------------------------------------------------------------
 *
 * backfill.h
 *	  Online backfill of new and replaced flows (backfill.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLOWPG_BACKFILL_H
#define FLOWPG_BACKFILL_H

#include "catalog.h"

/*
 * create_flow: the flow's sink is to be computed from its source; with
 * expire_after, from start_at on when has_start, else its whole history
 * into an empty sink, or the maintained windows of one that holds rows.
 */
extern void backfill_begin(FlowEntry *entry, bool has_start, TimestampTz start_at);

/* The flow is gone, or its backfill done. */
extern void backfill_forget(int64 flow_id);

/* Is the flow's backfill still to be completed? */
extern bool backfill_pending(int64 flow_id);

/*
 * The worker: the next piece, in the current transaction, as the flow's
 * owner; *rows_out gets the rows written.  True while pieces remain.
 */
extern bool backfill_step(FlowEntry *entry, uint64 *rows_out);

/*
 * flush_flow: the rest of the backfill, here.  Returns the rows the
 * backfill wrote, its pieces done by the worker included.
 */
extern uint64 backfill_complete(FlowEntry *entry);

/*
 * A streaming flow's first load computed the windows from end_before (a
 * time ordinal) on into its state and sink: backfill_step does the older
 * ones, in pieces.
 */
extern void backfill_set_end(int64 flow_id, int64 end_before);

#endif							/* FLOWPG_BACKFILL_H */
