/*-------------------------------------------------------------------------
 *
 * verify.c
 *	  flowpg.verify_flow: the project's oracle as a function, comparing a
 *	  flow's sink with the flow's query run over the source now.
 *
 * The result is the number of rows that differ, counted both ways: sink
 * rows without a twin in the query's result plus result rows without a
 * twin in the sink (EXCEPT ALL in both directions).  Only the flow's output
 * columns are compared, not the sink's own (update_at, ...), and only the
 * windows the flow maintains: with expire_after, the query is restricted to
 * the windows from the expiry cutoff on and the sink to the rows of those
 * windows, exactly as the batching refresh recomputes the whole flow
 * (refresh_maintained_ranges), so expired windows, whose sink rows are kept
 * as they were, never count.  A query using now() is evaluated at this
 * transaction's time, as flush_flow would evaluate it; but a recording
 * rule's (a GROUP BY key over now()) at its last tick
 * (flowpg.flow_run.last_tick: the worker's last run, or the current tick of
 * the last flush or refresh; the current tick if none), and only the sink's rows of the groups the query yields then
 * are compared with them: the rows of earlier ticks are history, kept as
 * they were computed (a NOTICE says so).
 *
 * Values are compared in the sink column's type (the query's outputs are
 * cast to it as the INSERT into the sink does), exactly: by their binary
 * images (_value_image), never by the type's equality, under which 1.5 and
 * 1.50, '1 mon' and '30 days', -0 and 0, or 'abc' and 'ABC' under a
 * nondeterministic collation are equal although a sink holding one where
 * the query gives the other is stale.  Floats (float4, float8 and domains
 * over them) are compared so too when the tolerance is 0 (every NaN being
 * one value).  Otherwise the rows left without a twin equal under the
 * floats' equality are matched within the tolerance, which is relative: a
 * and b match when |a - b| <= tolerance * greatest(|a|, |b|) (NULLs and
 * NaNs match themselves; an infinity matches only itself).  Rows that agree
 * on all columns but the floats are paired in the order of their floats,
 * and a pair is a twin when every float of it matches.
 *
 * It only reads: the comparison is one SELECT run like the refresh's
 * queries, as the flow's owner in a restricted security context under the
 * flow's pinned settings (refresh_run_begin), so its functions, casts and
 * names mean what they mean when the flow writes its sink.  Nothing is
 * flushed or locked beyond what reading takes.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "storage/lmgr.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/float.h"
#include "utils/lsyscache.h"
#include "utils/ruleutils.h"
#include "utils/syscache.h"
#include "utils/typcache.h"

#include "refresh.h"
#include "eval_tick.h"
#include "flow_names.h"
#include "planner.h"
#include "settings.h"
#include "sink.h"
#include "sink_sharing.h"
#include "stats.h"
#include "subxact.h"

PG_FUNCTION_INFO_V1(flowpg_verify_flow);
PG_FUNCTION_INFO_V1(flowpg_flow_horizon);
PG_FUNCTION_INFO_V1(flowpg_floats_within);
PG_FUNCTION_INFO_V1(flowpg_value_image);

/* How a column is compared. */
typedef enum VerifyKind
{
	VERIFY_IMAGE,				/* by its binary image: exactly */
	VERIFY_FLOAT				/* a float, then within the tolerance */
} VerifyKind;

typedef struct VerifyColumn
{
	VerifyKind	kind;
	char	   *sink_expr;		/* over the sink as "s" */
	char	   *query_expr;		/* over the query's result as "q" */
	char	   *sink_value;		/* the same, as values of the sink column's type */
	char	   *query_value;
} VerifyColumn;

/*
 * How an output of the flow is compared with its sink column: in the
 * column's type, typmod and collation, which the query's value is cast to
 * where the output's differ, as the INSERT into the sink casts it.  Floats
 * are compared by value when a tolerance applies to them.
 */
