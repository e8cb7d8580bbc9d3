/*-------------------------------------------------------------------------
 *
 * dialect.c
 *	  GreptimeDB's SQL dialect in a flow's query, done on PostgreSQL's own
 *	  parse trees (never on the text).
 *
 * Before analysis (raw tree):
 *	- date_bin(stride, ts) with two arguments gets the epoch as its origin,
 *	  as DataFusion's does;
 *	- a name in HAVING that is an output alias, and no column of the FROM
 *	  tables, stands for the aliased expression;
 *	- DataFusion's type names (double, string, int64, ...) are PostgreSQL's;
 *	- first_value / last_value (x ORDER BY k) without OVER, DataFusion's
 *	  aggregates, are flowpg.first_value_by / last_value_by (first_last.c);
 *	- hll, hll_merge, hll_count and the uddsketch functions are flowpg's
 *	  (hll.c, uddsketch.c) where no function of the name is visible;
 *	- for flows created through flowpg.execute, an output without a name
 *	  gets the name GreptimeDB gives it, such as sum(numbers.number).
 * After analysis:
 *	- now(), CURRENT_TIMESTAMP, CURRENT_DATE, LOCALTIMESTAMP, age(ts) and the
 *	  other transaction-time functions become flowpg.now(), the time of the
 *	  EVAL INTERVAL tick a run evaluates (eval_tick.c); the literals 'now',
 *	  'today', ... that became times are refused (read once, at creation);
 *	- SELECT DISTINCT without aggregates becomes GROUP BY on its outputs.
 * DataFusion's output types (flowpg.execute) and timestamp types are
 * dialect_types.c's.
 * The raw rewrites apply only where PostgreSQL would find nothing (no type
 * of that name, no two-argument date_bin, no column of that name), so a
 * query that is already plain PostgreSQL means what it meant, and the
 * deparsed text of a flow plans to the same tree again.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_aggregate.h"
#include "catalog/namespace.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "lib/stringinfo.h"
#include "mb/pg_wchar.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "miscadmin.h"
#include "parser/analyze.h"
#include "parser/parse_coerce.h"
#include "parser/parse_func.h"
#include "parser/parse_type.h"
#include "parser/parser.h"
#include "parser/parsetree.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

#include "dialect.h"
#include "dialect_types.h"
#include "timescale.h"

/* DataFusion's origin of date_bin without one: the Unix epoch, in UTC. */
#define EPOCH_ORIGIN "1970-01-01 00:00:00+00"

/* DataFusion type names that PostgreSQL spells differently. */
static const struct
{
	const char *datafusion;
	const char *postgres;
}			type_names[] =
{
	{"double", "float8"},
	{"float64", "float8"},
	{"float32", "float4"},
	{"string", "text"},
	{"int64", "int8"},
	{"int32", "int4"},
	{"int16", "int2"},
	{"datetime", "timestamp"},
};

/*
 * 'now', 'today', 'tomorrow', 'yesterday' as a time: PostgreSQL reads them
 * when the query is analysed, so the flow would keep the creation's time.
 */
static bool
is_moment_literal(Node *node)
{
	const char *value;

	if (node == NULL || !IsA(node, A_Const) || ((A_Const *) node)->isnull ||
		!IsA(&((A_Const *) node)->val, String))
		return false;
	value = strVal(&((A_Const *) node)->val);
	/* as a word of the value, as PostgreSQL's date/time input reads it ('tomorrow 10:00') */
	while (*value)
	{
		int			len = 0;

		while (*value && !isalpha((unsigned char) *value))
			value++;
		while (isalpha((unsigned char) value[len]))
			len++;
		if ((len == 3 && pg_strncasecmp(value, "now", 3) == 0) ||
			(len == 5 && pg_strncasecmp(value, "today", 5) == 0) ||
			(len == 8 && pg_strncasecmp(value, "tomorrow", 8) == 0) ||
			(len == 9 && pg_strncasecmp(value, "yesterday", 9) == 0))
			return true;
		value += len;
	}
	return false;
}

/* Refused once analysis shows the literal became a time (see time_literal_walker). */
static void
refuse_moment_literal(Const *c, const char *query_text)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
			 errmsg("a flow cannot use a time literal that names the present ('now', 'today', ...)"),
			 errdetail("PostgreSQL reads it once, when the flow is created; the flow would keep that time."),
			 errhint("Use now() with EVAL INTERVAL."),
			 c->location >= 0 ? errposition(pg_mbstrlen_with_len(query_text, c->location) + 1) : 0));
}

