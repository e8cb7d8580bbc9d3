/*-------------------------------------------------------------------------
 *
 * planner.c
 *	  Where a flow is planned: its SELECT becomes an operator graph.
 *
 * The query is parsed and analysed by PostgreSQL's own parser and analyser
 * as the calling user, then checked: a flow is a GROUP BY (or a plain
 * filter and projection) over tables, with no ORDER BY, LIMIT, window
 * functions, set-returning functions or volatile functions.  The graph
 * names the source tables, the group keys, the time window (the GROUP BY
 * expression over one time or integer column, verified monotonic by
 * probing) and the aggregates from pg_aggregate, and records whether the
 * streaming engine can run it.  The shape and rights checks and the walks
 * over the query tree are in query_check.c.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/namespace.h"
#include "catalog/pg_aggregate.h"
#include "catalog/pg_class.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "parser/analyze.h"
#include "parser/parser.h"
#include "parser/parsetree.h"
#include "rewrite/rewriteManip.h"
#include "utils/acl.h"
#include "utils/regproc.h"
#include "utils/rls.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/ruleutils.h"
#include "utils/syscache.h"
#include "utils/varlena.h"

#include "dialect.h"
#include "eval_tick.h"
#include "first_last.h"
#include "planner.h"
#include "retract_plan.h"
#include "settings.h"
#include "trust.h"
#include "subxact.h"
#include "window.h"

FlowMode
flow_mode_from_name(const char *name)
{
	if (strcmp(name, "auto") == 0)
		return FLOW_MODE_AUTO;
	if (strcmp(name, "streaming") == 0)
		return FLOW_MODE_STREAMING;
	if (strcmp(name, "batching") == 0)
		return FLOW_MODE_BATCHING;
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("invalid flow mode \"%s\"", name),
			 errhint("Valid modes are \"auto\", \"streaming\" and \"batching\".")));
	return FLOW_MODE_AUTO;		/* keep compiler quiet */
}

const char *
flow_mode_name(FlowMode mode)
{
	switch (mode)
	{
		case FLOW_MODE_STREAMING:
			return "streaming";
		case FLOW_MODE_BATCHING:
			return "batching";
		default:
			return "auto";
	}
}

static bool
aggref_walker(Node *node, List **aggrefs)
{
	if (node == NULL)
		return false;
	if (IsA(node, Aggref))
	{
		*aggrefs = lappend(*aggrefs, node);
		return false;			/* aggregates cannot nest */
	}
	return expression_tree_walker(node, aggref_walker, (void *) aggrefs);
}


char *
flow_plan_expr_text(Query *query, Expr *expr)
{
	List	   *vars;
	Var		   *first;
	RangeTblEntry *rte;
	ListCell   *lc;

	/* (a subquery's own tables are not in this query's range table) */
	if (checkExprHasSubLink((Node *) expr))
		return NULL;
	vars = pull_var_clause((Node *) expr, PVC_RECURSE_AGGREGATES);
	first = vars ? linitial_node(Var, vars) : NULL;
	foreach(lc, vars)
	{
		Var		   *var = lfirst_node(Var, lc);

		if (var->varno != first->varno || var->varlevelsup != 0)
			return NULL;
	}
	if (first == NULL)
		return deparse_expression((Node *) expr, NIL, false, false);
	rte = rt_fetch(first->varno, query->rtable);
	if (rte->rtekind != RTE_RELATION)
		return NULL;
	expr = copyObject(expr);
	ChangeVarNodes((Node *) expr, first->varno, 1, 0);
	return deparse_expression((Node *) expr,
							  deparse_context_for(get_rel_name(rte->relid), rte->relid),
							  false, false);
}

/*
 * Deparses an expression of the query for a message.  Expressions over a
 * single table are shown as written; others by their position.
 */
static char *
expr_text(Query *query, Expr *expr, int position)
{
	char	   *text = flow_plan_expr_text(query, expr);

	return text ? text : psprintf("number %d", position);
}

