/*-------------------------------------------------------------------------
 *
 * timescale.c
 *	  TimescaleDB's names in a flow's query, for its users, done on
 *	  PostgreSQL's parse trees (dialect.c calls these).
 *
 * Before analysis (raw tree), where PostgreSQL would find nothing of that
 * name (TimescaleDB is not installed):
 *	- time_bucket(...) is flowpg.time_bucket(...), TimescaleDB's semantics
 *	  (time_bucket.c), with its parameter names (origin, "offset",
 *	  timezone);
 *	- first(value, time) and last(value, time), TimescaleDB's aggregates,
 *	  are flowpg.first_value_by / last_value_by (first_last.c).
 * After analysis, the common forms of flowpg.time_bucket -- a constant
 * width in days or smaller units, or of 1, 3 or 12 months, a constant
 * origin, offset or time zone -- become the date_bin / date_trunc
 * expressions they equal, so that the flow's query reads as PostgreSQL and
 * its window is PostgreSQL's own function.  Other forms keep the call.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_type.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "parser/parse_collate.h"
#include "parser/parse_node.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"

#include "dialect_types.h"
#include "time_bucket.h"
#include "timescale.h"

static bool
raw_walker(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, FuncCall))
	{
		FuncCall   *call = (FuncCall *) node;
		bool		last = dialect_is_unqualified_call(call, "last");

		if (dialect_is_unqualified_call(call, "time_bucket") &&
			FuncnameGetCandidates(call->funcname, -1, NIL, true, true, false, true) == NULL)
			call->funcname = list_make2(makeString("flowpg"), makeString("time_bucket"));
		else if ((last || dialect_is_unqualified_call(call, "first")) &&
				 list_length(call->args) == 2 && call->over == NULL && call->agg_order == NIL &&
				 !call->agg_star && !call->agg_distinct && !call->agg_within_group &&
				 !dialect_aggregate_visible(call->funcname, 2))
			call->funcname = list_make2(makeString("flowpg"),
										makeString(last ? "last_value_by" : "first_value_by"));
	}
	return raw_expression_tree_walker(node, raw_walker, context);
}

void
timescale_rewrite_raw(Node *stmt)
{
	(void) raw_walker(stmt, NULL);
}

static Const *
text_const(const char *value)
{
	return makeConst(TEXTOID, -1, DEFAULT_COLLATION_OID, -1, CStringGetTextDatum(value), false, false);
}

static Const *
time_const(Oid type, Timestamp value)
{
	return makeConst(type, -1, InvalidOid, sizeof(Timestamp), TimestampGetDatum(value), false,
					 FLOAT8PASSBYVAL);
}

static Node *
call(Oid funcid, Oid rettype, List *args)
{
	return (Node *) makeFuncExpr(funcid, rettype, args, InvalidOid, InvalidOid, COERCE_EXPLICIT_CALL);
}

/* A constant argument's value; NULL when not a constant (or absent: a default) */
static Const *
constant(Node *arg)
{
	return arg && IsA(arg, Const) ? (Const *) arg : NULL;
}

static Node *
interval_const(Interval *value)
{
	return (Node *) makeConst(INTERVALOID, -1, InvalidOid, sizeof(Interval),
							  IntervalPGetDatum(value), false, false);
}

/* date_trunc's unit for a width of 1, 3 or 12 months; NULL otherwise */
static const char *
month_unit(const Interval *width)
{
	return width->month == 1 ? "month" : width->month == 3 ? "quarter" :
		width->month == 12 ? "year" : NULL;
}

/*
 * date_bin(width, ts, origin + offset) over timestamps or instants: a
 * bucket of days or smaller units, from the origin (TimescaleDB's, when
 * none is given) moved by the offset.
 */
static Node *
date_bin(Oid type, Interval *width, Node *ts, bool has_origin, Timestamp origin, Interval *offset)
{
	Timestamp	shifted = has_origin ? origin : time_bucket_default_origin(width);

	if (offset)
		shifted = DatumGetTimestamp(DirectFunctionCall2(timestamp_pl_interval,
														TimestampGetDatum(shifted),
														IntervalPGetDatum(offset)));
	return call(type == TIMESTAMPTZOID ? F_DATE_BIN_INTERVAL_TIMESTAMPTZ_TIMESTAMPTZ :
				F_DATE_BIN_INTERVAL_TIMESTAMP_TIMESTAMP, type,
				list_make3(interval_const(width), ts, time_const(type, shifted)));
}

/*
 * The bucket of a local time (a timestamp expression): date_bin from the
 * origin shifted by the offset, or date_trunc of the time less the offset,
 * plus the offset.  NULL when no built-in expression equals it.
 */
static Node *
local_bucket(Interval *width, Node *ts, bool has_origin, Timestamp origin, Interval *offset)
{
	const char *unit;
	Node	   *bucket;

	if (width->month == 0)
		return date_bin(TIMESTAMPOID, width, ts, has_origin, origin, offset);
	unit = month_unit(width);
	if (unit == NULL || has_origin)
		return NULL;
	if (offset)
		ts = call(F_TIMESTAMP_MI_INTERVAL, TIMESTAMPOID, list_make2(ts, interval_const(offset)));
	bucket = call(F_DATE_TRUNC_TEXT_TIMESTAMP, TIMESTAMPOID, list_make2(text_const(unit), ts));
	if (offset)
		bucket = call(F_TIMESTAMP_PL_INTERVAL, TIMESTAMPOID, list_make2(bucket, interval_const(offset)));
	return bucket;
}