/* GreptimeDB's sketch functions, which flowpg has (hll.c, uddsketch.c). */
static const char *const sketch_functions[] = {
	"hll", "hll_merge", "hll_count", "uddsketch_state", "uddsketch_merge", "uddsketch_calc"
};

static bool
raw_walker(Node *node, void *context)
{
	if (node == NULL)
		return false;
	/* where such literals are: whether they become times, analysis tells */
	if (is_moment_literal(node))
	{
		List	  **moments = (List **) context;

		*moments = lappend_int(*moments, ((A_Const *) node)->location);
		return false;
	}
	if (IsA(node, FuncCall))
	{
		FuncCall   *call = (FuncCall *) node;

		/* GreptimeDB's sketches are flowpg's, unless a function of the name is visible */
		for (int i = 0; i < lengthof(sketch_functions); i++)
			if (dialect_is_unqualified_call(call, sketch_functions[i]) &&
				FuncnameGetCandidates(call->funcname, -1, NIL, true, true, false, true) == NULL)
				call->funcname = list_make2(makeString("flowpg"),
											makeString(pstrdup(sketch_functions[i])));
		/* unless someone has a date_bin of two arguments: then it is theirs */
		if (dialect_is_unqualified_call(call, "date_bin") && list_length(call->args) == 2 &&
			!call->agg_star && call->agg_order == NIL &&
			FuncnameGetCandidates(call->funcname, 2, NIL, false, false, false, true) == NULL)
		{
			A_Const    *origin = makeNode(A_Const);

			/* an untyped literal: a timestamp reads it as midnight, timestamptz as UTC's */
			origin->val.sval.type = T_String;
			origin->val.sval.sval = EPOCH_ORIGIN;
			origin->location = -1;
			call->args = lappend(call->args, origin);
		}
	}
	else if (IsA(node, TypeName))
	{
		TypeName   *type = (TypeName *) node;

		/*
		 * A type of that name, when there is one, is meant -- but not one of
		 * this session's temporary types (the session may not be the
		 * owner's: a pending flow starting), which no other process sees.
		 */
		Oid			found = (list_length(type->names) == 1 && !type->pct_type) ?
			LookupTypeNameOid(NULL, type, true) : InvalidOid;

		if (list_length(type->names) == 1 && !type->pct_type &&
			(!OidIsValid(found) || dialect_type_is_temporary(found)))
		{
			const char *name = strVal(linitial(type->names));

			for (int i = 0; i < lengthof(type_names); i++)
				if (strcmp(name, type_names[i].datafusion) == 0)
				{
					type->names = list_make2(makeString("pg_catalog"),
											 makeString(pstrdup(type_names[i].postgres)));
					break;
				}
		}
		return false;
	}
	return raw_expression_tree_walker(node, raw_walker, context);
}

static bool
alias_has_column(Alias *alias, const char *name)
{
	ListCell   *lc;

	foreach(lc, alias->colnames)
		if (strcmp(strVal(lfirst(lc)), name) == 0)
			return true;
	return false;
}

/* Is name a column of one of the FROM list's tables (as far as they can be known)? */
static bool
from_has_column(List *from, const char *name)
{
	ListCell   *lc;

	foreach(lc, from)
	{
		Node	   *item = lfirst(lc);

		if (IsA(item, RangeVar))
		{
			RangeVar   *rv = (RangeVar *) item;
			Oid			relid = RangeVarGetRelid(rv, NoLock, true);
			AttrNumber	attnum;

			if (rv->alias && alias_has_column(rv->alias, name))
				return true;
			/* a column renamed by the alias's list is not seen by its old name */
			attnum = OidIsValid(relid) ? get_attnum(relid, name) : InvalidAttrNumber;
			if (attnum != InvalidAttrNumber &&
				(rv->alias == NULL || attnum > list_length(rv->alias->colnames)))
				return true;
		}
		else if (IsA(item, JoinExpr))
		{
			JoinExpr   *join = (JoinExpr *) item;

			if ((join->alias && alias_has_column(join->alias, name)) ||
				from_has_column(list_make2(join->larg, join->rarg), name))
				return true;
		}
		else if (IsA(item, RangeSubselect))
		{
			SelectStmt *sub = (SelectStmt *) ((RangeSubselect *) item)->subquery;
			Alias	   *alias = ((RangeSubselect *) item)->alias;
			ListCell   *lt;

			if (alias && alias_has_column(alias, name))
				return true;
			if (!IsA(sub, SelectStmt))
				return true;	/* cannot tell: keep PostgreSQL's meaning */
			foreach(lt, sub->targetList)
			{
				ResTarget  *rt = lfirst_node(ResTarget, lt);

				if (rt->name == NULL || strcmp(rt->name, name) == 0 ||
					IsA(rt->val, ColumnRef))
					return true;
			}
		}
		else
			return true;
	}
	return false;
}

