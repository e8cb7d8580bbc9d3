/*-------------------------------------------------------------------------
 *
 * dialect_types.c
 *	  DataFusion's types in a flow's query, on PostgreSQL's raw parse trees:
 *	  the output types of a flow written in GreptimeDB's dialect (decimal
 *	  literals, sum and avg over integers) and DataFusion's timestamp types
 *	  (TimestampSecond ... TimestampNanosecond).  Called from dialect.c, which
 *	  does the rest of the dialect; the two raw-tree helpers both use are
 *	  here.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/namespace.h"
#include "catalog/pg_aggregate.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "parser/analyze.h"
#include "parser/parse_type.h"
#include "parser/parser.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

#include "dialect_types.h"

/* A call of name, unqualified or in pg_catalog. */
bool
dialect_is_unqualified_call(FuncCall *call, const char *name)
{
	List	   *names = call->funcname;

	if (list_length(names) == 2 &&
		strcmp(strVal(linitial(names)), "pg_catalog") == 0)
		names = list_make1(lsecond(names));
	return list_length(names) == 1 && strcmp(strVal(linitial(names)), name) == 0;
}

/* A type of a temporary schema, which only its session sees. */
bool
dialect_type_is_temporary(Oid typid)
{
	HeapTuple	tuple = SearchSysCache1(TYPEOID, ObjectIdGetDatum(typid));
	bool		temporary;

	if (!HeapTupleIsValid(tuple))
		return false;
	temporary = isAnyTempNamespace(((Form_pg_type) GETSTRUCT(tuple))->typnamespace);
	ReleaseSysCache(tuple);
	return temporary;
}

/*-------------------------------------------------------------------------
 * DataFusion's output types, for flows written in GreptimeDB's dialect
 * (flowpg.execute; create_flow keeps PostgreSQL's types).
 *
 * GreptimeDB plans a flow with DataFusion, whose types differ from
 * PostgreSQL's where a sink's column type shows it:
 *	- a decimal literal (30.0) is Float64, PostgreSQL's numeric: in the
 *	  clauses that compute outputs (select list, GROUP BY, HAVING, ORDER BY,
 *	  DISTINCT ON) it becomes 30.0::float8; in WHERE and JOIN it stays
 *	  numeric (a comparison is exact either way for GreptimeDB's column
 *	  types); a literal with a cast of its own keeps it;
 *	- sum over int8 is Int64 (PostgreSQL's numeric): sum(x)::int8;
 *	- avg over integers is Float64 (PostgreSQL's numeric): avg(x)::float8;
 *	- sum over int2/int4 (bigint), count (bigint), avg over float4/float8
 *	  (float8), min and max (their argument's type) are the same in both.
 * Inside round(x, n) and trunc(x, n), which PostgreSQL has for numeric
 * only, nothing is rewritten.
 * The cast is over the aggregate's result, so the aggregate itself stays
 * exact and combinable (streaming keeps its state); an aggregate already
 * cast where it is written keeps the cast given.  The rewritten tree is
 * what is stored and deparsed: its text (with the casts) plans to the same
 * tree again, with or without this rewrite.
 *-------------------------------------------------------------------------
 */

static TypeCast *
make_system_cast(Node *arg, const char *type_name, int typmod)
{
	TypeCast   *cast = makeNode(TypeCast);

	cast->arg = arg;
	cast->typeName = SystemTypeName(pstrdup(type_name));
	if (typmod >= 0)
	{
		A_Const    *mod = makeNode(A_Const);

		mod->val.ival.type = T_Integer;
		mod->val.ival.ival = typmod;
		mod->location = -1;
		cast->typeName->typmods = list_make1(mod);
	}
	cast->location = -1;
	return cast;
}

/* An aggregate whose DataFusion type PostgreSQL does not give, by location. */
typedef struct AggregateCast
{
	int			location;
	const char *type_name;
} AggregateCast;

typedef struct TypesContext
{
	List	   *casts;			/* of AggregateCast */
} TypesContext;

static Node *datafusion_types_mutator(Node *node, TypesContext *cxt, bool under_cast);

static void
datafusion_types_list(List *list, TypesContext *cxt)
{
	ListCell   *lc;

	foreach(lc, list)
		lfirst(lc) = datafusion_types_mutator(lfirst(lc), cxt, false);
}

static const char *
aggregate_cast_at(TypesContext *cxt, int location)
{
	ListCell   *lc;

	if (location < 0)
		return NULL;
	foreach(lc, cxt->casts)
	{
		AggregateCast *c = lfirst(lc);

		if (c->location == location)
			return c->type_name;
	}
	return NULL;
}

static void datafusion_types_select(SelectStmt *stmt, TypesContext *cxt);

