/*-------------------------------------------------------------------------
 *
 * sink_columns.h
 *	  How a flow's outputs meet an existing sink table's columns and keys:
 *	  matching, assignment casts, key indexes.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLOWPG_SINK_COLUMNS_H
#define FLOWPG_SINK_COLUMNS_H

#include "lib/stringinfo.h"
#include "nodes/execnodes.h"

#include "planner.h"

/* GreptimeDB's time index of sinks without a time window: flowpg writes the epoch. */
#define SINK_TS_PLACEHOLDER "__ts_placeholder"

/*
 * GreptimeDB's matching of an existing sink's columns (flowpg.execute):
 * outputs not named after a sink column are matched by position and
 * renamed after their column in the plan.  Returns "output AS column, ..."
 * for those, NULL when all matched by name; errors out when they cannot
 * be matched.
 */
extern char *sink_match_by_position(Oid sink_relid, FlowPlan *plan);

/* Checks an existing sink against the flow's output columns. */
extern void sink_check_columns(Oid sink_relid, FlowPlan *plan);

/* The outputs' names, quoted and comma-separated, for messages. */
extern char *sink_output_names_text(FlowPlan *plan);

/*
 * Refuses a unique index about to be made on a projection's sink (its
 * IndexElems) when it could become the flow's key and merge keys.
 */
extern void sink_check_index_columns(Oid sink_relid, FlowPlan *plan, List *index_params);

/*
 * Has the sink a unique index the flow can write it by (or needs none),
 * other than except_index?
 */
extern bool sink_has_key_index(Oid sink_relid, FlowPlan *plan, Oid except_index);

/*
 * The key a flow without aggregates keeps one row per key of (the last
 * written wins): a unique index of the sink over columns the flow writes.
 * false (index InvalidOid) when the sink has none: rows are appended.
 */
typedef struct SinkKey
{
	Oid			index;
	bool	   *is_key;			/* per output of the flow */
	bool		placeholder;	/* __ts_placeholder, which flowpg fills, is a key column too */
	bool		nulls_distinct; /* rows with a NULL key never conflict: all are kept */
	char	   *columns;		/* the index's columns, for messages */
} SinkKey;

extern bool sink_projection_key(Oid sink_relid, FlowPlan *plan, Oid except_index, SinkKey *key);

/*
 * A value of output "output" as the sink column holds it: converted as
 * INSERT would (an assignment cast), under the settings in force.
 */
extern Datum sink_convert_value(Oid sink_relid, FlowPlan *plan, int output, Datum value,
								Oid *type);

/*
 * How the rows of a write are converted for the sink: per output, the
 * sink column's type and the compiled assignment coercion (NULL: the value
 * is written as it is).
 */
typedef struct SinkTarget
{
	Oid		   *types;
	int32	   *typmods;
	ExprState **coerce;
	ExprContext *econtext;
} SinkTarget;

extern SinkTarget *sink_target(Oid sink_relid, FlowPlan *plan);
extern void sink_target_free(SinkTarget *target);

/* Output c's value as the sink column holds it (in the current memory context). */
extern Datum sink_target_convert(SinkTarget *target, int c, Datum value, bool *isnull);

/* sink_keys.c: output's value converted as INSERT converts it into (type, typmod); NULL: no cast */
extern Node *sink_assignment_coercion(FlowOutput *out, Oid type, int32 typmod);

/* sink_keys.c: can the conversion of key output "output" never make two keys one? */
extern bool sink_key_conversion_keeps_keys(Node *coerce, FlowPlan *plan, int output,
										   const char **why);

/* sink_keys.c: does a column under collation keep the output's keys apart? */
extern bool sink_key_collation_keeps_keys(Oid collation, Oid output_collation);

/* A relation's schema-qualified, quoted name. */
extern char *sink_qualified_relation_name(Oid relid);

/* Is name one of the flow's outputs? */
extern bool sink_is_output(FlowPlan *plan, const char *name);

/* Does flowpg fill the sink's update_at: it has one that no output writes. */
extern bool sink_fills_update_at(Oid sink_relid, FlowPlan *plan);

/* Has the flow group keys? */
extern bool sink_has_group_keys(FlowPlan *plan);

/*
 * The group key columns, quoted and comma-separated, the time window first
 * (the order of the unique index flowpg creates); as text, for messages.
 */
extern void sink_append_group_columns(StringInfo buf, FlowPlan *plan);
extern char *sink_group_columns_text(FlowPlan *plan);

/* Does ON CONFLICT on the group keys name __ts_placeholder too? */
extern bool sink_conflict_on_placeholder(Oid sink_relid, FlowPlan *plan);

#endif							/* FLOWPG_SINK_COLUMNS_H */