static Node *having_aliases(Node *node, SelectStmt *stmt);

static void
having_aliases_list(List *args, SelectStmt *stmt)
{
	ListCell   *lc;

	foreach(lc, args)
		lfirst(lc) = having_aliases(lfirst(lc), stmt);
}

/*
 * HAVING names an output by its alias: the aliased expression, unless a
 * column of that name exists (then it is the column, as in PostgreSQL).
 * Rebuilds the expression kinds a HAVING clause is made of.
 */
static Node *
having_aliases(Node *node, SelectStmt *stmt)
{
	if (node == NULL)
		return NULL;
	switch (nodeTag(node))
	{
		case T_ColumnRef:
			{
				ColumnRef  *ref = (ColumnRef *) node;
				const char *name;
				ListCell   *lc;

				if (list_length(ref->fields) != 1 || !IsA(linitial(ref->fields), String))
					return node;
				name = strVal(linitial(ref->fields));
				foreach(lc, stmt->targetList)
				{
					ResTarget  *rt = lfirst_node(ResTarget, lc);

					if (rt->name && strcmp(rt->name, name) == 0 &&
						!from_has_column(stmt->fromClause, name))
						return copyObject(rt->val);
				}
				return node;
			}
		case T_A_Expr:
			{
				A_Expr	   *e = (A_Expr *) node;

				e->lexpr = having_aliases(e->lexpr, stmt);
				e->rexpr = having_aliases(e->rexpr, stmt);
				return node;
			}
		case T_BoolExpr:
			having_aliases_list(((BoolExpr *) node)->args, stmt);
			return node;
		case T_FuncCall:
			having_aliases_list(((FuncCall *) node)->args, stmt);
			return node;
		case T_TypeCast:
			((TypeCast *) node)->arg = having_aliases(((TypeCast *) node)->arg, stmt);
			return node;
		case T_NullTest:
			((NullTest *) node)->arg = (Expr *) having_aliases((Node *) ((NullTest *) node)->arg, stmt);
			return node;
		case T_BooleanTest:
			((BooleanTest *) node)->arg = (Expr *) having_aliases((Node *) ((BooleanTest *) node)->arg, stmt);
			return node;
		case T_CoalesceExpr:
			having_aliases_list(((CoalesceExpr *) node)->args, stmt);
			return node;
		case T_List:
			having_aliases_list((List *) node, stmt);
			return node;
		default:
			return node;
	}
}

/*
 * DataFusion's aggregates first_value(x ORDER BY k) and last_value(x ORDER
 * BY k) (PostgreSQL has only the window functions, which need OVER) become
 * flowpg.first_value_by(x, k) / flowpg.last_value_by(x, k); ORDER BY k DESC
 * swaps them.  Unless first_value / last_value of that many arguments is
 * someone's aggregate: then it is theirs.
 */
