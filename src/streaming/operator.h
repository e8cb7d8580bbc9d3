/*-------------------------------------------------------------------------
 *
 * operator.h
 *	  The streaming operator graph of a flow: filter -> projection (group
 *	  keys, window, aggregate arguments) -> partial aggregate, and on the
 *	  worker's side finalize -> HAVING -> sink row.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLOWPG_OPERATOR_H
#define FLOWPG_OPERATOR_H

#include "utils/relcache.h"

#include "executor/executor.h"
#include "nodes/execnodes.h"

#include "aggregate.h"
#include "catalog.h"
#include "planner.h"
#include "window.h"

/*
 * Per group: where its transition values are and what happened to it.  The
 * values are packed (a Datum per aggregate, then a flag byte per aggregate)
 * to keep the state small; group_get_trans/group_put_trans unpack them.
 */
typedef struct FlowGroup
{
	MinimalTuple key;			/* the key tuple the hash table holds (not fast_keys) */
	struct FlowGroup *next;		/* fast_keys: the table's groups, newest first */
	int64		time_lo;		/* time ordinals of the rows seen (window flows) */
	int64		time_hi;
	bool		changed;		/* not yet written to the sink */
	bool		in_sink;		/* the sink may hold a row for it */
	Datum		values[FLEXIBLE_ARRAY_MEMBER];	/* then naggs flag bytes */
} FlowGroup;

#define GROUP_TRANS_NULL	0x01
#define GROUP_TRANS_NOINIT	0x02

static inline AggTrans
group_get_trans(FlowGroup *group, int naggs, int i)
{
	uint8		flags = ((uint8 *) &group->values[naggs])[i];
	AggTrans	trans;

	trans.value = group->values[i];
	trans.isnull = (flags & GROUP_TRANS_NULL) != 0;
	trans.noinit = (flags & GROUP_TRANS_NOINIT) != 0;
	return trans;
}

static inline void
group_put_trans(FlowGroup *group, int naggs, int i, AggTrans *trans)
{
	group->values[i] = trans->value;
	((uint8 *) &group->values[naggs])[i] =
		(trans->isnull ? GROUP_TRANS_NULL : 0) | (trans->noinit ? GROUP_TRANS_NOINIT : 0);
}

/* A hash table of groups keyed by the GROUP BY columns, with their states. */
typedef struct GroupTable
{
	TupleHashTable hash;		/* keys compared with their equality functions */
	struct fastgroup_hash *fast;	/* by-value keys compared bit for bit */
	FlowGroup  *fast_groups;	/* its groups, newest first */
	AggContext *aggcxt;
	MemoryContext memory;		/* everything of the table */
	int64		ngroups;
	FlowGroup *single;			/* the one group of a query without GROUP BY */
	char	   *bump;			/* where the next FlowGroup goes */
	Size		bump_left;
} GroupTable;

typedef struct GroupIterator
{
	TupleHashIterator hash_iter;
	struct FlowGroup *fast_next;	/* fast tables: the next group of the list */
	bool		started;
	bool		single_done;
} GroupIterator;

typedef struct StreamGraph
{
	int64		flow_id;
	char	   *flow_name;		/* as it was when the graph was built, for messages */
	uint32		version;		/* hash of the stored query and settings */
	FlowPlan   *plan;
	MemoryContext memory;		/* the graph and its compiled expressions */

	/*
	 * The source columns read, in the compact row the expressions see: by
	 * attribute number of the flow's source table (never by name, which a
	 * rename changes under a cached graph).
	 */
	int			ncols;
	Oid			source_relid;
	AttrNumber *col_attnos;
	TupleDesc	row_desc;
	int			time_col;		/* its index in the row, -1 without a window */
	Oid			time_type;

	ExprContext *econtext;		/* scan tuple = row, outer tuple = group */
	TupleTableSlot *row_slot;
	ExprState  *filter;			/* WHERE; NULL when none */

	/* group keys (GROUP BY, window first when there is one) */
	int			nkeys;
	ExprState **key_exprs;
	int16	   *key_rowcols;	/* a key that is a plain column: its row column, else -1 */
	TupleDesc	key_desc;
	AttrNumber *key_cols;
	Oid		   *key_eqfuncs;
	FmgrInfo   *key_hashfns;
	Oid		   *key_collations;
	int			window_key;		/* -1 without a window */

	/*
	 * Every key is of a by-value type whose equality is identity of the
	 * value (integers, timestamps, dates, booleans, oids): groups are then
	 * found by the key values themselves, kept in the group, instead of by
	 * the equality functions over a key tuple.
	 */
	bool		fast_keys;
	WindowCache *window_cache;	/* windows of recent rows; NULL: evaluate */
	TupleTableSlot *key_slot;

	/*
	 * Some key is of variable length: a row's key may be too large for a
	 * row of the sink's unique index, which a writer's statement is refused
	 * for (key_too_large says why the evaluation failed) rather than the
	 * flow failing at its write -- for the rows it adds, not those it takes
	 * back (deleting such a row is how it goes).
	 */
	bool		varlena_keys;
	bool		refuse_large_keys;	/* set by a writer for the rows it adds */
	bool		key_too_large;

	/*
	 * aggregates: support functions and argument expressions.  The first
	 * nuser_aggs are the query's; a flow that retracts (retracts) has
	 * hidden counts after them (AggSupport.is_counter): its aggregates'
	 * inputs, and the group's rows (rows_counter, -1 when none), by which a
	 * group whose last row went leaves the sink.
	 */
	int			naggs;
	int			nuser_aggs;
	bool		retracts;
	int			rows_counter;
	AggSupport *aggs;
	bool		internal_states;	/* some state is internal: serialfn runs */
	ExprState ***agg_args;
	int16	  **arg_rowcols;	/* an argument that is a plain column: its row column, else -1 */
	ExprState **agg_filters;	/* FILTER (WHERE ...), NULL when none */
	AggTrans   *init_trans;		/* scratch for a new group */
	Datum	   *arg_values;		/* scratch for one call */
	bool	   *arg_nulls;

	/* the sink row: outputs over (keys, aggregate results) or the row */
	TupleDesc	group_desc;
	TupleTableSlot *group_slot;
	ExprState  *having;
	int			noutputs;
	ExprState **outputs;
	int16	   *output_lens;
	bool	   *output_byvals;
} StreamGraph;

