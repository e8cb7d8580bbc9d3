/*-------------------------------------------------------------------------
 *
 * stream_capture.h
 *	  The writer's side of streaming flows: rows of a statement go through
 *	  the flow's operator graph into per-(sub)transaction partial results,
 *	  which are queued for the worker when the transaction commits.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLOWPG_STREAM_CAPTURE_H
#define FLOWPG_STREAM_CAPTURE_H

#include "utils/rel.h"
#include "utils/tuplestore.h"

#include "catalog.h"

/*
 * Feeds a statement's rows to a streaming flow: new_rows (inserted, or an
 * UPDATE's new versions) added, old_rows (an UPDATE's or DELETE's) taken
 * back; either may be NULL.  False when the flow cannot take old rows back
 * (plan->retract_refusal): nothing was done, and the caller logs the
 * changed windows dirty instead.
 */
extern bool stream_capture_statement(int64 flow_id, uint32 version, Relation rel,
									 Tuplestorestate *new_rows, Tuplestorestate *old_rows);

/* The same for one row (row-level capture of replica sessions). */
extern bool stream_capture_row(int64 flow_id, uint32 version, Relation rel,
							   TupleTableSlot *new_row, TupleTableSlot *old_row);

/* Has the current transaction changed a source of the flow? */
extern bool stream_capture_changed(int64 flow_id);

#endif							/* FLOWPG_STREAM_CAPTURE_H */
