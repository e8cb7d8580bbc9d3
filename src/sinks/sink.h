/*-------------------------------------------------------------------------
 *
 * sink.h
 *	  Sink tables: created for a flow, or checked against its output.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLOWPG_SINK_H
#define FLOWPG_SINK_H

#include "planner.h"

/*
 * How a flow's outputs meet an existing sink's columns and keys (checks,
 * casts, the projection's key), which the callers of sink.c use too.
 */
#include "sink_columns.h"

/*
 * Resolves the sink table named by rv, creating it (as the current user)
 * when missing, and checks that the flow can write it.  own_flow_id is the
 * flow being replaced, which may keep its sink.  *created tells whether the
 * table was created.
 */
extern Oid	sink_prepare(RangeVar *rv, const char *flow_name,
						 FlowPlan *plan, int64 own_flow_id, bool *created);

/*
 * The sink's TRUNCATE trigger, which makes the flow recompute: installed by
 * create_flow, removed with the sink's last flow.
 */
extern void sink_install_guard(Oid sink_relid);
extern void sink_remove_guard(Oid sink_relid);
extern bool sink_has_guard(Oid sink_relid);
/*
 * The first piece of its sink's (when writes) and its sources' own code
 * that the flow would run as owner and that trust.c's rule refuses,
 * described; NULL if none.
 */
extern char *sink_untrusted_code(Oid sink_relid, FlowPlan *plan, Oid owner, bool writes);
extern bool sink_is_guard(const char *tgname);

/*
 * Errors out unless the sink belongs to the flow's owner or to a role the
 * owner is a member of (not merely a superuser): the sink's triggers run
 * with the flow owner's rights.
 */
extern void sink_check_owner(Oid sink_relid, Oid flow_owner);

/*
 * While a flow writes its sink, errors say so (and, for a missing or
 * violated unique index, what the sink needs).
 */
typedef struct SinkWriteContext
{
	ErrorContextCallback callback;
	Oid			sink_relid;
	const char *sink_name;		/* looked up in advance: no catalog access in the callback */
	FlowPlan   *plan;
	const char *flow_name;
	const char *key_columns;	/* a projection's key (sink_projection_key), NULL: none */
} SinkWriteContext;

extern void sink_write_context_push(SinkWriteContext *cxt, Oid sink_relid,
									FlowPlan *plan, const char *flow_name);
extern void sink_write_context_pop(SinkWriteContext *cxt);

/*
 * Rows for the sink, column by column: values[o][r] is output o of row r.
 * The streaming engine collects them and writes them in one statement.
 */
typedef struct SinkRows
{
	int			nrows;
	int			capacity;
	int			ncols;
	Datum	  **values;
	bool	  **nulls;
} SinkRows;

extern SinkRows *sink_rows_create(int ncols);
extern void sink_rows_add(SinkRows *rows, FlowPlan *plan, Datum *values, bool *nulls);

/*
 * Writes rows into the sink, as the current user, connected to SPI:
 * upsert on the group key writing only rows whose values changed, delete
 * by group key, or append (flows without aggregates).
 */
extern void sink_upsert(Oid sink_relid, FlowPlan *plan, SinkRows *rows);
extern void sink_delete_groups(Oid sink_relid, FlowPlan *plan, SinkRows *rows);
extern void sink_append(Oid sink_relid, FlowPlan *plan, SinkRows *rows);

/* A range of values of the sink's window column: [start, end). */
typedef struct SinkWindowRange
{
	bool		has_start;
	Datum		start;
	bool		has_end;
	Datum		end;
} SinkWindowRange;

/*
 * The batching refresh: deletes the sink rows of the windows in ranges (all
 * when whole) and inserts the rows of query (the flow's query restricted to
 * them); returns the rows inserted.  As the current user, connected to SPI.
 */
extern uint64 sink_replace_windows(Oid sink_relid, FlowPlan *plan, const char *flow_name,
								   List *ranges, bool whole, const char *query);

/*
 * The two statements sink_replace_windows runs, built without running them
 * (explain_flow EXPLAINs them): the DELETE, whose parameters $1.. are the
 * ranges' bounds, and the INSERT of query's rows.
 */
typedef struct SinkRefreshStatements
{
	char	   *delete_sql;
	int			nargs;
	Oid		   *argtypes;
	Datum	   *args;
	char	   *insert_sql;
	/* a shared sink: delete_sql sets this flow's columns NULL; this deletes rows left empty */
	char	   *cleanup_sql;
} SinkRefreshStatements;

extern void sink_refresh_statements(Oid sink_relid, FlowPlan *plan, List *ranges, bool whole,
									const char *query, SinkRefreshStatements *out);

/*
 * A recording rule's tick (refresh.c): replaces the rows of the current tick
 * (those whose tick keys are this tick's) by the rows of query (the flow's
 * query, evaluated at the tick) and deletes, when prune, the rows whose
 * now() key (plan->record_key_output) is before cutoff, keeping every
 * other row: earlier ticks' groups stay.  Returns the rows written.  As
 * the current user, connected to SPI, now() set to the tick.
 */
extern uint64 sink_record_tick(Oid sink_relid, FlowPlan *plan, const char *flow_name,
							   const char *query, bool prune, TimestampTz cutoff);

/* Its statements, unrun: $1 of delete_sql is the cutoff when prune. */
extern void sink_record_statements(Oid sink_relid, FlowPlan *plan, const char *query,
								   bool prune, TimestampTz cutoff,
								   SinkRefreshStatements *out);

/* The condition "alias's row belongs to the current tick" of a recording rule. */
extern char *sink_tick_condition(Oid sink_relid, FlowPlan *plan, const char *alias);

/* Deletes the sink rows whose window is NULL (a backfill's first piece). */
extern void sink_delete_null_window(Oid sink_relid, FlowPlan *plan, const char *flow_name);

#endif							/* FLOWPG_SINK_H */