static void
verify_column(Oid sink_relid, FlowOutput *out, bool tolerant, VerifyColumn *col)
{
	AttrNumber	attnum = get_attnum(sink_relid, out->name);
	const char *name = quote_identifier(out->name);
	Oid			type;
	int32		typmod;
	Oid			collation;
	Oid			base;
	bool		cast;

	if (attnum == InvalidAttrNumber)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("sink table %s has no column \"%s\" for the flow's output",
						get_rel_name(sink_relid), out->name)));
	get_atttypetypmodcoll(sink_relid, attnum, &type, &typmod, &collation);

	col->sink_expr = psprintf("s.%s", name);
	col->query_expr = psprintf("q.%s", name);
	cast = type != out->type || typmod != out->typmod;
	if (cast)
		col->query_expr = psprintf("CAST(%s AS %s)", col->query_expr,
								   format_type_extended(type, typmod,
														FORMAT_TYPE_TYPEMOD_GIVEN |
														FORMAT_TYPE_FORCE_QUALIFY));
	if (OidIsValid(collation) && (cast || collation != out->collation))
		col->query_expr = psprintf("%s COLLATE %s", col->query_expr,
								   generate_collation_name(collation));

	col->sink_value = col->sink_expr;
	col->query_value = col->query_expr;
	base = getBaseType(type);
	if (tolerant && (base == FLOAT4OID || base == FLOAT8OID))
		col->kind = VERIFY_FLOAT;
	else
	{
		col->kind = VERIFY_IMAGE;
		col->sink_expr = psprintf("flowpg._value_image(%s)", col->sink_expr);
		col->query_expr = psprintf("flowpg._value_image(%s)", col->query_expr);
	}
}

/* "c1, c2, ..." for the float columns, or for the others. */
static char *
column_list(VerifyColumn *cols, int ncols, bool floats)
{
	StringInfoData buf;

	initStringInfo(&buf);
	for (int i = 0; i < ncols; i++)
		if ((cols[i].kind == VERIFY_FLOAT) == floats)
			appendStringInfo(&buf, "%sc%d", buf.len > 0 ? ", " : "", i + 1);
	return buf.data;
}

/*
 * The comparison as one SELECT over the maintained ranges (NIL: all).  $1
 * is the tolerance (when used), $window_param the first maintained window
 * (when restricted).
 */
static char *
comparison_sql(RefreshRun *run, VerifyColumn *cols, List *ranges, bool tolerant,
			   int window_param, bool keyed, const char *written_windows)
{
	FlowPlan   *plan = run->plan;
	Query	   *query = copyObject(plan->query);
	Oid			sink_relid = run->entry->sink_relid;
	StringInfoData sql;
	char	   *own_values = NULL;

	if (ranges != NIL)
		refresh_restrict_query(plan, query, ranges);
	if (sink_shared_values(sink_relid, plan))
	{
		StringInfoData names;

		initStringInfo(&names);
		for (int i = 0; i < plan->noutputs; i++)
			if (!plan->outputs[i].is_group_key)
				appendStringInfo(&names, "%s%s", names.len ? ", " : "",
								 quote_identifier(plan->outputs[i].name));
		own_values = names.data;
	}

	/*
	 * The flow's query comes first: a later CTE's name is not visible in
	 * it, so its names (deparsed unqualified where the pinned search_path
	 * finds them) cannot be taken for ours.
	 */
	initStringInfo(&sql);
	appendStringInfoString(&sql, "WITH q AS MATERIALIZED (SELECT ");
	for (int i = 0; i < plan->noutputs; i++)
		appendStringInfo(&sql, "%s%s AS c%d", i ? ", " : "", cols[i].query_expr, i + 1);
	appendStringInfo(&sql, " FROM (%s) q", pg_get_querydef(query, false));
	appendStringInfoString(&sql, " WHERE true");
	/* a shared sink: a group whose values are all NULL is no group (sink_sharing.c) */
	if (own_values)
		appendStringInfo(&sql, " AND NOT ROW(%s) IS NULL", own_values);
	/* a flow without a backfill: the windows it wrote */
	if (written_windows)
		appendStringInfo(&sql, " AND %s IN (%s)", cols[plan->window_output].query_value,
						 written_windows);
	appendStringInfoString(&sql, "), s AS MATERIALIZED (SELECT ");
	for (int i = 0; i < plan->noutputs; i++)
		appendStringInfo(&sql, "%s%s AS c%d", i ? ", " : "", cols[i].sink_expr, i + 1);
	appendStringInfo(&sql, " FROM %s s",
					 quote_qualified_identifier(get_namespace_name(get_rel_namespace(sink_relid)),
												get_rel_name(sink_relid)));
	appendStringInfoString(&sql, " WHERE true");
	if (ranges != NIL)
		appendStringInfo(&sql, " AND s.%s >= $%d",
						 quote_identifier(plan->outputs[plan->window_output].name),
						 window_param);
	if (own_values)
		appendStringInfo(&sql, " AND NOT ROW(%s) IS NULL", own_values);
	if (written_windows)
		appendStringInfo(&sql, " AND s.%s IN (%s)",
						 quote_identifier(plan->outputs[plan->window_output].name), written_windows);
	if (keyed)
		/* a recording rule: the sink's rows of the tick its query is evaluated at */
		appendStringInfo(&sql, " AND (%s)", sink_tick_condition(sink_relid, plan, "s"));
	appendStringInfoString(&sql, "), ");
	appendStringInfoString(&sql,
						   "s_only AS MATERIALIZED (SELECT * FROM s EXCEPT ALL SELECT * FROM q), "
						   "q_only AS MATERIALIZED (SELECT * FROM q EXCEPT ALL SELECT * FROM s), "
						   "u AS (SELECT true AS in_sink, * FROM s_only "
						   "UNION ALL SELECT false, * FROM q_only)");
	if (!tolerant)
	{
		appendStringInfoString(&sql, " SELECT count(*) FROM u");
		return sql.data;
	}

	/*
	 * Rows equal but for their floats share g; within g, each side's rows
	 * are numbered in the order of their floats, and the n-th of the sink
	 * is paired with the n-th of the query.
	 */
	{
		char	   *keys = column_list(cols, plan->noutputs, false);
		char	   *floats = column_list(cols, plan->noutputs, true);

		appendStringInfo(&sql,
						 ", r AS MATERIALIZED (SELECT in_sink, %s AS g, "
						 "row_number() OVER (PARTITION BY in_sink%s%s ORDER BY %s) AS n, %s FROM u) "
						 "SELECT (SELECT count(*) FROM u) - 2 * (SELECT count(*) FROM r a JOIN r b "
						 "ON a.g = b.g AND a.n = b.n WHERE a.in_sink AND NOT b.in_sink",
						 keys[0] ? psprintf("dense_rank() OVER (ORDER BY %s)", keys) : "1",
						 keys[0] ? ", " : "", keys, floats, floats);
	}
	for (int i = 0; i < plan->noutputs; i++)
		if (cols[i].kind == VERIFY_FLOAT)
			appendStringInfo(&sql, " AND flowpg._floats_within(a.c%d, b.c%d, $1)", i + 1, i + 1);
	appendStringInfoChar(&sql, ')');
	return sql.data;
}