/* Names and types of the output columns; GROUP BY keys must be among them. */
static void
plan_outputs(FlowPlan *plan)
{
	Query	   *query = plan->query;
	ListCell   *lc;
	int			n = 0;

	plan->outputs = palloc0(sizeof(FlowOutput) * list_length(query->targetList));
	foreach(lc, query->targetList)
	{
		TargetEntry *tle = lfirst_node(TargetEntry, lc);
		FlowOutput *out;

		if (tle->resjunk)
			continue;
		if (tle->resname == NULL || strcmp(tle->resname, "?column?") == 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
					 errmsg("output column %d of the flow's query has no name", tle->resno),
					 errhint("Name it with AS, for example \"... AS total\".")));
		for (int i = 0; i < n; i++)
			if (strcmp(plan->outputs[i].name, tle->resname) == 0)
				ereport(ERROR,
						(errcode(ERRCODE_DUPLICATE_COLUMN),
						 errmsg("output column name \"%s\" is used more than once", tle->resname),
						 errhint("Give each output column its own name with AS.")));
		out = &plan->outputs[n++];
		out->name = pstrdup(tle->resname);
		out->type = exprType((Node *) tle->expr);
		out->typmod = exprTypmod((Node *) tle->expr);
		out->collation = exprCollation((Node *) tle->expr);
		out->is_group_key = tle->ressortgroupref != 0 &&
			get_sortgroupref_clause_noerr(tle->ressortgroupref, query->groupClause) != NULL;
		if (out->type == UNKNOWNOID || out->type == RECORDOID)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
					 errmsg("output column \"%s\" has pseudo-type %s",
							out->name, format_type_be(out->type)),
					 errhint("Cast it to a concrete type.")));
	}
	plan->noutputs = n;
	if (n == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
				 errmsg("a flow's query must have at least one output column")));

	n = 0;
	foreach(lc, query->groupClause)
	{
		SortGroupClause *sgc = lfirst_node(SortGroupClause, lc);
		TargetEntry *tle = get_sortgroupclause_tle(sgc, query->targetList);

		n++;
		if (tle->resjunk)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
					 errmsg("GROUP BY expression %s is not in the select list",
							expr_text(query, tle->expr, n)),
					 errdetail("The sink table holds one row per group, keyed by every GROUP BY expression."),
					 errhint("Add the expression to the select list with an alias.")));
	}
}

/*
 * A recording rule: a batching flow on ticks with a GROUP BY key that is a
 * function of the tick alone -- it calls now() (after the dialect,
 * flowpg.now(): the tick's time) and reads no column and no subquery, as
 * date_trunc('minute', now()).  Each tick's groups are its own; the sink
 * keeps those of earlier ticks (refresh.c).  A key that mixes now() with a
 * column (ts > now() - interval '1 hour') is a sliding window over the
 * source, not a tick: its values recur at every tick, so such a flow is
 * recomputed whole.  Only keys of the flow's own query count: a subquery's
 * output that is derived from now() is a column like any other.
 */
static void
plan_recording_rule(FlowPlan *plan)
{
	Query	   *query = plan->query;
	ListCell   *lc;
	int			output = 0;

	plan->recording_rule = false;
	plan->record_key_output = -1;
	plan->tick_steps_output = -1;
	if (!plan->uses_now)
		return;
	foreach(lc, query->targetList)
	{
		TargetEntry *tle = lfirst_node(TargetEntry, lc);
		FlowOutput *out;
		Oid			type;

		if (tle->resjunk)
			continue;
		out = &plan->outputs[output++];
		/* a step of the tick (TQL): generate_series over now(), its column as it is */
		if (out->is_group_key && IsA(tle->expr, Var) && ((Var *) tle->expr)->varlevelsup == 0 &&
			plan->tick_steps_output < 0 &&
			flow_rte_is_tick_steps(rt_fetch(((Var *) tle->expr)->varno, query->rtable)))
		{
			FuncExpr   *steps = (FuncExpr *) linitial_node(RangeTblFunction,
														   rt_fetch(((Var *) tle->expr)->varno,
																	query->rtable)->functions)->funcexpr;

			out->is_tick_key = true;
			plan->recording_rule = true;
			plan->tick_steps_output = output - 1;
			plan->tick_steps_start = linitial(steps->args);
			plan->tick_steps_end = lsecond(steps->args);
			plan->tick_steps_step = lthird(steps->args);
			if (plan->record_key_output < 0)
				plan->record_key_output = output - 1;
			continue;
		}
		if (!out->is_group_key ||
			!dialect_expr_uses_now((Node *) tle->expr) ||
			contain_var_clause((Node *) tle->expr) ||
			checkExprHasSubLink((Node *) tle->expr))
			continue;
		out->is_tick_key = true;
		plan->recording_rule = true;
		type = getBaseType(out->type);
		if (plan->record_key_output < 0 &&
			(type == TIMESTAMPTZOID || type == TIMESTAMPOID || type == DATEOID))
			plan->record_key_output = output - 1;
	}
}

