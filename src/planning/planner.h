/*-------------------------------------------------------------------------
 *
 * planner.h
 *	  Turning a flow's SELECT into its operator graph.
 *
 * planner.c plans (parse, analyse, graph, engine choice); query_check.c
 * holds the checks and walks over the analysed query tree (shape, rights,
 * tables and columns read).
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLOWPG_PLANNER_H
#define FLOWPG_PLANNER_H

#include "nodes/parsenodes.h"

#include "catalog.h"
#include "utils/array.h"
#include "utils/timestamp.h"

typedef enum FlowMode
{
	FLOW_MODE_AUTO,
	FLOW_MODE_STREAMING,
	FLOW_MODE_BATCHING
} FlowMode;

typedef struct FlowOutput
{
	char	   *name;
	Oid			type;
	int32		typmod;
	Oid			collation;
	bool		is_group_key;
	bool		is_tick_key;	/* a recording rule's key: a function of the tick alone */
} FlowOutput;

/*
 * How streaming takes back a row an UPDATE or DELETE removed from a group:
 * the inverse transition function undoes it in the state (exact); an
 * extreme (min/max: aggsortop) is unchanged unless the row held it, when
 * the group is recomputed; without either the flow's changed windows are
 * recomputed from the source, as a batching flow's are.
 */
typedef enum FlowRetract
{
	FLOW_RETRACT_NONE,
	FLOW_RETRACT_INVERSE,
	FLOW_RETRACT_EXTREME
} FlowRetract;

/* An aggregate call of the flow and its support functions from pg_aggregate. */
typedef struct FlowAggregate
{
	Aggref	   *aggref;
	Oid			transfn;
	Oid			finalfn;		/* InvalidOid when none */
	Oid			combinefn;		/* partial states merge: streaming needs it */
	Oid			serialfn;		/* internal states cross processes with these */
	Oid			deserialfn;
	Oid			transtype;
	/* the moving-aggregate variant, whose inverse undoes a row (deletes) */
	Oid			mtransfn;		/* InvalidOid when the aggregate has none */
	Oid			minvtransfn;
	Oid			mfinalfn;
	Oid			mtranstype;
	char		finalmodify;	/* aggfinalmodify */

	/*
	 * retract: how a removed row is taken back.  moving: the functions
	 * above are the moving-aggregate variant's (aggmtransfn, its state and
	 * final function, with the combine and serial functions of the
	 * aggregate whose normal state that is): sum(int4) keeps a count with
	 * its sum so that its inverse knows when no input is left.
	 */
	FlowRetract retract;
	bool		moving;
	Oid			sortop;			/* FLOW_RETRACT_EXTREME: aggsortop */
} FlowAggregate;

/*
 * The operator graph of a flow: source -> filter (jointree quals) ->
 * group keys / window -> aggregates -> HAVING -> outputs.  Everything is
 * derived from the analysed Query, which is what the catalog stores.
 */
typedef struct FlowPlan
{
	Query	   *query;			/* analysed, not rewritten */
	List	   *source_relids;	/* OIDs of every table read, no duplicates */
	bool		is_aggregate;	/* GROUP BY or aggregates present */
	int			noutputs;
	FlowOutput *outputs;		/* the non-junk target list */
	List	   *aggregates;		/* FlowAggregate of each Aggref in the target
								 * list and HAVING */

	/* the time window, when a GROUP BY expression is one */
	Expr	   *window_expr;	/* as in the query */
	int			window_output;	/* its index in outputs */
	Index		time_varno;		/* range table index of the time column */
	Oid			time_relid;
	AttrNumber	time_attno;
	Oid			time_type;
	char	   *window_text;	/* deparsed */

	/* flowpg.now(): the flow must run on EVAL INTERVAL ticks */
	bool		uses_now;

	/*
	 * A recording rule: a GROUP BY key calls now().  Each tick upserts the
	 * groups it computes and keeps those of earlier ticks; record_key_output
	 * is the first such key of a time type (expire_after compares it with
	 * the tick's time), -1 when none is.
	 */
	bool		recording_rule;
	int			record_key_output;
	/* a recording rule's steps (a TQL flow): its tick's rows are those of [start, end] */
	Expr	   *tick_steps_start;
	Expr	   *tick_steps_end;
	Expr	   *tick_steps_step;
	int			tick_steps_output;	/* -1: none */

	/* why streaming cannot run the query; NULL when it can */
	char	   *streaming_refusal;

	/*
	 * Why streaming recomputes the windows an UPDATE or DELETE changed
	 * instead of retracting the old rows; NULL when it retracts them.
	 */
	char	   *retract_refusal;
} FlowPlan;

