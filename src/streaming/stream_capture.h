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

/* Feeds the inserted rows of a statement to a streaming flow. */
extern void stream_capture_rows(int64 flow_id, uint32 version, Relation rel,
								Tuplestorestate *rows);

/* The same for one inserted row (row-level capture of replica sessions). */
extern void stream_capture_row(int64 flow_id, uint32 version, Relation rel,
							   TupleTableSlot *row);

/* Has the current transaction changed a source of the flow? */
extern bool stream_capture_changed(int64 flow_id);

#endif							/* FLOWPG_STREAM_CAPTURE_H */