/* A GROUP BY expression that might be the time window. */
typedef struct WindowCandidate
{
	Expr	   *expr;			/* join aliases flattened */
	Var		   *var;			/* the one column it reads */
	int			output;			/* its index in outputs */
} WindowCandidate;

static void
set_window(FlowPlan *plan, WindowCandidate *cand)
{
	RangeTblEntry *rte = rt_fetch(cand->var->varno, plan->query->rtable);

	plan->window_expr = cand->expr;
	plan->window_output = cand->output;
	plan->time_varno = cand->var->varno;
	plan->time_relid = rte->relid;
	plan->time_attno = cand->var->varattno;
	plan->time_type = cand->var->vartype;
	plan->window_text = expr_text(plan->query, cand->expr, 0);
}

static void
clear_window(FlowPlan *plan)
{
	plan->window_expr = NULL;
	plan->window_output = -1;
	plan->time_varno = 0;
	plan->time_relid = InvalidOid;
	plan->time_attno = InvalidAttrNumber;
	plan->time_type = InvalidOid;
	plan->window_text = NULL;
}

/*
 * Is the window set in plan non-decreasing in its column?  Probing runs the
 * expression, which may fail on values it never meets in practice (a key
 * such as 100 / (shop_id - 5)): an error makes it an ordinary key, in a
 * subtransaction of its own so that nothing of it stays.
 */
typedef struct MonotonicCheck
{
	FlowPlan   *plan;
	bool		monotonic;
} MonotonicCheck;

static void
check_monotonic(void *arg)
{
	MonotonicCheck *check = (MonotonicCheck *) arg;
	int64		x1;
	int64		x2;

	check->monotonic = !window_find_decrease(flow_plan_window_probe(check->plan),
											 check->plan->window_text, 1, 0, &x1, &x2);
}

static bool
window_is_monotonic(FlowPlan *plan)
{
	MonotonicCheck check = {plan, false};
	ErrorData  *edata = subxact_run(check_monotonic, &check);

	if (edata == NULL)
		return check.monotonic;

	/*
	 * Only what the values make of it (division by zero, out of range, a
	 * NULL window) says the expression is no window; anything else (a
	 * cancel, a lock timeout, memory) is raised.
	 */
	if (ERRCODE_TO_CATEGORY(edata->sqlerrcode) != ERRCODE_DATA_EXCEPTION &&
		edata->sqlerrcode != ERRCODE_INVALID_OBJECT_DEFINITION)
		ReThrowError(edata);
	ereport(DEBUG1,
			(errmsg("GROUP BY expression %s is not a time window: %s",
					plan->window_text, edata->message)));
	FreeErrorData(edata);
	return false;
}

/*
 * The time window: the first GROUP BY expression over exactly one column of
 * a time type that is non-decreasing in it, else the first such computed
 * expression over one integer column (an epoch).  Any other GROUP BY
 * expression -- a bare integer column, shop_id % 4, extract(dow FROM ts) --
 * is an ordinary key.  window_output FLOW_WINDOW_FIND probes the candidates
 * (which runs their functions); otherwise it is the choice made then (-1:
 * none), as stored in the catalog.
 */