/*
 * The expression kinds of a raw tree that hold expressions: decimal
 * literals become float8 ones, the aggregates of cxt->casts get their cast.
 */
static Node *
datafusion_types_mutator(Node *node, TypesContext *cxt, bool under_cast)
{
	if (node == NULL)
		return NULL;
	check_stack_depth();
	switch (nodeTag(node))
	{
		case T_A_Const:
			if (!under_cast && !((A_Const *) node)->isnull &&
				IsA(&((A_Const *) node)->val, Float))
				return (Node *) make_system_cast(node, "float8", -1);
			return node;
		case T_TypeCast:
			{
				TypeCast   *cast = (TypeCast *) node;

				cast->arg = datafusion_types_mutator(cast->arg, cxt, true);
				return node;
			}
		case T_FuncCall:
			{
				FuncCall   *call = (FuncCall *) node;
				const char *type_name = aggregate_cast_at(cxt, call->location);

				/*
				 * round(x, n) and trunc(x, n) are PostgreSQL's for numeric
				 * only, and round(x) of a float rounds half to even where
				 * DataFusion's rounds half away from zero, as numeric's
				 * does: their operands keep PostgreSQL's types (the result
				 * is numeric, rounded exactly).
				 */
				if (dialect_is_unqualified_call(call, "round") ||
					(dialect_is_unqualified_call(call, "trunc") && list_length(call->args) == 2))
					return node;
				datafusion_types_list(call->args, cxt);
				datafusion_types_list(call->agg_order, cxt);
				call->agg_filter = datafusion_types_mutator(call->agg_filter, cxt, false);
				if (type_name && !under_cast)
					return (Node *) make_system_cast(node, type_name, -1);
				return node;
			}
		case T_A_Expr:
			{
				A_Expr	   *e = (A_Expr *) node;

				e->lexpr = datafusion_types_mutator(e->lexpr, cxt, false);
				e->rexpr = datafusion_types_mutator(e->rexpr, cxt, false);
				return node;
			}
		case T_BoolExpr:
			datafusion_types_list(((BoolExpr *) node)->args, cxt);
			return node;
		case T_CaseExpr:
			{
				CaseExpr   *c = (CaseExpr *) node;

				c->arg = (Expr *) datafusion_types_mutator((Node *) c->arg, cxt, false);
				datafusion_types_list(c->args, cxt);
				c->defresult = (Expr *) datafusion_types_mutator((Node *) c->defresult, cxt, false);
				return node;
			}
		case T_CaseWhen:
			{
				CaseWhen   *w = (CaseWhen *) node;

				w->expr = (Expr *) datafusion_types_mutator((Node *) w->expr, cxt, false);
				w->result = (Expr *) datafusion_types_mutator((Node *) w->result, cxt, false);
				return node;
			}
		case T_CoalesceExpr:
			datafusion_types_list(((CoalesceExpr *) node)->args, cxt);
			return node;
		case T_MinMaxExpr:
			datafusion_types_list(((MinMaxExpr *) node)->args, cxt);
			return node;
		case T_NullIfExpr:
			datafusion_types_list(((NullIfExpr *) node)->args, cxt);
			return node;
		case T_NullTest:
			((NullTest *) node)->arg = (Expr *) datafusion_types_mutator((Node *) ((NullTest *) node)->arg, cxt, false);
			return node;
		case T_BooleanTest:
			((BooleanTest *) node)->arg = (Expr *) datafusion_types_mutator((Node *) ((BooleanTest *) node)->arg, cxt, false);
			return node;
		case T_A_Indirection:
			((A_Indirection *) node)->arg = datafusion_types_mutator(((A_Indirection *) node)->arg, cxt, false);
			return node;
		case T_RowExpr:
			datafusion_types_list(((RowExpr *) node)->args, cxt);
			return node;
		case T_NamedArgExpr:
			((NamedArgExpr *) node)->arg = (Expr *) datafusion_types_mutator((Node *) ((NamedArgExpr *) node)->arg, cxt, false);
			return node;
		case T_SortBy:
			((SortBy *) node)->node = datafusion_types_mutator(((SortBy *) node)->node, cxt, false);
			return node;
		case T_ResTarget:
			((ResTarget *) node)->val = datafusion_types_mutator(((ResTarget *) node)->val, cxt, false);
			return node;
		case T_GroupingSet:
			datafusion_types_list(((GroupingSet *) node)->content, cxt);
			return node;
		case T_SubLink:
			{
				SubLink    *sub = (SubLink *) node;

				sub->testexpr = datafusion_types_mutator(sub->testexpr, cxt, false);
				if (sub->subselect && IsA(sub->subselect, SelectStmt))
					datafusion_types_select((SelectStmt *) sub->subselect, cxt);
				return node;
			}
		case T_List:
			datafusion_types_list((List *) node, cxt);
			return node;
		default:
			return node;
	}
}

