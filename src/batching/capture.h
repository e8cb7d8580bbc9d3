/*-------------------------------------------------------------------------
 *
 * capture.h
 *	  Where rows are captured: statement triggers on source tables that log
 *	  the changed time range of each flow in the dirty log.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLOWPG_CAPTURE_H
#define FLOWPG_CAPTURE_H

#include "executor/tuptable.h"
#include "utils/rel.h"
#include "utils/tuplestore.h"

#include "catalog.h"

/* A streaming flow of the table a statement's rows may go to. */
typedef struct StreamTaker
{
	int64		flow_id;
	uint32		version;
	bool		taken;			/* out: it took the rows */
} StreamTaker;

/*
 * What the capture triggers need of the streaming engine, which sits above
 * this layer and registers them in _PG_init (stream_capture_install_hooks).
 * Until it has, or without shared memory (flowpg not preloaded), streaming
 * flows are captured as batching ones: their changed windows are logged.
 */
typedef struct CaptureStreamingHooks
{
	/* is streaming's shared memory there? */
	bool		(*available) (void);
	/* the version of the flow's compiled graph that rows are shipped for */
	uint32		(*version_of) (FlowEntry *flow);
	/* stream_capture_statement and stream_capture_row (stream_capture.h) */
	void		(*capture_statement) (Relation rel, StreamTaker *takers, int ntakers,
									  Tuplestorestate *new_rows,
									  Tuplestorestate *old_rows);
	void		(*capture_row) (Relation rel, StreamTaker *takers, int ntakers,
								TupleTableSlot *new_row, TupleTableSlot *old_row);
} CaptureStreamingHooks;

extern PGDLLIMPORT const CaptureStreamingHooks *capture_streaming_hooks;

/* Installs flowpg's capture triggers on a source table unless present. */
extern void capture_install(Oid relid);

/* Removes them when no flow reads the table any more. */
extern void capture_remove_if_unused(Oid relid);

/* Does a flow read this table, or an ancestor it inherits from? */
extern bool capture_table_has_flows(Oid relid);

/*
 * The table's rows leave the flows that read it through an ancestor
 * (DROP TABLE, NO INHERIT): those flows are recomputed as a whole.
 */
extern void capture_log_inherited(Oid relid);

/* The ancestors of a table: partitioned tables and inheritance parents. */
extern List *capture_ancestors(Oid relid);

/*
 * Is the table's trigger of this name one of flowpg's own (by its function,
 * not its name: a user's trigger may be called anything)?
 */
extern bool capture_is_flowpg_trigger(Oid relid, const char *tgname);

/* Does the table carry flowpg's capture triggers? */
extern bool capture_has_triggers(Oid relid);

/* Does it carry every one of them (a restore may be half way)? */
extern bool capture_triggers_complete(Oid relid);

/*
 * The tgenabled a capture trigger of this name must keep ('\0': not one
 * of flowpg's).
 */
extern char capture_trigger_state(const char *tgname);

/* Removes capture triggers that serve no flow (detached partitions). */
extern void capture_sweep(void);

/* Forgets cached flow lists; called when the catalog changes. */
extern void capture_invalidate_catalog(void);

#endif							/* FLOWPG_CAPTURE_H */