static void
plan_window(FlowPlan *plan, int window_output)
{
	Query	   *query = plan->query;
	ListCell   *lc;
	List	   *time_candidates = NIL;
	List	   *int_candidates = NIL;
	Expr	   *bad_candidate = NULL;
	Var		   *bad_var = NULL;
	int			output = 0;

	clear_window(plan);
	foreach(lc, query->targetList)
	{
		TargetEntry *tle = lfirst_node(TargetEntry, lc);
		WindowCandidate *cand;
		Node	   *expr;
		List	   *vars;
		Var		   *var;

		if (tle->resjunk)
			continue;
		output++;
		if (!plan->outputs[output - 1].is_group_key)
			continue;
		expr = flatten_join_alias_vars(query, (Node *) tle->expr);
		if (checkExprHasSubLink(expr))
			continue;			/* a subquery is no window */
		vars = pull_var_clause(expr, 0);
		if (list_length(vars) < 1)
			continue;
		var = linitial_node(Var, vars);
		for (int i = 1; i < list_length(vars); i++)
		{
			Var		   *other = list_nth_node(Var, vars, i);

			if (other->varno != var->varno || other->varattno != var->varattno)
			{
				var = NULL;
				break;
			}
		}
		if (var == NULL || var->varlevelsup != 0 ||
			rt_fetch(var->varno, query->rtable)->rtekind != RTE_RELATION)
			continue;
		cand = palloc(sizeof(WindowCandidate));
		cand->expr = (Expr *) expr;
		cand->var = var;
		cand->output = output - 1;
		if (window_is_time_type(var->vartype))
			time_candidates = lappend(time_candidates, cand);
		else if (window_is_integer_type(var->vartype) && !IsA(expr, Var))
			int_candidates = lappend(int_candidates, cand);
		else if (window_is_time_type(exprType(expr)) && bad_candidate == NULL)
		{
			bad_candidate = (Expr *) expr;
			bad_var = var;
		}
	}

	foreach(lc, list_concat(time_candidates, int_candidates))
	{
		WindowCandidate *cand = lfirst(lc);

		if (window_output != FLOW_WINDOW_FIND)
		{
			if (cand->output == window_output)
			{
				set_window(plan, cand);
				return;
			}
			continue;
		}
		set_window(plan, cand);
		if (window_is_monotonic(plan))
			return;
		clear_window(plan);
	}
	if (window_output >= 0)
		elog(ERROR, "flowpg: output %d of the flow's query is no time window", window_output + 1);

	if (window_output == FLOW_WINDOW_FIND && bad_candidate != NULL)
	{
		Oid			relid = rt_fetch(bad_var->varno, query->rtable)->relid;

		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("time window expression %s is over column \"%s\" of type %s",
						expr_text(query, bad_candidate, 0),
						get_attname(relid, bad_var->varattno, false),
						format_type_be(bad_var->vartype)),
				 errdetail("A time window must be over a column of type timestamptz, timestamp, date or an integer epoch."),
				 errhint("Change the column's type, or group by a time column of the source.")));
	}
}

WindowProbe *
flow_plan_window_probe(FlowPlan *plan)
{
	Assert(plan->window_expr != NULL);
	return window_probe_create(window_param_for_column(plan->window_expr,
													   plan->time_varno,
													   plan->time_attno),
							   plan->time_type);
}

static FlowAggregate *
lookup_aggregate(Aggref *aggref)
{
	FlowAggregate *agg = palloc0(sizeof(FlowAggregate));
	HeapTuple	tuple = SearchSysCache1(AGGFNOID, ObjectIdGetDatum(aggref->aggfnoid));
	Form_pg_aggregate form;

	if (!HeapTupleIsValid(tuple))
		elog(ERROR, "cache lookup failed for aggregate %u", aggref->aggfnoid);
	form = (Form_pg_aggregate) GETSTRUCT(tuple);
	agg->aggref = aggref;
	agg->transfn = form->aggtransfn;
	agg->finalfn = form->aggfinalfn;
	agg->combinefn = form->aggcombinefn;
	agg->serialfn = form->aggserialfn;
	agg->deserialfn = form->aggdeserialfn;
	agg->transtype = form->aggtranstype;
	agg->mtransfn = form->aggmtransfn;
	agg->minvtransfn = form->aggminvtransfn;
	agg->mfinalfn = form->aggmfinalfn;
	agg->mtranstype = form->aggmtranstype;
	agg->finalmodify = form->aggfinalmodify;
	flow_plan_retraction(agg, tuple);
	ReleaseSysCache(tuple);
	return agg;
}

