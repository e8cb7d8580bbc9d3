/*-------------------------------------------------------------------------
 *
 * query_check.c
 *	  The checks and walks over a flow's analysed query tree.
 *
 * The shape checks that refuse what a flow cannot be (set operations,
 * ORDER BY, LIMIT, window functions, recursive or data-modifying WITH,
 * temporary objects, volatile functions), the collection of the tables the
 * query reads at any level, the rights checks (SELECT on what it reads,
 * EXECUTE on what it calls), the column and relation walks that other
 * modules use, and the check that the query can be planned at all (an
 * expression nested too deeply for the stack).  Turning the checked query
 * into a graph is planner.c's job.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/namespace.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "executor/spi.h"
#include "tcop/tcopprot.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "rewrite/rewriteManip.h"
#include "parser/parsetree.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"
#include "utils/rls.h"
#include "utils/syscache.h"

#include "dialect.h"
#include "planner.h"
#include "settings.h"
#include "subxact.h"

static void
reject_query(const char *what, const char *hint)
{
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("a flow's query cannot use %s", what),
			 hint ? errhint("%s", hint) : 0));
}

/* Collects the RTE_RELATION entries of every query level. */
typedef struct RelationWalkContext
{
	List	   *rtes;
} RelationWalkContext;

/*
 * The steps of a recording rule that evaluates several times per tick (a
 * TQL flow): generate_series(start, end, step) over timestamps, in FROM,
 * whose start and end are functions of the tick (they call now() and read
 * no column).  At each tick it yields the same steps wherever evaluated.
 */
bool
flow_rte_is_tick_steps(RangeTblEntry *rte)
{
	RangeTblFunction *rtfunc;
	FuncExpr   *func;

	if (rte->rtekind != RTE_FUNCTION || list_length(rte->functions) != 1 || rte->funcordinality)
		return false;
	rtfunc = linitial_node(RangeTblFunction, rte->functions);
	if (!IsA(rtfunc->funcexpr, FuncExpr))
		return false;
	func = (FuncExpr *) rtfunc->funcexpr;
	if (func->funcid != F_GENERATE_SERIES_TIMESTAMP_TIMESTAMP_INTERVAL &&
		func->funcid != F_GENERATE_SERIES_TIMESTAMPTZ_TIMESTAMPTZ_INTERVAL)
		return false;
	if (contain_var_clause((Node *) func->args) || contain_vars_of_level((Node *) func->args, 1) ||
		checkExprHasSubLink((Node *) func->args))
		return false;
	return dialect_expr_uses_now(linitial(func->args)) &&
		dialect_expr_uses_now(lsecond(func->args));
}

static bool
relation_walker(Node *node, RelationWalkContext *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, RangeTblEntry))
	{
		RangeTblEntry *rte = (RangeTblEntry *) node;

		if (rte->rtekind == RTE_RELATION)
			context->rtes = lappend(context->rtes, rte);
		else if ((rte->rtekind == RTE_FUNCTION && !flow_rte_is_tick_steps(rte)) ||
				 rte->rtekind == RTE_TABLEFUNC)
			reject_query("functions in FROM",
						 "A flow reads tables; set-returning functions cannot be maintained incrementally (generate_series(start, end, step) of times is allowed when start and end call now(): the steps of a tick).");
		return false;
	}
	if (IsA(node, Query))
		return query_tree_walker((Query *) node, relation_walker,
								 (void *) context, QTW_EXAMINE_RTES_BEFORE);
	return expression_tree_walker(node, relation_walker, (void *) context);
}

static bool
volatile_checker(Oid funcid, void *context)
{
	if (func_volatile(funcid) == PROVOLATILE_VOLATILE)
	{
		*(Oid *) context = funcid;
		return true;
	}
	return false;
}

static bool
volatile_walker(Node *node, Oid *funcid)
{
	if (node == NULL)
		return false;
	if (check_functions_in_node(node, volatile_checker, (void *) funcid))
		return true;
	if (IsA(node, Query))
		return query_tree_walker((Query *) node, volatile_walker, (void *) funcid, 0);
	return expression_tree_walker(node, volatile_walker, (void *) funcid);
}

/*
 * A temporary type or function (pg_temp) exists in one session only: the
 * worker and other writers could not evaluate the flow.
 */