/* A SELECT's clauses that compute its outputs; its FROM's subqueries too. */
static void
datafusion_types_select(SelectStmt *stmt, TypesContext *cxt)
{
	ListCell   *lc;

	check_stack_depth();
	if (stmt->op != SETOP_NONE)
	{
		datafusion_types_select(stmt->larg, cxt);
		datafusion_types_select(stmt->rarg, cxt);
		return;
	}
	if (stmt->withClause)
		foreach(lc, stmt->withClause->ctes)
		{
			CommonTableExpr *cte = lfirst_node(CommonTableExpr, lc);

			if (IsA(cte->ctequery, SelectStmt))
				datafusion_types_select((SelectStmt *) cte->ctequery, cxt);
		}
	datafusion_types_list(stmt->targetList, cxt);
	datafusion_types_list(stmt->groupClause, cxt);
	stmt->havingClause = datafusion_types_mutator(stmt->havingClause, cxt, false);
	datafusion_types_list(stmt->sortClause, cxt);
	datafusion_types_list(stmt->distinctClause, cxt);
	/* FROM: subqueries' outputs (a JOIN's ON condition stays as written) */
	foreach(lc, stmt->fromClause)
	{
		List	   *items = list_make1(lfirst(lc));

		while (items != NIL)
		{
			Node	   *item = linitial(items);

			items = list_delete_first(items);
			if (IsA(item, RangeSubselect) &&
				IsA(((RangeSubselect *) item)->subquery, SelectStmt))
				datafusion_types_select((SelectStmt *) ((RangeSubselect *) item)->subquery, cxt);
			else if (IsA(item, JoinExpr))
				items = lappend(lappend(items, ((JoinExpr *) item)->larg),
								((JoinExpr *) item)->rarg);
		}
	}
}

/* The aggregates of the analysed tree whose result type DataFusion's differs from. */
static bool
aggregate_types_walker(Node *node, TypesContext *cxt)
{
	if (node == NULL)
		return false;
	if (IsA(node, Aggref))
	{
		Aggref	   *agg = (Aggref *) node;
		const char *type_name = NULL;

		/* DataFusion: sum(Int64) is Int64, avg of an integer Float64 */
		if (agg->aggfnoid == F_SUM_INT8 && agg->aggkind == AGGKIND_NORMAL)
			type_name = "int8";
		else if ((agg->aggfnoid == F_AVG_INT8 || agg->aggfnoid == F_AVG_INT4 ||
				  agg->aggfnoid == F_AVG_INT2) && agg->aggkind == AGGKIND_NORMAL)
			type_name = "float8";
		if (type_name && agg->location >= 0)
		{
			AggregateCast *c = palloc(sizeof(AggregateCast));

			c->location = agg->location;
			c->type_name = type_name;
			cxt->casts = lappend(cxt->casts, c);
		}
		/* its arguments may hold aggregates of subqueries */
	}
	if (IsA(node, Query))
		return query_tree_walker((Query *) node, aggregate_types_walker, cxt, 0);
	return expression_tree_walker(node, aggregate_types_walker, cxt);
}

void
dialect_datafusion_types(RawStmt *stmt, const char *query_text)
{
	TypesContext cxt = {NIL};
	Query	   *analysed;

	/* the literals first: they decide some aggregates' argument types */
	datafusion_types_select((SelectStmt *) stmt->stmt, &cxt);

	/*
	 * The argument types of the aggregates come from analysis: of a copy,
	 * whose errors are the query's own (the query is analysed again after).
	 */
	analysed = parse_analyze_fixedparams(copyObject(stmt), query_text, NULL, 0, NULL);
	(void) query_tree_walker(analysed, aggregate_types_walker, &cxt, 0);
	if (cxt.casts != NIL)
		datafusion_types_select((SelectStmt *) stmt->stmt, &cxt);
}

/*-------------------------------------------------------------------------
 * DataFusion's timestamp types: TimestampSecond is timestamp(0),
 * TimestampMillisecond timestamp(3), TimestampMicrosecond timestamp(6) (as
 * GreptimeDB's, without a time zone); a cast to seconds or milliseconds
 * truncates, as DataFusion's does (date_trunc, then the typmod, which would
 * round on its own).  TimestampNanosecond is timestamp(6) where that is
 * exact -- PostgreSQL's timestamps, hence every column and expression, hold
 * microseconds.  A literal with digits below the microsecond is refused
 * under every one of them: PostgreSQL cannot represent it, and would round
 * it before a truncation.  Only where no type of that name exists (as for
 * the other type names; this session's temporary types do not count).
 *-------------------------------------------------------------------------
 */