/*
 * A flow without aggregates into a sink with a unique key keeps one row
 * per key (sink.c): the sink is exact when it holds one of the query's
 * rows for each key the query has, and nothing else.  Counted: sink rows
 * that are no row of the query, plus keys of the query without a sink row
 * (the index makes a key's sink row unique).  Rows with a NULL key under
 * a NULLS DISTINCT index are each their own key: those are compared as
 * the rows of other flows are, EXCEPT ALL both ways.  Exact comparison:
 * a projection's values are not merged in another order.  Keys (k1, ...)
 * are told apart as the unique index tells them, by their type's
 * equality: of the query's rows 1.0 and 1.00 of one numeric key, the
 * sink holds one.
 */
static char *
projection_comparison_sql(RefreshRun *run, VerifyColumn *cols, SinkKey *key)
{
	FlowPlan   *plan = run->plan;
	Oid			sink_relid = run->entry->sink_relid;
	StringInfoData sql;
	StringInfoData keys;
	StringInfoData nullkey;
	StringInfoData images;

	initStringInfo(&keys);
	initStringInfo(&nullkey);
	initStringInfo(&images);
	for (int i = 0; i < plan->noutputs; i++)
		appendStringInfo(&images, "%sc%d", i ? ", " : "", i + 1);
	appendStringInfoString(&nullkey, "false");
	for (int i = 0; i < plan->noutputs; i++)
		if (key->is_key[i])
		{
			appendStringInfo(&keys, "%sk%d", keys.len ? ", " : "", i + 1);
			if (key->nulls_distinct)
				appendStringInfo(&nullkey, " OR c%d IS NULL", i + 1);
		}
	initStringInfo(&sql);
	appendStringInfoString(&sql, "WITH q AS MATERIALIZED (SELECT ");
	for (int i = 0; i < plan->noutputs; i++)
		appendStringInfo(&sql, "%s%s AS c%d", i ? ", " : "", cols[i].query_expr, i + 1);
	for (int i = 0; i < plan->noutputs; i++)
		if (key->is_key[i])
			appendStringInfo(&sql, ", %s AS k%d", cols[i].query_value, i + 1);
	appendStringInfo(&sql, " FROM (%s) q), s AS MATERIALIZED (SELECT ",
					 pg_get_querydef(plan->query, false));
	for (int i = 0; i < plan->noutputs; i++)
		appendStringInfo(&sql, "%s%s AS c%d", i ? ", " : "", cols[i].sink_expr, i + 1);
	for (int i = 0; i < plan->noutputs; i++)
		if (key->is_key[i])
			appendStringInfo(&sql, ", %s AS k%d", cols[i].sink_value, i + 1);
	appendStringInfo(&sql, " FROM %s s), sc AS (SELECT %s FROM s), qc AS (SELECT %s FROM q) SELECT "
					 "(SELECT count(*) FROM (SELECT * FROM sc WHERE NOT (%s) EXCEPT SELECT * FROM qc WHERE NOT (%s)) d) + "
					 "(SELECT count(*) FROM (SELECT %s FROM q WHERE NOT (%s) EXCEPT SELECT %s FROM s WHERE NOT (%s)) d) + "
					 "(SELECT count(*) FROM (SELECT * FROM sc WHERE %s EXCEPT ALL SELECT * FROM qc WHERE %s) d) + "
					 "(SELECT count(*) FROM (SELECT * FROM qc WHERE %s EXCEPT ALL SELECT * FROM sc WHERE %s) d)",
					 quote_qualified_identifier(get_namespace_name(get_rel_namespace(sink_relid)),
												get_rel_name(sink_relid)),
					 images.data, images.data,
					 nullkey.data, nullkey.data,
					 keys.data, nullkey.data, keys.data, nullkey.data,
					 nullkey.data, nullkey.data, nullkey.data, nullkey.data);
	return sql.data;
}