static bool
first_last_walker(Node *node, void *context)
{
	const char *query_text = (const char *) context;

	if (node == NULL)
		return false;
	if (IsA(node, FuncCall))
	{
		FuncCall   *call = (FuncCall *) node;
		bool		last = dialect_is_unqualified_call(call, "last_value");
		const char *name = last ? "last_value" : "first_value";
		SortBy	   *sort;
		bool		desc;

		if ((last || dialect_is_unqualified_call(call, "first_value")) && call->over == NULL &&
			list_length(call->args) == 1 && !call->agg_within_group && !call->func_variadic)
		{
			if (!dialect_aggregate_visible(call->funcname, 1))
			{
				int			position = call->location >= 0 ?
					pg_mbstrlen_with_len(query_text, call->location) + 1 : 0;

				if (call->agg_order == NIL)
					ereport(ERROR,
							(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
							 errmsg("%s without OVER needs ORDER BY", name),
							 errdetail("As an aggregate, %s(x ORDER BY key) is flowpg.%s_by(x, key); GreptimeDB orders by the time index when there is no ORDER BY, and a PostgreSQL table has none.",
									   name, name),
							 errhint("Write %s(x ORDER BY ts) with the time column, or add OVER (...) for the window function.",
									 name),
							 position ? errposition(position) : 0));
				if (list_length(call->agg_order) > 1 || call->agg_distinct)
					ereport(ERROR,
							(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
							 errmsg(call->agg_distinct ? "%s as an aggregate cannot have DISTINCT" :
									"%s as an aggregate takes one ORDER BY key", name),
							 errdetail("flowpg computes %s(x ORDER BY key) as flowpg.%s_by(x, key), which breaks ties by the value.",
									   name, name),
							 call->agg_distinct ? 0 :
							 errhint("Order by one expression."),
							 position ? errposition(position) : 0));
				sort = linitial_node(SortBy, call->agg_order);
				desc = sort->sortby_dir == SORTBY_DESC;
				if (sort->sortby_dir == SORTBY_USING ||
					(sort->sortby_nulls == SORTBY_NULLS_FIRST && !desc) ||
					(sort->sortby_nulls == SORTBY_NULLS_LAST && desc))
					ereport(ERROR,
							(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
							 errmsg("%s supports ORDER BY key ASC NULLS LAST and DESC NULLS FIRST only", name),
							 errdetail("flowpg.first_value_by and flowpg.last_value_by order NULL keys after every other key."),
							 errhint("Order by an expression that places NULLs where they belong, such as coalesce(key, ...)."),
							 position ? errposition(position) : 0));
				/* the last row in DESC order is the first in ASC order */
				call->funcname = list_make2(makeString("flowpg"),
											makeString(last != desc ? "last_value_by" : "first_value_by"));
				call->args = lappend(call->args, sort->node);
				call->agg_order = NIL;
			}
		}
	}
	return raw_expression_tree_walker(node, first_last_walker, context);
}

List *
dialect_rewrite_raw(SelectStmt *stmt, const char *query_text, bool greptime_names,
					bool cut_long_names)
{
	List	   *moments = NIL;

	/* names first: of the query as written, not of its rewrites */
	if (greptime_names)
	{
		ListCell   *lc;

		foreach(lc, stmt->targetList)
		{
			ResTarget  *rt = lfirst_node(ResTarget, lc);

			if (rt->name != NULL || IsA(rt->val, ColumnRef))
				continue;
			rt->name = dialect_output_name(rt->val, stmt->fromClause, cut_long_names);
			/* PostgreSQL's name would be a column GreptimeDB users do not expect */
			if (rt->name == NULL)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
						 errmsg("output column %d of the flow's query needs an alias",
								foreach_current_index(lc) + 1),
						 errdetail("flowpg names outputs without an alias as GreptimeDB does for columns, function calls, constants, operators, casts, CASE, NOT and IS NULL, in at most %d bytes (a longer name is cut when the sink exists: its column is found by position).",
								   NAMEDATALEN - 1),
						 errhint("Name it with AS."),
						 rt->location >= 0 ?
						 errposition(pg_mbstrlen_with_len(query_text, rt->location) + 1) : 0));
		}
	}
	(void) raw_walker((Node *) stmt, &moments);
	(void) first_last_walker((Node *) stmt, (void *) query_text);
	timescale_rewrite_raw((Node *) stmt);
	dialect_timestamp_types(stmt, query_text);
	if (stmt->havingClause)
		stmt->havingClause = having_aliases(stmt->havingClause, stmt);
	return moments;
}

/* flowpg.now(), the tick time of the run (see eval_tick.c) */
static Oid
dialect_now_function(void)
{
	return LookupFuncName(list_make2(makeString("flowpg"), makeString("now")),
						  0, NULL, false);
}

static Node *
tick_now(Oid now_func, Oid type, int32 typmod)
{
	Node	   *now = (Node *) makeFuncExpr(now_func, TIMESTAMPTZOID, NIL,
											InvalidOid, InvalidOid, COERCE_EXPLICIT_CALL);

	if (type == TIMESTAMPTZOID && typmod < 0)
		return now;
	return coerce_to_target_type(NULL, now, TIMESTAMPTZOID, type, typmod,
								 COERCION_EXPLICIT, COERCE_EXPLICIT_CAST, -1);
}