#define NANOSECOND_PRECISION 9

/* The precision of a DataFusion timestamp type name; -1 if it is none. */
static int
timestamp_type_precision(TypeName *type)
{
	const char *name;
	int			precision;
	Oid			found;

	if (list_length(type->names) != 1 || type->pct_type || type->typmods != NIL)
		return -1;
	name = strVal(linitial(type->names));
	if (strcmp(name, "timestampsecond") == 0)
		precision = 0;
	else if (strcmp(name, "timestampmillisecond") == 0)
		precision = 3;
	else if (strcmp(name, "timestampmicrosecond") == 0)
		precision = 6;
	else if (strcmp(name, "timestampnanosecond") == 0)
		precision = NANOSECOND_PRECISION;
	else
		return -1;
	/* someone's type of that name, but not this session's temporary one */
	found = LookupTypeNameOid(NULL, type, true);
	if (OidIsValid(found) && !dialect_type_is_temporary(found))
		return -1;
	return precision;
}

/* Does a time literal have a nonzero digit below the microsecond? */
static bool
has_nanoseconds(const char *value)
{
	const char *c = value;

	/* the fraction of the seconds: digits after "hh:mm:ss." */
	while ((c = strchr(c, '.')) != NULL)
	{
		int			digits = 0;

		if (c - value >= 2 && isdigit((unsigned char) c[-1]) && isdigit((unsigned char) c[-2]) &&
			c - value >= 3 && c[-3] == ':')
		{
			for (c++; isdigit((unsigned char) *c); c++)
				if (++digits > 6 && *c != '0')
					return true;
			continue;
		}
		c++;
	}
	return false;
}

static void
map_timestamp_type(TypeName *type, int precision)
{
	A_Const    *mod = makeNode(A_Const);

	mod->val.ival.type = T_Integer;
	mod->val.ival.ival = Min(precision, 6);
	mod->location = -1;
	type->names = list_make2(makeString("pg_catalog"), makeString("timestamp"));
	type->typmods = list_make1(mod);
}

static bool
timestamp_types_walker(Node *node, const char *query_text)
{
	if (node == NULL)
		return false;
	if (IsA(node, TypeCast))
	{
		TypeCast   *cast = (TypeCast *) node;
		A_Const    *arg = (A_Const *) cast->arg;
		int			precision = timestamp_type_precision(cast->typeName);

		/* the literal would be rounded to microseconds before any truncation */
		if (precision >= 0 &&
			arg && IsA(arg, A_Const) && !arg->isnull && IsA(&arg->val, String) &&
			has_nanoseconds(strVal(&arg->val)))
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("a time with nanoseconds cannot be represented in PostgreSQL"),
					 errdetail("PostgreSQL's timestamps have microsecond precision: \"%s\" would be rounded.",
							   strVal(&arg->val)),
					 errhint("Give the time to the microsecond."),
					 arg->location >= 0 ?
					 errposition(pg_mbstrlen_with_len(query_text, arg->location) + 1) : 0));

		/*
		 * DataFusion's cast to seconds or milliseconds truncates, PostgreSQL's
		 * typmod rounds: date_trunc first, then the typmod (exact).
		 */
		if (precision == 0 || precision == 3)
		{
			FuncCall   *trunc;
			A_Const    *unit = makeNode(A_Const);

			unit->val.sval.type = T_String;
			unit->val.sval.sval = precision == 0 ? "second" : "milliseconds";
			unit->location = -1;
			trunc = makeFuncCall(list_make2(makeString("pg_catalog"), makeString("date_trunc")),
								 list_make2(unit, make_system_cast(cast->arg, "timestamp", -1)),
								 COERCE_EXPLICIT_CALL, -1);
			cast->arg = (Node *) trunc;
		}
		if (precision >= 0)
			map_timestamp_type(cast->typeName, precision);
	}
	else if (IsA(node, TypeName))
	{
		TypeName   *type = (TypeName *) node;
		int			precision = timestamp_type_precision(type);

		if (precision >= 0)
			map_timestamp_type(type, precision);
		return false;
	}
	return raw_expression_tree_walker(node, timestamp_types_walker, (void *) query_text);
}

void
dialect_timestamp_types(SelectStmt *stmt, const char *query_text)
{
	(void) timestamp_types_walker((Node *) stmt, query_text);
}

bool
dialect_aggregate_visible(List *funcname, int nargs)
{
	FuncCandidateList candidates = FuncnameGetCandidates(funcname, nargs, NIL, false, false,
														 false, true);

	for (; candidates != NULL; candidates = candidates->next)
		if (get_func_prokind(candidates->oid) == PROKIND_AGGREGATE)
			return true;
	return false;
}