static bool
temp_object_walker(Node *node, void *context)
{
	Oid			func = InvalidOid;
	HeapTuple	tuple;

	if (node == NULL)
		return false;
	if (IsA(node, Query))
		return query_tree_walker((Query *) node, temp_object_walker, context, 0);
	if (IsA(node, FuncExpr))
		func = ((FuncExpr *) node)->funcid;
	else if (IsA(node, Aggref))
		func = ((Aggref *) node)->aggfnoid;
	else if (IsA(node, OpExpr) || IsA(node, DistinctExpr) || IsA(node, NullIfExpr))
		func = get_opcode(((OpExpr *) node)->opno);
	else if (IsA(node, ScalarArrayOpExpr))
		func = get_opcode(((ScalarArrayOpExpr *) node)->opno);
	if (OidIsValid(func) && isAnyTempNamespace(get_func_namespace(func)))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("a flow cannot use temporary function %s", format_procedure(func)),
				 errdetail("Temporary objects are invisible to flowpg's background worker.")));
	if (IsA(node, Var) || IsA(node, Const) || IsA(node, FuncExpr) || IsA(node, CoerceToDomain) ||
		IsA(node, RelabelType) || IsA(node, CoerceViaIO) || IsA(node, Aggref))
	{
		Oid			type = exprType(node);

		tuple = SearchSysCache1(TYPEOID, ObjectIdGetDatum(type));
		if (HeapTupleIsValid(tuple))
		{
			bool		temporary = isAnyTempNamespace(((Form_pg_type) GETSTRUCT(tuple))->typnamespace);

			ReleaseSysCache(tuple);
			if (temporary)
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("a flow cannot use temporary type %s", format_type_be(type)),
						 errdetail("Temporary objects are invisible to flowpg's background worker.")));
		}
	}
	return expression_tree_walker(node, temp_object_walker, context);
}

/*
 * WITH queries, at any level, are read as subqueries in FROM are: only
 * non-recursive SELECTs (the analysed query's range table entries of type
 * RTE_CTE read them; relation_walker finds their tables).
 */
static bool
cte_walker(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, Query))
	{
		Query	   *query = (Query *) node;
		ListCell   *lc;

		if (query->hasModifyingCTE)
			reject_query("data-modifying statements in WITH",
						 "A flow only reads: write the INSERT, UPDATE or DELETE as a statement of its own.");
		/* in a subquery or a CTE too: every run would lock the rows it reads */
		if (query->rowMarks)
			reject_query("FOR UPDATE or FOR SHARE", NULL);
		foreach(lc, query->cteList)
		{
			CommonTableExpr *cte = lfirst_node(CommonTableExpr, lc);

			if (cte->cterecursive)
				reject_query("WITH RECURSIVE",
							 "Its result is a fixpoint over its own rows, which flowpg cannot maintain; compute it when reading the sink.");
			if (!IsA(cte->ctequery, Query) ||
				((Query *) cte->ctequery)->commandType != CMD_SELECT)
				reject_query("data-modifying statements in WITH",
							 "A flow only reads: write the INSERT, UPDATE or DELETE as a statement of its own.");
		}
		return query_tree_walker(query, cte_walker, context, 0);
	}
	return expression_tree_walker(node, cte_walker, context);
}

/* The shape checks that apply to every flow. */
void
flow_plan_check_shape(Query *query)
{
	Oid			volatile_func = InvalidOid;

	if (query->commandType != CMD_SELECT || query->utilityStmt != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("a flow's query must be a SELECT statement")));
	if (query->setOperations)
		reject_query("UNION, INTERSECT or EXCEPT", "Create one flow per branch.");
	if (query->hasWindowFuncs)
		reject_query("window functions", "Compute them when reading the sink.");
	if (query->hasTargetSRFs)
		reject_query("set-returning functions", NULL);
	if (query->sortClause)
		reject_query("ORDER BY", "Order the rows when reading the sink.");
	if (query->limitCount || query->limitOffset)
		reject_query("LIMIT or OFFSET", "Apply them when reading the sink.");
	if (query->hasDistinctOn)
		reject_query("DISTINCT ON", NULL);
	if (query->distinctClause)
		reject_query("SELECT DISTINCT", "Use GROUP BY on the same columns.");
	if (query->groupingSets)
		reject_query("GROUPING SETS, ROLLUP or CUBE", "Create one flow per grouping.");
	(void) cte_walker((Node *) query, NULL);

	(void) temp_object_walker((Node *) query, NULL);
	if (volatile_walker((Node *) query, &volatile_func))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
				 errmsg("a flow's query cannot use volatile function %s",
						format_procedure(volatile_func)),
				 errdetail("A flow must compute the same result whenever and wherever it is evaluated."),
				 errhint("Use an immutable or stable function instead.")));
}
static bool
execute_checker(Oid funcid, void *context)
{
	if (pg_proc_aclcheck(funcid, GetUserId(), ACL_EXECUTE) != ACLCHECK_OK)
		aclcheck_error(ACLCHECK_NO_PRIV, OBJECT_FUNCTION, get_func_name(funcid));
	return false;
}