static Node *
now_mutator(Node *node, Oid *now_func)
{
	if (node == NULL)
		return NULL;
	if (IsA(node, FuncExpr))
	{
		FuncExpr   *f = (FuncExpr *) node;

		if (f->funcid == F_NOW || f->funcid == F_TRANSACTION_TIMESTAMP ||
			f->funcid == F_STATEMENT_TIMESTAMP)
			return tick_now(*now_func, TIMESTAMPTZOID, -1);
		/* age(ts) is age(current_date, ts): the tick's date */
		if (f->funcid == F_AGE_TIMESTAMPTZ || f->funcid == F_AGE_TIMESTAMP)
		{
			bool		tz = f->funcid == F_AGE_TIMESTAMPTZ;
			Node	   *today = coerce_to_target_type(NULL, tick_now(*now_func, DATEOID, -1),
													  DATEOID, tz ? TIMESTAMPTZOID : TIMESTAMPOID, -1,
													  COERCION_EXPLICIT, COERCE_EXPLICIT_CAST, -1);
			List	   *args = list_make2(today, now_mutator(linitial(f->args), now_func));

			return (Node *) makeFuncExpr(tz ? F_AGE_TIMESTAMPTZ_TIMESTAMPTZ : F_AGE_TIMESTAMP_TIMESTAMP,
										 INTERVALOID, args, InvalidOid, InvalidOid,
										 COERCE_EXPLICIT_CALL);
		}
	}
	else if (IsA(node, SQLValueFunction))
	{
		SQLValueFunction *svf = (SQLValueFunction *) node;

		switch (svf->op)
		{
			case SVFOP_CURRENT_DATE:
			case SVFOP_CURRENT_TIME:
			case SVFOP_CURRENT_TIME_N:
			case SVFOP_CURRENT_TIMESTAMP:
			case SVFOP_CURRENT_TIMESTAMP_N:
			case SVFOP_LOCALTIME:
			case SVFOP_LOCALTIME_N:
			case SVFOP_LOCALTIMESTAMP:
			case SVFOP_LOCALTIMESTAMP_N:
				return tick_now(*now_func, svf->type, svf->typmod);
			default:
				break;
		}
	}
	else if (IsA(node, Query))
		return (Node *) query_tree_mutator((Query *) node, now_mutator, now_func, 0);
	return expression_tree_mutator(node, now_mutator, now_func);
}

/* A literal the raw tree marked that analysis made a date/time constant. */
typedef struct MomentContext
{
	List	   *moments;		/* byte locations */
	const char *query_text;
} MomentContext;

static bool
time_literal_walker(Node *node, MomentContext *cxt)
{
	if (node == NULL)
		return false;
	if (IsA(node, Const))
	{
		Const	   *c = (Const *) node;

		if (list_member_int(cxt->moments, c->location) &&
			(c->consttype == TIMESTAMPTZOID || c->consttype == TIMESTAMPOID ||
			 c->consttype == DATEOID || c->consttype == TIMEOID || c->consttype == TIMETZOID))
			refuse_moment_literal(c, cxt->query_text);
		return false;
	}
	if (IsA(node, Query))
		return query_tree_walker((Query *) node, time_literal_walker, cxt, 0);
	return expression_tree_walker(node, time_literal_walker, cxt);
}

Query *
dialect_rewrite_query(Query *query, List *moments, const char *query_text)
{
	Oid			now_func = dialect_now_function();
	MomentContext cxt = {moments, query_text};

	if (moments)
		(void) query_tree_walker(query, time_literal_walker, &cxt, 0);
	query = query_tree_mutator(query, now_mutator, &now_func, 0);
	query = timescale_rewrite_query(query);

	/* SELECT DISTINCT a, b: the groups of (a, b) */
	if (query->distinctClause != NIL && !query->hasDistinctOn &&
		query->groupClause == NIL && !query->hasAggs && query->havingQual == NULL &&
		query->groupingSets == NIL)
	{
		query->groupClause = query->distinctClause;
		query->distinctClause = NIL;
	}

	/*
	 * SELECT DISTINCT a, w ... GROUP BY a, w: rows of groups whose every key
	 * is an output are distinct already.
	 */
	if (query->distinctClause != NIL && !query->hasDistinctOn &&
		query->groupClause != NIL && query->groupingSets == NIL)
	{
		ListCell   *lc;
		bool		keys_in_output = true;

		foreach(lc, query->groupClause)
		{
			SortGroupClause *sgc = lfirst_node(SortGroupClause, lc);

			if (get_sortgroupclause_tle(sgc, query->targetList)->resjunk)
				keys_in_output = false;
		}
		if (keys_in_output)
			query->distinctClause = NIL;
	}
	return query;
}