/*
 * The built-in expression a call of flowpg.time_bucket equals, or NULL.
 * Its arguments by position (named ones where they belong, defaults
 * absent), its signature from the catalog.
 */
static Node *
equivalent(FuncExpr *expr)
{
	Node	   *arg[5] = {0};
	Oid		   *types;
	int			nargs;
	ListCell   *lc;
	Const	   *c;
	Interval   *width;
	Interval   *offset = NULL;
	bool		has_origin = false;
	Timestamp	origin = 0;
	Node	   *zone = NULL;
	Node	   *ts;
	Node	   *bucket;

	(void) get_func_signature(expr->funcid, &types, &nargs);
	if (nargs < 2 || nargs > 5 || types[0] != INTERVALOID)
		return NULL;			/* integers: the call itself */
	foreach(lc, expr->args)
	{
		Node	   *a = lfirst(lc);

		if (IsA(a, NamedArgExpr))
			arg[((NamedArgExpr *) a)->argnumber] = (Node *) ((NamedArgExpr *) a)->arg;
		else
			arg[foreach_current_index(lc)] = a;
	}
	if ((c = constant(arg[0])) == NULL || c->constisnull)
		return NULL;
	width = DatumGetIntervalP(c->constvalue);
	time_bucket_check_width(width);		/* refused at creation, not at the first row */
	ts = arg[1];
	for (int i = 2; i < nargs; i++)
	{
		if (arg[i] == NULL)
			continue;			/* a default: NULL */
		if ((c = constant(arg[i])) == NULL)
			return NULL;
		if (c->constisnull)
			continue;
		if (types[i] == INTERVALOID)
			offset = DatumGetIntervalP(c->constvalue);
		else if (types[i] == TEXTOID)
			zone = (Node *) c;
		else
		{
			has_origin = true;
			origin = types[i] == DATEOID ?
				DatumGetTimestamp(DirectFunctionCall1(date_timestamp, c->constvalue)) :
				DatumGetTimestamp(c->constvalue);
		}
	}

	switch (types[1])
	{
		case TIMESTAMPTZOID:
			/* instants, in UTC: date_bin over instants equals it */
			if (zone == NULL && width->month == 0)
				return date_bin(TIMESTAMPTZOID, width, ts, has_origin, origin, offset);
			/* months, or a zone: its local time bucketed, back to an instant */
			if (zone == NULL)
				zone = (Node *) text_const("UTC");
			else if (has_origin)
				origin = DatumGetTimestamp(DirectFunctionCall2(timestamptz_zone,
															   ((Const *) zone)->constvalue,
															   TimestampTzGetDatum(origin)));
			bucket = local_bucket(width, call(F_TIMEZONE_TEXT_TIMESTAMPTZ, TIMESTAMPOID,
											  list_make2(copyObject(zone), ts)),
								  has_origin, origin, offset);
			return bucket ? call(F_TIMEZONE_TEXT_TIMESTAMP, TIMESTAMPTZOID,
								 list_make2(copyObject(zone), bucket)) : NULL;
		case TIMESTAMPOID:
			return local_bucket(width, ts, has_origin, origin, offset);
		case DATEOID:
			bucket = local_bucket(width, call(F_TIMESTAMP_DATE, TIMESTAMPOID, list_make1(ts)),
								  has_origin, origin, offset);
			return bucket ? call(F_DATE_TIMESTAMP, DATEOID, list_make1(bucket)) : NULL;
		default:
			return NULL;
	}
}

static Node *
bucket_mutator(Node *node, Oid *namespace)
{
	if (node == NULL)
		return NULL;
	if (IsA(node, FuncExpr) && get_func_namespace(((FuncExpr *) node)->funcid) == *namespace)
	{
		FuncExpr   *expr = (FuncExpr *) expression_tree_mutator(node, bucket_mutator, namespace);
		char	   *name = get_func_name(expr->funcid);
		Node	   *replaced = name && strcmp(name, "time_bucket") == 0 ? equivalent(expr) : NULL;

		if (replaced)
		{
			ParseState *pstate = make_parsestate(NULL);

			assign_expr_collations(pstate, replaced);
			free_parsestate(pstate);
			return replaced;
		}
		return (Node *) expr;
	}
	if (IsA(node, Query))
		return (Node *) query_tree_mutator((Query *) node, bucket_mutator, namespace, 0);
	return expression_tree_mutator(node, bucket_mutator, namespace);
}

Query *
timescale_rewrite_query(Query *query)
{
	Oid			namespace = get_namespace_oid("flowpg", true);

	if (!OidIsValid(namespace))
		return query;
	return query_tree_mutator(query, bucket_mutator, &namespace, 0);
}