/* The number of rows in which the flow's sink and its query differ. */
static int64
verify_flow(FlowEntry *entry, float8 tolerance)
{
	RefreshRun	run;
	VerifyColumn *cols;
	List	   *ranges;
	bool		tolerant = false;
	Oid			argtypes[3];		/* tolerance, horizon, computed_from */
	Datum		args[3];
	int			nargs = 0;
	char	   *sql;
	bool		isnull;
	int64		result;
	SinkKey		key;
	bool		recording_rule = flow_plan_for_entry(entry)->recording_rule;
	TimestampTz tick = 0;
	bool		has_tick = false;
	TimestampTz horizon = 0;
	char	   *written_windows = NULL;
	bool		written_by_flow = false;

	/* the sink goes with its flow: once locked, dropped only if already gone */
	LockRelationOid(entry->sink_relid, AccessShareLock);
	if (!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(entry->sink_relid)))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("the sink table of flow \"%s\" was dropped", entry->flow_name)));

	if (recording_rule)
	{
		/* never evaluated yet: the current tick's rows are due */
		has_tick = stats_last_tick(entry->flow_id, &tick);
		if (!has_tick && entry->eval_interval)
			tick = eval_tick_floor(entry->eval_interval, GetCurrentTransactionStartTimestamp());
	}
	refresh_run_begin(&run, entry, PROGRESS_VERIFY);
	cols = palloc(sizeof(VerifyColumn) * run.plan->noutputs);
	for (int i = 0; i < run.plan->noutputs; i++)
	{
		verify_column(entry->sink_relid, &run.plan->outputs[i], tolerance > 0, &cols[i]);
		tolerant |= cols[i].kind == VERIFY_FLOAT;
	}
	if (tolerant)
	{
		argtypes[nargs] = FLOAT8OID;
		args[nargs++] = Float8GetDatum(tolerance);
	}
	ranges = refresh_maintained_ranges(&run);
	if (ranges != NIL)
	{
		/* the sink's rows of those windows: from the first one's value on */
		WindowRange *first = linitial(ranges);

		horizon = window_ordinal_to_timestamptz(run.plan->time_type, first->start);

		/* in the sink column's type, as the refresh's DELETE has it */
		args[nargs] = sink_convert_value(entry->sink_relid, run.plan, run.plan->window_output,
										 window_probe_eval(run.probe, first->start),
										 &argtypes[nargs]);
		nargs++;
	}
	/* a flow created without a backfill answers for the windows it wrote since */
	if (!entry->backfilled && run.plan->window_output >= 0 && !recording_rule &&
		entry->computed_from != 0)
	{
		const char *wcol = quote_identifier(run.plan->outputs[run.plan->window_output].name);
		char	   *sink = sink_qualified_relation_name(entry->sink_relid);

		written_by_flow = sink_fills_update_at(entry->sink_relid, run.plan);
		if (written_by_flow)
		{
			argtypes[nargs] = TIMESTAMPTZOID;
			args[nargs++] = TimestampTzGetDatum(entry->computed_from);
			written_windows = psprintf("SELECT x.%s FROM %s x WHERE x.update_at >= $%d",
									   wcol, sink, nargs);
		}
		else
			written_windows = psprintf("SELECT x.%s FROM %s x", wcol, sink);
	}
	if (sink_projection_key(entry->sink_relid, run.plan, InvalidOid, &key))
		sql = projection_comparison_sql(&run, cols, &key);
	else
		sql = comparison_sql(&run, cols, ranges, tolerant, ranges != NIL ? (tolerant ? 2 : 1) : 0,
							 run.plan->recording_rule, written_windows);

	/* a recording rule's last evaluation is checked: now() is its time */
	if (recording_rule)
		eval_tick_set(tick);
	PG_TRY();
	{
		if (SPI_execute_with_args(sql, nargs, argtypes, args, NULL, false, 0) != SPI_OK_SELECT ||
			SPI_processed != 1)
			elog(ERROR, "flowpg could not compare the sink of flow \"%s\" with its query",
				 entry->flow_name);
	}
	PG_FINALLY();
	{
		if (recording_rule)
			eval_tick_clear();
	}
	PG_END_TRY();
	result = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1,
										 &isnull));
	refresh_run_end(&run);
	if (ranges != NIL)
		ereport(NOTICE,
				(errmsg("flow \"%s\" was compared from its horizon, %s, on",
						entry->flow_name, timestamptz_to_str(horizon)),
				 errdetail("The windows before the horizon of expire_after are frozen: they keep the rows they had, whatever happens to the source's rows there.")));
	if (written_windows)
		ereport(NOTICE,
				(errmsg("flow \"%s\" was created without a backfill: only the windows it wrote %s were compared",
						entry->flow_name,
						written_by_flow ? psprintf("since %s", timestamptz_to_str(entry->computed_from)) :
						"(those the sink holds)"),
				 errdetail("Without a backfill a flow computes the windows that change after its creation, as GreptimeDB's flows do; the others are not its query's.")));
	if (run.plan->recording_rule)
		ereport(NOTICE,
				(errmsg("flow \"%s\" is a recording rule: only the sink rows of %s were compared",
						entry->flow_name, has_tick ? "its last tick" : "the current tick"),
				 errdetail("Each tick adds its own groups; the rows of earlier ticks stay as they were computed.")));
	return result;
}