static bool
now_walker(Node *node, Oid *now_func)
{
	if (node == NULL)
		return false;
	if (IsA(node, FuncExpr) && ((FuncExpr *) node)->funcid == *now_func)
		return true;
	if (IsA(node, Query))
		return query_tree_walker((Query *) node, now_walker, now_func, 0);
	return expression_tree_walker(node, now_walker, now_func);
}

bool
dialect_uses_now(Query *query)
{
	Oid			now_func = dialect_now_function();

	return query_tree_walker(query, now_walker, &now_func, 0);
}

/* Does an expression of a query call flowpg.now() itself (subqueries included)? */
bool
dialect_expr_uses_now(Node *expr)
{
	Oid			now_func = dialect_now_function();

	return now_walker(expr, &now_func);
}

/* The table a column of the query belongs to, as GreptimeDB qualifies it. */
static const char *
single_relation_name(List *from)
{
	RangeVar   *rv;

	if (list_length(from) != 1 || !IsA(linitial(from), RangeVar))
		return NULL;
	rv = linitial(from);
	return rv->alias ? rv->alias->aliasname : rv->relname;
}

static bool
append_display_name(StringInfo buf, Node *expr, const char *relation)
{
	switch (nodeTag(expr))
	{
		case T_ColumnRef:
			{
				ColumnRef  *ref = (ColumnRef *) expr;
				ListCell   *lc;

				if (IsA(llast(ref->fields), A_Star))
				{
					appendStringInfoChar(buf, '*');
					return true;
				}
				if (list_length(ref->fields) == 1 && relation)
					appendStringInfo(buf, "%s.", relation);
				foreach(lc, ref->fields)
					appendStringInfo(buf, "%s%s", foreach_current_index(lc) ? "." : "",
									 strVal(lfirst(lc)));
				return true;
			}
		case T_FuncCall:
			{
				FuncCall   *call = (FuncCall *) expr;
				ListCell   *lc;

				if (call->agg_filter || call->over)
					return false;
				appendStringInfo(buf, "%s(", strVal(llast(call->funcname)));
				if (call->agg_distinct)
					appendStringInfoString(buf, "DISTINCT ");
				if (call->agg_star)
					appendStringInfoChar(buf, '*');
				foreach(lc, call->args)
				{
					if (foreach_current_index(lc) > 0)
						appendStringInfoChar(buf, ',');
					if (!append_display_name(buf, lfirst(lc), relation))
						return false;
				}
				appendStringInfoChar(buf, ')');
				/* DataFusion's: ORDER BY [t.ts ASC NULLS LAST, t.k DESC NULLS FIRST] */
				foreach(lc, call->agg_order)
				{
					SortBy	   *sort = lfirst_node(SortBy, lc);
					bool		desc = sort->sortby_dir == SORTBY_DESC;

					if (sort->sortby_dir == SORTBY_USING)
						return false;
					appendStringInfoString(buf, foreach_current_index(lc) ? ", " : " ORDER BY [");
					if (!append_display_name(buf, sort->node, relation))
						return false;
					appendStringInfo(buf, " %s NULLS %s", desc ? "DESC" : "ASC",
									 sort->sortby_nulls == SORTBY_NULLS_FIRST ||
									 (sort->sortby_nulls == SORTBY_NULLS_DEFAULT && desc) ?
									 "FIRST" : "LAST");
				}
				if (call->agg_order)
					appendStringInfoChar(buf, ']');
				return true;
			}
		case T_A_Const:
			{
				A_Const    *c = (A_Const *) expr;

				if (c->isnull)
					appendStringInfoString(buf, "NULL");
				else if (IsA(&c->val, Integer))
					appendStringInfo(buf, "Int64(%d)", intVal(&c->val));
				else if (IsA(&c->val, Float))
					appendStringInfo(buf, "Float64(%s)", castNode(Float, &c->val)->fval);
				else if (IsA(&c->val, String))
					appendStringInfo(buf, "Utf8(\"%s\")", strVal(&c->val));
				else if (IsA(&c->val, Boolean))
					appendStringInfo(buf, "Boolean(%s)", boolVal(&c->val) ? "true" : "false");
				else
					return false;
				return true;
			}
		case T_A_Expr:
			{
				A_Expr	   *e = (A_Expr *) expr;

				const char *op;

				if (e->kind != AEXPR_OP || list_length(e->name) != 1)
					return false;
				op = strVal(linitial(e->name));
				if (e->lexpr == NULL)
				{
					if (strcmp(op, "-") != 0)
						return false;
					appendStringInfoString(buf, "(- ");
					if (!append_display_name(buf, e->rexpr, relation))
						return false;
					appendStringInfoChar(buf, ')');
					return true;
				}
				if (!append_display_name(buf, e->lexpr, relation))
					return false;
				appendStringInfo(buf, " %s ", strcmp(op, "<>") == 0 ? "!=" : op);
				return append_display_name(buf, e->rexpr, relation);
			}
		case T_TypeCast:
			/* DataFusion does not show casts in names (as PostgreSQL and Spark) ... */
			if (IsA(((TypeCast *) expr)->arg, A_Const))
				return false;	/* ... but folds a constant's into a literal of its own */
			return append_display_name(buf, ((TypeCast *) expr)->arg, relation);
		case T_NullTest:
			{
				NullTest   *nt = (NullTest *) expr;

				if (!append_display_name(buf, (Node *) nt->arg, relation))
					return false;
				appendStringInfoString(buf, nt->nulltesttype == IS_NULL ? " IS NULL" : " IS NOT NULL");
				return true;
			}
		case T_BoolExpr:
			{
				BoolExpr   *b = (BoolExpr *) expr;
				ListCell   *lc;

				if (b->boolop == NOT_EXPR)
				{
					appendStringInfoString(buf, "NOT ");
					return append_display_name(buf, linitial(b->args), relation);
				}
				foreach(lc, b->args)
				{
					if (foreach_current_index(lc) > 0)
						appendStringInfoString(buf, b->boolop == AND_EXPR ? " AND " : " OR ");
					if (!append_display_name(buf, lfirst(lc), relation))
						return false;
				}
				return true;
			}
		case T_CaseExpr:
			{
				CaseExpr   *c = (CaseExpr *) expr;
				ListCell   *lc;

				appendStringInfoString(buf, "CASE ");
				if (c->arg)
				{
					if (!append_display_name(buf, (Node *) c->arg, relation))
						return false;
					appendStringInfoChar(buf, ' ');
				}
				foreach(lc, c->args)
				{
					CaseWhen   *w = lfirst_node(CaseWhen, lc);

					appendStringInfoString(buf, "WHEN ");
					if (!append_display_name(buf, (Node *) w->expr, relation))
						return false;
					appendStringInfoString(buf, " THEN ");
					if (!append_display_name(buf, (Node *) w->result, relation))
						return false;
					appendStringInfoChar(buf, ' ');
				}
				if (c->defresult)
				{
					appendStringInfoString(buf, "ELSE ");
					if (!append_display_name(buf, (Node *) c->defresult, relation))
						return false;
					appendStringInfoChar(buf, ' ');
				}
				appendStringInfoString(buf, "END");
				return true;
			}
		default:
			return false;
	}
}