static char *
aggregate_refusal(FlowAggregate *agg)
{
	Aggref	   *aggref = agg->aggref;
	char	   *name = format_procedure(aggref->aggfnoid);

	if (aggref->aggkind != AGGKIND_NORMAL)
		return psprintf("ordered-set aggregate %s cannot be computed incrementally", name);
	if (aggref->aggdistinct != NIL)
		return psprintf("aggregate %s with DISTINCT cannot be combined across transactions", name);
	if (aggref->aggorder != NIL)
		return psprintf("aggregate %s with ORDER BY cannot be combined across transactions", name);
	if (!OidIsValid(agg->combinefn))
		return psprintf("aggregate %s has no combine function", name);
	if (agg->transtype == INTERNALOID &&
		(!OidIsValid(agg->serialfn) || !OidIsValid(agg->deserialfn)))
		return psprintf("aggregate %s has no serialization functions", name);
	if (OidIsValid(agg->finalfn) && agg->finalmodify == AGGMODIFY_READ_WRITE)
		return psprintf("the final function of aggregate %s modifies its state", name);
	return NULL;
}

static bool
system_column_walker(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, Var))
		return ((Var *) node)->varattno <= 0;
	return expression_tree_walker(node, system_column_walker, context);
}

/* What the streaming operator graph cannot express, besides aggregates. */
static char *
graph_refusal(FlowPlan *plan)
{
	Query	   *query = plan->query;
	ListCell   *lc;

	if (system_column_walker((Node *) query->targetList, NULL) ||
		system_column_walker(query->jointree->quals, NULL) ||
		system_column_walker(query->havingQual, NULL))
		return "the query reads a whole row or a system column";
	foreach(lc, query->groupClause)
	{
		SortGroupClause *sgc = lfirst_node(SortGroupClause, lc);
		TargetEntry *tle = get_sortgroupclause_tle(sgc, query->targetList);

		if (tle->resjunk)
			return "a GROUP BY expression is not an output column";
		if (!sgc->hashable)
			return psprintf("GROUP BY type %s cannot be hashed",
							format_type_be(exprType((Node *) tle->expr)));
	}
	if (plan->window_expr &&
		!window_is_time_type(exprType((Node *) plan->window_expr)) &&
		!window_is_integer_type(exprType((Node *) plan->window_expr)))
		return psprintf("the time window has type %s",
						format_type_be(exprType((Node *) plan->window_expr)));
	for (int i = 0; i < plan->noutputs; i++)
		if (!OidIsValid(get_array_type(plan->outputs[i].type)))
			return psprintf("output column \"%s\" has type %s, which has no array type",
							plan->outputs[i].name, format_type_be(plan->outputs[i].type));
	return NULL;
}

static void
plan_streaming(FlowPlan *plan)
{
	Query	   *query = plan->query;
	ListCell   *lc;

	if (plan->recording_rule)
		plan->streaming_refusal = "the query groups by now(): a recording rule, each EVAL INTERVAL tick adding the groups of its time";
	else if (plan->uses_now)
		plan->streaming_refusal = "the query uses now(), whose value only an EVAL INTERVAL tick fixes";
	else if (query->cteList)
		plan->streaming_refusal = "the query has a WITH query";
	else if (list_length(query->rtable) != 1 || list_length(plan->source_relids) != 1)
		plan->streaming_refusal = "the query reads more than one table or subquery";
	else if (query->hasSubLinks)
		plan->streaming_refusal = "the query has a subquery";
	else if (rt_fetch(1, query->rtable)->rtekind != RTE_RELATION)
		plan->streaming_refusal = "the query reads a subquery";
	if (plan->streaming_refusal)
		return;
	foreach(lc, plan->aggregates)
	{
		plan->streaming_refusal = aggregate_refusal((FlowAggregate *) lfirst(lc));
		if (plan->streaming_refusal)
			return;
	}
	plan->streaming_refusal = graph_refusal(plan);
	if (plan->streaming_refusal == NULL)
		plan->retract_refusal = flow_plan_retract_refusal(plan);
}