typedef struct HorizonCall
{
	FlowEntry  *entry;
	bool		found;
	TimestampTz horizon;
} HorizonCall;

static void
compute_horizon(void *arg)
{
	HorizonCall *call = arg;
	FlowEntry  *entry = call->entry;
	FlowPlan   *plan = flow_plan_for_entry(entry);
	FlowIdentity identity;

	if (plan->recording_rule || plan->window_expr == NULL)
		return;
	/* the window expression runs as in a refresh */
	flow_enter(&identity, entry->owner, entry->settings, false);
	call->horizon = window_ordinal_to_timestamptz(plan->time_type,
												  window_expiry_cutoff(flow_plan_window_probe(plan),
																	   entry->expire_after));
	call->found = true;
	flow_leave(&identity);
}

/*
 * flowpg._flow_horizon(flow_id), for flowpg.flows: the start of the oldest
 * window a flow with expire_after maintains (the older ones are frozen), or
 * NULL.  A flow that cannot be evaluated (its pinned settings, its code)
 * shows NULL: a view must not fail for one flow.
 */
Datum
flowpg_flow_horizon(PG_FUNCTION_ARGS)
{
	HorizonCall call = {0};
	ErrorData  *error;

	call.entry = catalog_get_by_id(PG_GETARG_INT64(0));
	if (call.entry == NULL || call.entry->expire_after == NULL || call.entry->window_expr == NULL)
		PG_RETURN_NULL();
	error = subxact_run_rolled_back(compute_horizon, &call);
	if (error || !call.found)
		PG_RETURN_NULL();
	PG_RETURN_TIMESTAMPTZ(call.horizon);
}