/*
 * The name GreptimeDB (DataFusion's schema name) gives an output without an
 * alias: sum(numbers.number), count(*), count(Int64(1)), casts not shown,
 * CASE WHEN ... END; NULL when flowpg cannot tell it, or when it is too
 * long for a column name unless cut_long_name (it is then cut).
 */
char *
dialect_output_name(Node *expr, List *from, bool cut_long_name)
{
	StringInfoData buf;

	initStringInfo(&buf);
	if (!append_display_name(&buf, expr, single_relation_name(from)))
		return NULL;
	if (buf.len >= NAMEDATALEN)
	{
		/* a sink flowpg creates could not have GreptimeDB's column */
		if (!cut_long_name)
			return NULL;
		/* an existing sink's column is matched by position: cut, as PostgreSQL cuts an identifier */
		buf.data[pg_mbcliplen(buf.data, buf.len, NAMEDATALEN - 1)] = '\0';
	}
	return buf.data;
}

/*-------------------------------------------------------------------------
 * Functions of TimescaleDB and its Toolkit that flowpg does not have:
 * PostgreSQL's "function ... does not exist" for a call of one, at that
 * call, gets a hint saying what to use.  The calls are the raw tree's
 * (FuncCall nodes), matched by position with the error's.
 *-------------------------------------------------------------------------
 */
