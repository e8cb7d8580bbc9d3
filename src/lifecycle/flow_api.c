/*-------------------------------------------------------------------------
 *
 * flow_api.c
 *	  The SQL functions create_flow, drop_flow, window_bounds,
 *	  flow_window_bounds and _deparse_query: arguments read and checked,
 *	  then handed to flow_create.c, flow_drop.c, window.c and planner.c.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/pg_index.h"
#include "catalog/namespace.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_type.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "parser/analyze.h"
#include "parser/parser.h"
#include "parser/scansup.h"
#include "optimizer/optimizer.h"
#include "commands/dbcommands.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/date.h"
#include "utils/json.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"
#include "utils/varlena.h"
#include "utils/wait_event.h"

#include "access/xact.h"
#include "storage/lmgr.h"

#include "catalog.h"
#include "flow_create.h"
#include "flow_drop.h"
#include "flow_names.h"
#include "planner.h"
#include "settings.h"
#include "window.h"

PG_FUNCTION_INFO_V1(flowpg_create_flow);
PG_FUNCTION_INFO_V1(flowpg_drop_flow);
PG_FUNCTION_INFO_V1(flowpg_window_bounds);
PG_FUNCTION_INFO_V1(flowpg_flow_window_bounds);
PG_FUNCTION_INFO_V1(flowpg_deparse_query);

Datum
flowpg_create_flow(PG_FUNCTION_ARGS)
{
	FlowDefinition def = {0};
	FlowCreated outcome;

	def.flow_name = flow_name_arg(fcinfo, 0);
	def.sink_name = flow_required_text_arg(fcinfo, 1, "sink_table");
	def.query_text = flow_required_text_arg(fcinfo, 2, "query");
	def.mode_name = flow_required_text_arg(fcinfo, 3, "mode");
	def.expire_after = PG_ARGISNULL(4) ? NULL : PG_GETARG_INTERVAL_P(4);
	def.eval_interval = PG_ARGISNULL(5) ? NULL : PG_GETARG_INTERVAL_P(5);
	def.comment = PG_ARGISNULL(6) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(6));
	def.or_replace = flow_required_bool_arg(fcinfo, 7, "or_replace");
	def.if_not_exists = flow_required_bool_arg(fcinfo, 8, "if_not_exists");
	def.backfill = flow_required_bool_arg(fcinfo, 9, "backfill");
	/* (0.2's create_flow, until ALTER EXTENSION UPDATE, has no backfill_from) */
	def.has_backfill_from = PG_NARGS() > 10 && !PG_ARGISNULL(10);
	if (def.has_backfill_from)
		def.backfill_from = PG_GETARG_TIMESTAMPTZ(10);
	PG_RETURN_INT64(flow_create(&def, &outcome));
}

Datum
flowpg_drop_flow(PG_FUNCTION_ARGS)
{
	(void) flow_drop(flow_name_arg(fcinfo, 0), flow_required_bool_arg(fcinfo, 1, "if_exists"));
	PG_RETURN_VOID();
}

/* The (window_start, window_end) record of the window holding value. */
static Datum
window_bounds_result(FunctionCallInfo fcinfo, WindowProbe *probe, Datum value)
{
	TupleDesc	tupdesc;
	Datum		values[2];
	bool		nulls[2] = {false, false};
	int64		start;
	int64		end;
	bool		unbounded;

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	window_bounds(probe, window_datum_to_ordinal(probe->argtype, value),
				  &start, &end, &unbounded);
	values[0] = window_ordinal_to_datum(probe->argtype, start);
	if (!unbounded)
		values[1] = window_ordinal_to_datum(probe->argtype, end);
	else if (probe->argtype == DATEOID)
		values[1] = DateADTGetDatum(DATEVAL_NOEND);
	else if (window_is_time_type(probe->argtype))
		values[1] = TimestampGetDatum(DT_NOEND);
	else
		nulls[1] = true;
	return HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(tupdesc), values, nulls));
}

/* The value of window_bounds and flow_window_bounds: a window holds no NULL. */
static Datum
window_value_arg(FunctionCallInfo fcinfo, int argno)
{
	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("value must not be NULL")));
	return PG_GETARG_DATUM(argno);
}

static void
check_window_value_type(Oid valtype)
{
	if (!window_is_time_type(valtype) && !window_is_integer_type(valtype))
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("a time window cannot be over type %s", format_type_be(valtype)),
				 errhint("Use timestamptz, timestamp, date, smallint, integer or bigint.")));
}