/* flowpg.verify_flow(flow_name, tolerance) */
Datum
flowpg_verify_flow(PG_FUNCTION_ARGS)
{
	char	   *flow_name = flow_required_text_arg(fcinfo, 0, "flow_name");
	float8		tolerance;

	if (PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("tolerance must not be NULL"),
				 errhint("Use 0 to compare floats exactly.")));
	tolerance = PG_GETARG_FLOAT8(1);
	if (isnan(tolerance) || tolerance < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("tolerance must be zero or a positive number, not %s",
						float8out_internal(tolerance)),
				 errdetail("Floats a and b match when |a - b| <= tolerance * greatest(|a|, |b|).")));
	PG_RETURN_INT64(verify_flow(flow_owned_by_caller(flow_name), tolerance));
}

/*
 * flowpg._floats_within(a, b, tolerance): do two floats match within a
 * relative tolerance?  In C, where a difference too large for a double is
 * an infinity rather than an error.
 */
Datum
flowpg_floats_within(PG_FUNCTION_ARGS)
{
	float8		a;
	float8		b;
	float8		tolerance;

	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		PG_RETURN_BOOL(PG_ARGISNULL(0) && PG_ARGISNULL(1));
	a = PG_GETARG_FLOAT8(0);
	b = PG_GETARG_FLOAT8(1);
	tolerance = PG_ARGISNULL(2) ? 0 : PG_GETARG_FLOAT8(2);
	/* float8_eq: NaN equals NaN, as in the exact comparison */
	if (float8_eq(a, b))
		PG_RETURN_BOOL(true);
	if (isinf(a) || isinf(b) || isnan(a) || isnan(b))
		PG_RETURN_BOOL(false);
	PG_RETURN_BOOL(fabs(a - b) <= tolerance * fmax(fabs(a), fabs(b)));
}

/*
 * flowpg._value_image(value): the bytes that make the value what it is, as
 * record_image_eq compares them (detoasted, without the varlena header),
 * for comparisons that must tell apart values their type's equality does
 * not.  Every float NaN is one value, as float ordering and output have it.
 */
Datum
flowpg_value_image(PG_FUNCTION_ARGS)
{
	typedef struct ImageType
	{
		Oid			type;
		int16		typlen;
		bool		typbyval;
		Oid			base;
	} ImageType;
	ImageType  *it = fcinfo->flinfo->fn_extra;
	Oid			type = get_fn_expr_argtype(fcinfo->flinfo, 0);
	Datum		value = PG_GETARG_DATUM(0);
	char		byval[sizeof(Datum)];
	const char *data;
	Size		len;
	bytea	   *result;

	if (it == NULL || it->type != type)
	{
		if (it == NULL)
			it = fcinfo->flinfo->fn_extra =
				MemoryContextAlloc(fcinfo->flinfo->fn_mcxt, sizeof(ImageType));
		it->type = type;
		get_typlenbyval(type, &it->typlen, &it->typbyval);
		it->base = getBaseType(type);
	}
	if (it->base == FLOAT8OID && isnan(DatumGetFloat8(value)))
		value = Float8GetDatum(get_float8_nan());
	else if (it->base == FLOAT4OID && isnan(DatumGetFloat4(value)))
		value = Float4GetDatum(get_float4_nan());

	if (it->typlen == -1)
	{
		struct varlena *v = PG_DETOAST_DATUM_PACKED(value);

		data = VARDATA_ANY(v);
		len = VARSIZE_ANY_EXHDR(v);
	}
	else if (it->typlen == -2)
	{
		data = DatumGetCString(value);
		len = strlen(data);
	}
	else if (it->typbyval)
	{
		store_att_byval(byval, value, it->typlen);
		data = byval;
		len = it->typlen;
	}
	else
	{
		data = DatumGetPointer(value);
		len = it->typlen;
	}
	result = palloc(len + VARHDRSZ);
	SET_VARSIZE(result, len + VARHDRSZ);
	memcpy(VARDATA(result), data, len);
	PG_RETURN_BYTEA_P(result);
}