static const struct
{
	const char *greptime;
	const char *hint;
}			function_hints[] =
{
	{"time_bucket_gapfill", "TimescaleDB's time_bucket_gapfill fills empty buckets when a query reads them: a flow keeps the buckets that have rows; fill the gaps when reading the sink (generate_series of the buckets LEFT JOIN the sink)."},
	{"locf", "TimescaleDB's locf fills gaps when a query reads them: read the sink with a window function such as last_value over the buckets instead."},
	{"interpolate", "TimescaleDB's interpolate fills gaps when a query reads them: interpolate when reading the sink instead."},
	{"time_bucket_ng", "Use time_bucket (TimescaleDB's semantics, flowpg.time_bucket), date_bin or date_trunc."},
	{"histogram", "TimescaleDB's histogram(x, min, max, n) is width_bucket: GROUP BY width_bucket(x, min, max, n) and count(*)."},
	{"percentile_agg", "TimescaleDB Toolkit's percentile_agg corresponds to tdigest(x, 100) of the extension tdigest (Debian package postgresql-15-tdigest); percentile_cont(q) WITHIN GROUP (ORDER BY x) is exact (batching)."},
	{"approx_percentile", "TimescaleDB Toolkit's approx_percentile(q, state) corresponds to tdigest_percentile(state, q) of the extension tdigest (Debian package postgresql-15-tdigest)."},
	{"stats_agg", "TimescaleDB Toolkit's stats_agg: keep count(x), sum(x), avg(x), stddev_samp(x), var_samp(x) as columns of the flow."},
	{"counter_agg", "TimescaleDB Toolkit's counter_agg: a rate over a counter is a recording rule (GROUP BY a now() key with eval_interval) or first(value, ts) and last(value, ts) per bucket."},
	{"time_weight", "TimescaleDB Toolkit's time_weight has no combine function flowpg could keep: a batching flow with window functions over the source is the way."},
	{"candlestick_agg", "TimescaleDB Toolkit's candlestick_agg: first(price, ts), max(price), min(price), last(price, ts) and sum(volume) as columns of the flow."},
	{"approx_percentile_cont", "approx_percentile_cont(x, q) corresponds to tdigest_percentile(x, 100, q) of the extension tdigest (Debian package postgresql-15-tdigest; CREATE EXTENSION tdigest); PostgreSQL's percentile_cont(q) WITHIN GROUP (ORDER BY x) is exact."},
};

typedef struct FunctionHints
{
	List	   *calls;			/* FuncCall nodes of such names */
	const char *query_text;
} FunctionHints;

static bool
function_hints_walker(Node *node, FunctionHints *hints)
{
	if (node == NULL)
		return false;
	if (IsA(node, FuncCall))
	{
		FuncCall   *call = (FuncCall *) node;

		for (int i = 0; i < lengthof(function_hints); i++)
			if (dialect_is_unqualified_call(call, function_hints[i].greptime) && call->location >= 0)
			{
				hints->calls = lappend(hints->calls, call);
				break;
			}
	}
	return raw_expression_tree_walker(node, function_hints_walker, (void *) hints);
}

static void
function_hints_callback(void *arg)
{
	FunctionHints *hints = (FunctionHints *) arg;
	int			position = geterrposition();
	ListCell   *lc;

	if (geterrcode() != ERRCODE_UNDEFINED_FUNCTION || position <= 0)
		return;
	foreach(lc, hints->calls)
	{
		FuncCall   *call = lfirst(lc);

		if (pg_mbstrlen_with_len(hints->query_text, call->location) + 1 != position)
			continue;
		for (int i = 0; i < lengthof(function_hints); i++)
			if (dialect_is_unqualified_call(call, function_hints[i].greptime))
			{
				errhint("%s", function_hints[i].hint);
				return;
			}
	}
}

/*
 * Analyses the flow's query (after dialect_rewrite_raw): with
 * datafusion_types, DataFusion's output types first (a flow from
 * flowpg.execute).
 */
Query *
dialect_analyze(RawStmt *stmt, const char *query_text, bool datafusion_types)
{
	FunctionHints hints = {NIL, query_text};
	ErrorContextCallback callback;
	Query	   *query;

	(void) function_hints_walker(stmt->stmt, &hints);
	callback.callback = function_hints_callback;
	callback.arg = &hints;
	callback.previous = error_context_stack;
	if (hints.calls != NIL)
		error_context_stack = &callback;
	if (datafusion_types)
		dialect_datafusion_types(stmt, query_text);
	query = parse_analyze_fixedparams(stmt, query_text, NULL, 0, NULL);
	error_context_stack = callback.previous;
	return query;
}