/*
 * Compiles a streaming flow's graph in a new child of parent; checks the
 * EXECUTE rights of the functions as the current user (call as the owner).
 */
extern StreamGraph *graph_build(FlowEntry *entry, MemoryContext parent);
extern void graph_free(StreamGraph *graph);

/* The graph's version of a flow entry (writers tag their batches with it). */
extern uint32 graph_version(FlowEntry *entry);

/*
 * Fills the graph's row slot from a row's values and nulls (of a batch
 * chunk's layout: column_map gives each graph column's attribute number).
 */
extern void graph_load_row(StreamGraph *graph, Datum *values, bool *isnull,
						   AttrNumber *column_map);

/* The source attribute of each graph column in one table (by name). */
extern AttrNumber *graph_column_map(StreamGraph *graph, Relation rel);

/*
 * Runs the row in the row slot through filter, keys and transition
 * functions into table; returns false when the filter drops it.
 */
extern bool graph_accumulate_row(StreamGraph *graph, GroupTable *table);

/*
 * Its first half: the filter, and the group key into key_slot with the
 * row's time ordinal as a range (empty without a time); false when the
 * filter drops the row.  Then, per aggregate i, its FILTER and its
 * arguments into arg_values/arg_nulls: false when FILTER drops the row.
 */
extern bool graph_eval_row(StreamGraph *graph, int64 *time_lo, int64 *time_hi);
extern bool graph_eval_agg_args(StreamGraph *graph, int i);


/* The projected sink row of the row in the row slot (non-aggregate flows). */
extern bool graph_project_row(StreamGraph *graph, Datum *values, bool *nulls);

/*
 * Finalizes a group (its key in key_slot, its states in trans) and projects
 * its sink row; returns whether HAVING holds.
 */
extern bool graph_finalize_output(StreamGraph *graph, AggContext *cxt, AggTrans *trans,
								  Datum *values, bool *nulls);

/*
 * The group-key outputs of the group whose key is in key_slot (the others
 * NULL): what deleting its sink row needs, computed without its states --
 * a group whose rows are all gone must not run outputs like x / count(*).
 */
extern void graph_key_outputs(StreamGraph *graph, Datum *values, bool *nulls);

/*
 * One aggregate's input of a row taken back: whether its FILTER kept the
 * row, and its arguments.
 */
typedef struct AggInput
{
	bool		skip;
	Datum	   *values;
	bool	   *nulls;
} AggInput;

extern AggInput *graph_inputs_create(StreamGraph *graph);

/*
 * A row's inputs of every aggregate, evaluated after graph_eval_row (in
 * the row's memory).
 */
extern void graph_eval_inputs(StreamGraph *graph, AggInput *inputs);

extern GroupTable *group_table_create(StreamGraph *graph, MemoryContext parent);
extern void group_table_free(GroupTable *table);

/* Puts a group's key into graph->key_slot (a graph with keys). */
extern void group_load_key(StreamGraph *graph, FlowGroup *group);

/* Finds or creates the group whose key is in graph->key_slot. */
extern FlowGroup *group_lookup(StreamGraph *graph, GroupTable *table, bool create);

/* Visits every group: start with a zeroed iterator, stop at NULL. */
extern FlowGroup *group_table_next(GroupTable *table, GroupIterator *iter);

#endif							/* FLOWPG_OPERATOR_H */