static FlowPlan *
plan_from_query(Query *query, int window_output)
{
	FlowPlan   *plan = palloc0(sizeof(FlowPlan));
	List	   *aggrefs = NIL;
	ListCell   *lc;

	plan->query = query;
	flow_plan_check_shape(query);

	foreach(lc, flow_plan_relations(query))
	{
		RangeTblEntry *rte = lfirst_node(RangeTblEntry, lc);
		char		relkind = get_rel_relkind(rte->relid);

		if (relkind != RELKIND_RELATION && relkind != RELKIND_PARTITIONED_TABLE)
			ereport(ERROR,
					(errcode(ERRCODE_WRONG_OBJECT_TYPE),
					 errmsg("\"%s\" is not a table", get_rel_name(rte->relid)),
					 errdetail("A flow reads ordinary or partitioned tables, whose changes it can capture."),
					 errhint("Name the view's underlying tables in the flow's query.")));
		if (get_rel_persistence(rte->relid) == RELPERSISTENCE_TEMP)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("a flow cannot read temporary table \"%s\"", get_rel_name(rte->relid)),
					 errdetail("Temporary tables are invisible to flowpg's background worker.")));
		plan->source_relids = list_append_unique_oid(plan->source_relids, rte->relid);
	}
	if (plan->source_relids == NIL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
				 errmsg("a flow's query must read at least one table")));

	first_last_check_query(query);
	(void) aggref_walker((Node *) query->targetList, &aggrefs);
	(void) aggref_walker(query->havingQual, &aggrefs);
	foreach(lc, aggrefs)
		plan->aggregates = lappend(plan->aggregates,
								   lookup_aggregate(lfirst_node(Aggref, lc)));
	plan->is_aggregate = query->hasAggs || query->groupClause != NIL;
	plan->uses_now = dialect_uses_now(query);

	plan_outputs(plan);
	plan_recording_rule(plan);
	plan_window(plan, window_output);
	plan_streaming(plan);
	return plan;
}

/*
 * Errors in the flow's query point into the query text, not into the
 * statement that passed it (as SPI and PL/pgSQL report their queries); into
 * the GreptimeDB statement, when the query is part of one.
 */
typedef struct QueryTextPosition
{
	const char *query_text;
	const FlowQuerySource *source;	/* NULL: the query is on its own */
} QueryTextPosition;

static void
query_text_error_callback(void *arg)
{
	QueryTextPosition *where = (QueryTextPosition *) arg;
	int			position = geterrposition();

	if (position > 0)
	{
		errposition(0);
		if (where->source)
		{
			internalerrposition(position + where->source->offset);
			internalerrquery(where->source->statement);
		}
		else
		{
			internalerrposition(position);
			internalerrquery(where->query_text);
		}
	}
}

/*
 * The query's parse trees.  A create_flow query that is a name (the sink
 * table's, given in the query's place) does not even begin a statement:
 * PostgreSQL's syntax error then says what the query must be.  (flowpg.execute
 * has parsed its query before: source is set.)
 */
static List *
parse_query_text(const char *query_text, const FlowQuerySource *source)
{
	MemoryContext oldcontext = CurrentMemoryContext;
	List	   *raw = NIL;

	PG_TRY();
	{
		raw = raw_parser(query_text, RAW_PARSE_DEFAULT);
	}
	PG_CATCH();
	{
		ErrorData  *edata;
		List	   *names;

		MemoryContextSwitchTo(oldcontext);
		edata = CopyErrorData();
		if (source || edata->sqlerrcode != ERRCODE_SYNTAX_ERROR || edata->detail || edata->hint ||
			!SplitIdentifierString(pstrdup(query_text), '.', &names) || names == NIL)
			PG_RE_THROW();
		FlushErrorState();
		edata->detail = psprintf("query must be a SELECT statement; \"%s\" is a name.", query_text);
		edata->hint = pstrdup("create_flow takes flow_name, sink_table and query, in that order.");
		ReThrowError(edata);
	}
	PG_END_TRY();
	return raw;
}