/*
 * window_bounds(expression, value): the expression is SQL over $1, parsed
 * and analysed by PostgreSQL as the target of "SELECT <expression>".
 */
Datum
flowpg_window_bounds(PG_FUNCTION_ARGS)
{
	char	   *exprtext = flow_required_text_arg(fcinfo, 0, "expression");
	Datum		value = window_value_arg(fcinfo, 1);
	Oid			valtype = get_fn_expr_argtype(fcinfo->flinfo, 1);
	char	   *sql = psprintf("SELECT %s", exprtext);
	List	   *raw;
	RawStmt    *stmt;
	SelectStmt *select;
	Query	   *query;
	Expr	   *expr;
	WindowProbe *probe;

	check_window_value_type(valtype);
	raw = raw_parser(sql, RAW_PARSE_DEFAULT);
	stmt = list_length(raw) == 1 ? linitial_node(RawStmt, raw) : NULL;
	select = stmt && IsA(stmt->stmt, SelectStmt) ? (SelectStmt *) stmt->stmt : NULL;
	if (select == NULL || list_length(select->targetList) != 1 ||
		select->fromClause || select->whereClause || select->groupClause ||
		select->havingClause || select->sortClause || select->limitCount ||
		select->limitOffset || select->distinctClause || select->op != SETOP_NONE ||
		select->withClause || select->valuesLists || select->intoClause ||
		select->lockingClause || select->windowClause)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("\"%s\" is not a single expression", exprtext),
				 errhint("Write the window expression over $1, for example date_trunc('hour', $1).")));

	query = parse_analyze_fixedparams(stmt, sql, &valtype, 1, NULL);
	if (query->commandType != CMD_SELECT || query->utilityStmt != NULL ||
		list_length(query->targetList) != 1 || query->rtable != NIL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("\"%s\" is not a single expression", exprtext)));
	if (query->hasAggs || query->hasSubLinks || query->hasTargetSRFs ||
		query->hasWindowFuncs)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("a time window expression cannot use aggregates, subqueries or set-returning functions")));
	expr = linitial_node(TargetEntry, query->targetList)->expr;
	if (contain_volatile_functions((Node *) expr))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
				 errmsg("a time window expression cannot use volatile functions")));

	probe = window_probe_create(expr, valtype);
	window_check_monotonic(probe, exprtext, 1, 0);
	return window_bounds_result(fcinfo, probe, value);
}

/* flow_window_bounds(flow, value): the same with a flow's own window. */
Datum
flowpg_flow_window_bounds(PG_FUNCTION_ARGS)
{
	char	   *flow_name = flow_name_arg(fcinfo, 0);
	Datum		value = window_value_arg(fcinfo, 1);
	Oid			valtype = get_fn_expr_argtype(fcinfo->flinfo, 1);
	FlowEntry  *entry = catalog_get_by_name(flow_name);
	FlowPlan   *plan;
	Datum		result;
	FlowIdentity identity;

	if (entry == NULL)
		flow_does_not_exist(flow_name);
	/* the owner's window expression runs only in a transaction of a role that may act for it */
	catalog_check_owner(entry);
	plan = flow_plan_for_entry(entry);
	if (plan->window_expr == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("flow \"%s\" has no time window", flow_name)));
	if (valtype != plan->time_type)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("the time column of flow \"%s\" has type %s, not %s",
						flow_name, format_type_be(plan->time_type),
						format_type_be(valtype)),
				 errhint("Cast the value to %s.", format_type_be(plan->time_type))));

	/* the window is the owner's code: it runs as the owner, restricted */
	flow_enter(&identity, entry->owner, entry->settings, false);
	result = window_bounds_result(fcinfo, flow_plan_window_probe(plan), value);
	flow_leave(&identity);
	return result;
}

/* The query of a flow, deparsed from its stored tree (the flows view). */
Datum
flowpg_deparse_query(PG_FUNCTION_ARGS)
{
	FlowEntry  *entry = catalog_get_by_id(PG_GETARG_INT64(0));

	if (entry == NULL)
		PG_RETURN_NULL();
	PG_RETURN_TEXT_P(cstring_to_text(flow_plan_deparse(stringToNode(entry->query_tree),
													   entry->settings, entry->owner)));
}

