/*-------------------------------------------------------------------------
 *
 * dirty_log.h
 *	  The dirty log (tables flowpg.dirty_log, a flow's own entries, and
 *	  flowpg.table_dirty_log, those the batching flows of a table share):
 *	  ranges of time values whose windows must be recomputed from the
 *	  source.  Every access to the tables goes through here.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLOWPG_DIRTY_LOG_H
#define FLOWPG_DIRTY_LOG_H

#include "nodes/pg_list.h"
#include "storage/itemptr.h"
#include "access/attnum.h"
#include "datatype/timestamp.h"

/* One entry: time ordinals lo..hi of a flow, or the whole flow. */
typedef struct DirtyEntry
{
	ItemPointerData tid;
	bool		whole;
	int64		lo;
	int64		hi;
	int64		nrows;
} DirtyEntry;

/* The commit callback, registered from _PG_init. */
extern void dirty_log_register_callbacks(void);

/*
 * Called before the commit of a transaction that logged entries for
 * flow_id (or at once for entries appended after that point): true when
 * the flow is one the hook's owner tracks, so that it hears of the commit.
 * The streaming engine sets it in _PG_init (registry_install_hooks); the
 * dirty log knows nothing of streaming slots.
 */
typedef bool (*dirty_log_commit_hook_type) (int64 flow_id);
extern PGDLLIMPORT dirty_log_commit_hook_type dirty_log_commit_hook;

/* Appends an entry in the current transaction (writers need no rights). */
extern void dirty_log_append(int64 flow_id, bool whole, int64 lo, int64 hi, int64 nrows);

/*
 * Widens the range of a flow changed by this transaction, one row at a
 * time (row-level capture); appended as one entry when it commits or
 * prepares.  whole: the row has no time to place it by.
 */
extern void dirty_log_note_row(int64 flow_id, bool whole, int64 t);

/*
 * Notes that this transaction changed a table's rows with time ordinals
 * lo..hi of its column attno (0: the flows have none there; whole: a row
 * has no time) for its batching flows; appended once, shared by the flows,
 * when it commits or prepares.
 */
extern void dirty_log_note_table(Oid relid, AttrNumber attno, const int64 *flows, int nflows,
								 bool whole, int64 lo, int64 hi, int64 nrows);

/* Has the current transaction logged anything for the flow? */
extern bool dirty_log_written_here(int64 flow_id);

/*
 * The flow's entries, lowest range first, at most limit of them, once the
 * shared rows it has not seen are claimed into them (merged per unit of
 * their time ordinals).
 */
extern List *dirty_log_read(int64 flow_id, int64 unit, int limit);

/* Deletes entries read by dirty_log_read. */
extern void dirty_log_delete(List *entries);

/* Deletes all the flow's entries visible now; *nrows gets their rows. */
extern int	dirty_log_delete_all(int64 flow_id, int64 *nrows);

/* Deletes the shared rows every flow of theirs has seen (the worker; at most once a second). */
extern void dirty_log_trim(void);

/* Deletes every entry of a flow that is dropped. */
extern void dirty_log_forget(int64 flow_id);

/* A flow with logged changes, and when the oldest was logged. */
typedef struct DirtyFlow
{
	int64		flow_id;
	TimestampTz oldest;
} DirtyFlow;

/*
 * Those of the flows (FlowSchedule) that have entries (DirtyFlow); oldest
 * is the oldest entry's time for a flow on ticks (eval_interval), any
 * entry's for the others.
 */
extern List *dirty_log_flows(List *schedules);

#endif							/* FLOWPG_DIRTY_LOG_H */