static FlowPlan *
plan_query_text(const char *query_text, int window_output, bool check_rights,
				const FlowQuerySource *source, const char *vet_flow_name)
{
	List	   *raw;
	RawStmt    *stmt;
	Query	   *query;
	List	   *rtes;
	ErrorContextCallback callback;
	QueryTextPosition where = {query_text, source};
	List	   *moments;
	FlowPlan   *plan;

	callback.callback = query_text_error_callback;
	callback.arg = (void *) &where;
	callback.previous = error_context_stack;
	error_context_stack = &callback;

	raw = parse_query_text(query_text, source);
	if (list_length(raw) != 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("a flow's query must be exactly one SELECT statement"),
				 errdetail("The text holds %d statements.", list_length(raw))));
	stmt = linitial_node(RawStmt, raw);
	if (!IsA(stmt->stmt, SelectStmt))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("a flow's query must be a SELECT statement")));

	moments = dialect_rewrite_raw((SelectStmt *) stmt->stmt, query_text,
								  source && source->greptime_names,
								  source && source->sink_exists);
	query = dialect_analyze(stmt, query_text, source && source->greptime_names);
	query = dialect_rewrite_query(query, moments, query_text);

	/* the caller must be able to read what the flow will read */
	rtes = flow_plan_relations(query);
	if (check_rights)
		(void) ExecCheckRTPerms(rtes, true);
	/* before probing the window runs any of it */
	if (vet_flow_name)
		trust_require(trust_untrusted_in_query(query, GetUserId()), vet_flow_name, GetUserId());

	plan = plan_from_query(query, window_output);
	error_context_stack = callback.previous;
	return plan;
}

FlowPlan *
flow_plan_query_text(const char *query_text, int window_output,
					 const FlowQuerySource *source, const char *vet_flow_name)
{
	return plan_query_text(query_text, window_output, true, source, vet_flow_name);
}

FlowPlan *
flow_plan_restored_text(const char *query_text, int window_output)
{
	return plan_query_text(query_text, window_output, false, NULL, NULL);
}

FlowPlan *
flow_plan_query_tree(Query *query, int window_output)
{
	/* the stored tree was validated when the flow was created */
	Assert(window_output != FLOW_WINDOW_FIND);
	return plan_from_query(query, window_output);
}

FlowPlan *
flow_plan_for_entry(FlowEntry *entry)
{
	FlowPlan   *plan = flow_plan_query_tree(stringToNode(entry->query_tree),
											entry->window_output);

	/*
	 * A flow of 0.2 (which had no recording rules) may group by the tick and
	 * have expire_after without a time-typed tick key, which creating it now
	 * refuses: it is recomputed whole at each tick, as 0.2 did, its
	 * expire_after being about its window.
	 */
	if (plan->recording_rule && entry->expire_after && plan->record_key_output < 0)
	{
		plan->recording_rule = false;
		for (int i = 0; i < plan->noutputs; i++)
			plan->outputs[i].is_tick_key = false;
	}
	return plan;
}

char *
flow_plan_deparse(Query *query, ArrayType *settings, Oid owner)
{
	FlowIdentity identity;
	char	   *text;

	/* as the owner, restricted: printing constants runs their types' output functions */
	flow_enter(&identity, owner, settings, true);
	text = pg_get_querydef(copyObject(query), false);
	flow_leave(&identity);
	/* ruleutils indents the first line too */
	while (*text == ' ')
		text++;
	return text;
}

static bool
interval_is_positive(Interval *interval)
{
	return interval->month > 0 ||
		(interval->month == 0 &&
		 (interval->day > 0 || (interval->day == 0 && interval->time > 0)));
}

/* Does the expression read a time-typed column of a subquery or WITH query? */
static bool
reads_subquery_time(Node *node, List *rtable)
{
	if (node == NULL)
		return false;
	if (IsA(node, Var))
	{
		Var		   *var = (Var *) node;
		RangeTblEntry *rte;

		if (var->varlevelsup != 0)
			return false;
		rte = rt_fetch(var->varno, rtable);
		return (rte->rtekind == RTE_SUBQUERY || rte->rtekind == RTE_CTE) &&
			(var->vartype == TIMESTAMPTZOID || var->vartype == TIMESTAMPOID ||
			 var->vartype == DATEOID);
	}
	return expression_tree_walker(node, reads_subquery_time, rtable);
}

/*
 * The name of the first GROUP BY key over a time of a subquery or WITH
 * query, NULL when none: a window the planner cannot see.
 */
static const char *
subquery_time_key(Query *query)
{
	ListCell   *lc;

	foreach(lc, query->groupClause)
	{
		TargetEntry *tle = get_sortgroupclause_tle(lfirst_node(SortGroupClause, lc),
												   query->targetList);

		if (reads_subquery_time((Node *) tle->expr, query->rtable))
			return tle->resname ? tle->resname : "?";
	}
	return NULL;
}

