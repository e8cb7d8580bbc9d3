/*-------------------------------------------------------------------------
 *
 * stream_capture.h
 *	  The writer's side of streaming flows: the rows of each statement are
 *	  copied once for all streaming flows of the table, per
 *	  (sub)transaction, and queued for the workers when the transaction
 *	  commits.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLOWPG_STREAM_CAPTURE_H
#define FLOWPG_STREAM_CAPTURE_H

#include "utils/rel.h"
#include "utils/tuplestore.h"

#include "capture.h"


/*
 * Copies a statement's rows for the flows of takers: new_rows (inserted,
 * or an UPDATE's new versions) added, old_rows (an UPDATE's or DELETE's)
 * taken back; either may be NULL.  A flow that does not take them (it
 * cannot take rows back, the statement or the transaction is too big for
 * the queue, its worker is behind, ...) keeps taken false: the caller logs
 * the changed windows dirty instead.
 */
extern void stream_capture_statement(Relation rel, StreamTaker *takers, int ntakers,
									 Tuplestorestate *new_rows, Tuplestorestate *old_rows);

/* The same for one row (row-level capture of replica sessions). */
extern void stream_capture_row(Relation rel, StreamTaker *takers, int ntakers,
							   TupleTableSlot *new_row, TupleTableSlot *old_row);

/* Sets capture_streaming_hooks; called once, in _PG_init. */
extern void stream_capture_install_hooks(void);

/* Has the current transaction changed a source of the flow? */
extern bool stream_capture_changed(int64 flow_id);

#endif							/* FLOWPG_STREAM_CAPTURE_H */