static bool
execute_walker(Node *node, void *context)
{
	if (node == NULL)
		return false;
	(void) check_functions_in_node(node, execute_checker, context);
	if (IsA(node, Query))
		return query_tree_walker((Query *) node, execute_walker, context, 0);
	return expression_tree_walker(node, execute_walker, context);
}

void
flow_plan_check_rights(FlowPlan *plan)
{
	RelationWalkContext walk = {NIL};

	(void) relation_walker((Node *) plan->query, &walk);
	(void) ExecCheckRTPerms(walk.rtes, true);
	(void) execute_walker((Node *) plan->query, NULL);
}

bool
flow_plan_uses_row_security(FlowPlan *plan)
{
	ListCell   *lc;

	foreach(lc, plan->source_relids)
		if (check_enable_rls(lfirst_oid(lc), InvalidOid, true) == RLS_ENABLED)
			return true;
	return false;
}

bool
flow_plan_owner_can_read(FlowPlan *plan)
{
	RelationWalkContext walk = {NIL};

	(void) relation_walker((Node *) plan->query, &walk);
	return ExecCheckRTPerms(walk.rtes, false);
}

typedef struct ColumnWalkContext
{
	List	   *rtables;		/* innermost query level first */
	FlowColumnVisitor visit;
	void	   *arg;
} ColumnWalkContext;

static bool
column_walker(Node *node, ColumnWalkContext *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, Var))
	{
		Var		   *var = (Var *) node;
		List	   *rtable = list_nth(context->rtables, var->varlevelsup);
		RangeTblEntry *rte = rt_fetch(var->varno, rtable);

		return rte->rtekind == RTE_RELATION && context->visit(var, rte, context->arg);
	}
	if (IsA(node, Query))
	{
		Query	   *query = (Query *) node;
		bool		found;

		context->rtables = lcons(query->rtable, context->rtables);
		found = query_tree_walker(query, column_walker, (void *) context, 0);
		context->rtables = list_delete_first(context->rtables);
		return found;
	}
	return expression_tree_walker(node, column_walker, (void *) context);
}

bool
flow_plan_walk_columns(Query *query, FlowColumnVisitor visit, void *arg)
{
	ColumnWalkContext context = {NIL, visit, arg};

	return column_walker((Node *) query, &context);
}

bool
flow_plan_reads_descendants(Query *query, Oid relid)
{
	RelationWalkContext walk = {NIL};
	ListCell   *lc;

	(void) relation_walker((Node *) query, &walk);
	foreach(lc, walk.rtes)
	{
		RangeTblEntry *rte = lfirst_node(RangeTblEntry, lc);

		if (rte->relid == relid && rte->inh)
			return true;
	}
	return false;
}

int
flow_plan_count_relation(Query *query, Oid relid)
{
	RelationWalkContext walk = {NIL};
	ListCell   *lc;
	int			n = 0;

	(void) relation_walker((Node *) query, &walk);
	foreach(lc, walk.rtes)
		n += lfirst_node(RangeTblEntry, lc)->relid == relid;
	return n;
}

List *
flow_plan_relations(Query *query)
{
	RelationWalkContext walk = {NIL};

	(void) relation_walker((Node *) query, &walk);
	return walk.rtes;
}

/* EXPLAIN of the query (arg): planned and its expressions set up, nothing run. */
static void
explain_query(void *arg)
{
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute(psprintf("EXPLAIN (COSTS OFF) %s", (const char *) arg), false, 0) < 0)
		elog(ERROR, "flowpg could not plan the flow's query");
	SPI_finish();
}

void
flow_plan_check_evaluable(const char *query, Oid owner, ArrayType *settings,
						  const char *flow_name)
{
	FlowIdentity identity;
	ErrorData  *edata;

	flow_enter(&identity, owner, settings, false);
	edata = subxact_run(explain_query, (void *) query);
	flow_leave(&identity);
	if (edata == NULL)
		return;
	if (edata->sqlerrcode == ERRCODE_STATEMENT_TOO_COMPLEX)
		ereport(ERROR,
				(errcode(ERRCODE_STATEMENT_TOO_COMPLEX),
				 errmsg("the query of flow \"%s\" is nested too deeply to be evaluated", flow_name),
				 errdetail("Planning it exceeds the stack depth limit (max_stack_depth is %dkB): every run of the flow would fail.",
						   max_stack_depth),
				 errhint("Write the expression with fewer nested terms (a function, or an array and unnest), or raise max_stack_depth.")));
	ReThrowError(edata);
}