FlowMode
flow_plan_choose_mode(FlowPlan *plan, FlowMode requested,
					  Interval *expire_after, Interval *eval_interval)
{
	if (expire_after && (expire_after->month < 0 || expire_after->day < 0 ||
						 expire_after->time < 0 || !interval_is_positive(expire_after)))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("expire_after must be a positive interval")));
	if (eval_interval)
	{
		if (eval_interval->month != 0)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("eval_interval cannot be given in months or years"),
					 errdetail("Months have no fixed length."),
					 errhint("Give it in days, hours, minutes or seconds.")));
		if (eval_interval->day < 0 || eval_interval->time < 0 ||
			!interval_is_positive(eval_interval))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("eval_interval must be a positive interval")));
		eval_interval_check(eval_interval);
	}
	if (expire_after && plan->recording_rule && plan->record_key_output < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
				 errmsg("expire_after of a recording rule needs a GROUP BY key over now() of a time type"),
				 errdetail("The flow groups by now(), so each tick adds its own groups; expire_after deletes those whose now() key is older than the tick's time minus expire_after."),
				 errhint("Group by a time such as date_trunc('minute', now()), or leave expire_after out.")));
	if (expire_after && !plan->recording_rule && plan->window_expr != NULL &&
		!window_is_time_type(plan->time_type))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
				 errmsg("expire_after needs a time window over a time column"),
				 errdetail("The time window %s is over an integer column, whose unit flowpg does not know.",
						   plan->window_text)));
	if (expire_after && !plan->recording_rule && plan->window_expr == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
				 errmsg("expire_after needs a time window"),
				 errdetail("Only a GROUP BY expression over a time column says how old a group is."),
				 errhint("Group by a time window such as date_trunc('hour', ts), or leave expire_after out.")));

	if (requested == FLOW_MODE_STREAMING)
	{
		if (plan->streaming_refusal)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("the streaming engine cannot run this flow: %s",
							plan->streaming_refusal),
					 errhint("Use mode => 'batching' or 'auto'.")));
		if (eval_interval)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("eval_interval applies to batching flows only"),
					 errhint("Streaming flows write their sink every flowpg.flush_interval; leave eval_interval out.")));
		return FLOW_MODE_STREAMING;
	}
	if (requested == FLOW_MODE_AUTO && plan->streaming_refusal == NULL &&
		eval_interval == NULL)
		return FLOW_MODE_STREAMING;

	/* batching */
	if (plan->uses_now && eval_interval == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
				 errmsg("a flow whose query uses now() needs eval_interval"),
				 errdetail("now() in a flow is the time of its EVAL INTERVAL tick; without ticks the result would change with no change to the source."),
				 errhint("Give eval_interval (EVAL INTERVAL '1 minute' in flowpg.execute).")));
	/* on ticks, a query without groups is recomputed whole */
	if (!plan->is_aggregate && eval_interval == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("the batching engine cannot run a flow without GROUP BY or aggregates"),
				 plan->streaming_refusal ?
				 errdetail("The streaming engine cannot run it either: %s.", plan->streaming_refusal) :
				 errdetail("The batching engine replaces whole groups of the sink."),
				 plan->streaming_refusal ? 0 : errhint("Use mode => 'streaming' or 'auto'.")));
	if (plan->window_expr == NULL && eval_interval == NULL && subquery_time_key(plan->query))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
				 errmsg("a batching flow without a time window needs eval_interval"),
				 errdetail("GROUP BY key \"%s\" is a time from a subquery or WITH query: flowpg finds a flow's time window only over a column of a table the query reads itself, where a change to a row maps to the window of its time.",
						   subquery_time_key(plan->query)),
				 errhint("Read the table in the flow's own FROM (its filters in WHERE) and group by the window over its column, such as date_trunc('hour', ts); or give eval_interval.")));
	if (plan->window_expr == NULL && eval_interval == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
				 errmsg("a batching flow without a time window needs eval_interval"),
				 plan->streaming_refusal ?
				 errdetail("It runs in batching mode because %s, and without a time window every run recomputes the whole result.", plan->streaming_refusal) :
				 errdetail("Without a time window every run recomputes the whole result."),
				 errhint("Add a time window to GROUP BY, such as date_trunc('hour', ts), or give eval_interval.")));
	return FLOW_MODE_BATCHING;
}