/*
 * window_output: which output is the time window -- -1 none, an index into
 * outputs, or FLOW_WINDOW_FIND to find it by probing the GROUP BY
 * expressions for monotonicity (which runs their functions).
 */
#define FLOW_WINDOW_FIND (-2)

/* Parses, analyses and validates a flow's query as the current user. */
/*
 * Where a flow's query comes from when it is part of a GreptimeDB statement
 * (flowpg.execute): errors point into the statement, and unnamed outputs
 * are named as GreptimeDB names them.
 */
typedef struct FlowQuerySource
{
	const char *statement;
	int			offset;			/* characters before the query */
	bool		greptime_names;
	/* the sink exists: an output's name too long to be a column is cut (matched by position) */
	bool		sink_exists;
} FlowQuerySource;

/*
 * vet_flow_name: flowpg, not the owner, resolves the query now (a pending
 * flow starting): every object it resolves to must be trusted (trust.c).
 */
extern FlowPlan *flow_plan_query_text(const char *query_text, int window_output,
									  const FlowQuerySource *source,
									  const char *vet_flow_name);

/*
 * The same for a restored flow, whose owner's rights may not be restored
 * yet (pg_restore grants last): they are checked before it runs.
 */
extern FlowPlan *flow_plan_restored_text(const char *query_text, int window_output);

/* Rebuilds the graph from a stored (already validated) query tree. */
extern FlowPlan *flow_plan_query_tree(Query *query, int window_output);

/* The same for a flow of the catalog, with its stored window. */
extern FlowPlan *flow_plan_for_entry(FlowEntry *entry);

/* The canonical text of the query: deparsed, every name qualified. */
extern char *flow_plan_deparse(Query *query, ArrayType *settings, Oid owner);

/*
 * Picks the engine for the requested mode and checks the intervals; errors
 * out explaining why when the request cannot be met.
 */
extern FlowMode flow_plan_choose_mode(FlowPlan *plan, FlowMode requested,
									  Interval *expire_after,
									  Interval *eval_interval);

/* A compiled probe of the flow's window expression (which must exist). */
struct WindowProbe;
extern struct WindowProbe *flow_plan_window_probe(FlowPlan *plan);

/*
 * An expression of the query deparsed as written, when it reads one table
 * (or none) of the query's own level; NULL otherwise.
 */
extern char *flow_plan_expr_text(Query *query, Expr *expr);

extern FlowMode flow_mode_from_name(const char *name);
extern const char *flow_mode_name(FlowMode mode);

/* query_check.c: checks and walks over the query tree */

/*
 * Errors out unless the query has the shape of a flow: a SELECT with no set
 * operations, ORDER BY, LIMIT, DISTINCT, window functions, recursive or
 * data-modifying WITH, temporary objects or volatile functions.
 */
extern void flow_plan_check_shape(Query *query);

/* The RTE_RELATION range table entries of every query level. */
extern List *flow_plan_relations(Query *query);

/* May the current user read what the plan reads? */
extern bool flow_plan_owner_can_read(FlowPlan *plan);

/*
 * Errors out unless the current user may run the plan as a query: SELECT
 * on the columns it reads, EXECUTE on the functions and aggregates it calls.
 */
extern void flow_plan_check_rights(FlowPlan *plan);

/* Do row-level security policies filter what the current user reads? */
extern bool flow_plan_uses_row_security(FlowPlan *plan);

/*
 * Calls visit for every Var of the query (at any level) that reads a
 * column of a table, with that table's range table entry; stops and
 * returns true as soon as visit does.
 */
typedef bool (*FlowColumnVisitor) (Var *var, RangeTblEntry *rte, void *arg);
extern bool flow_plan_walk_columns(Query *query, FlowColumnVisitor visit, void *arg);

/* Does the query read the table without ONLY (its children too)? */
extern bool flow_plan_reads_descendants(Query *query, Oid relid);

/* How many range table entries, at any query level, read the table. */
extern int	flow_plan_count_relation(Query *query, Oid relid);

/*
 * Refuses (54001, naming the flow) a query whose planning or executor set-up
 * exhausts the stack, as its owner under its settings: every run would fail.
 * Other errors of the planning are raised as they are.
 */
extern void flow_plan_check_evaluable(const char *query, Oid owner, ArrayType *settings,
									  const char *flow_name);

/* query_check.c: is this FROM item a recording rule's steps (generate_series over now())? */
extern bool flow_rte_is_tick_steps(RangeTblEntry *rte);

#endif							/* FLOWPG_PLANNER_H */
