/*-------------------------------------------------------------------------
 *
 * sink.c
 *	  Where the sink is written: sink tables of flows.  (sink_prepare.c
 *	  creates or checks a sink.)
 *
 * A flow without aggregates writing a sink with a unique key over columns
 * it writes (sink_projection_key) keeps one row per key: the last written
 * wins in the streaming engine (rows are in commit order), and a
 * recompute writes, of the query's rows of one key, the one whose other
 * columns are greatest.
 *
 * The batching refresh replaces the rows of the windows it recomputes
 * (sink_replace_windows): a DELETE by window range, which the unique index
 * serves (the window column first), and an INSERT of the flow's query.
 *
 * The streaming engine writes a sink with one statement per flush: the
 * changed groups go in as one array per column, unnest()ed into an
 * INSERT ... ON CONFLICT (group key) DO UPDATE that skips rows whose values
 * did not change.  That needs the unique index on the group key that the
 * checks require (not deferrable: ON CONFLICT cannot use those).
 *
 * A sink several flows write (sink_sharing.c) is written the same way,
 * except that a flow never deletes a key's row: it sets its own columns
 * to NULL, and deletes the rows left without any flow's values.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/ruleutils.h"
#include "utils/syscache.h"
#include "utils/typcache.h"

#include "catalog.h"
#include "privileged.h"
#include "progress.h"
#include "sink.h"
#include "sink_sharing.h"
#include "trust.h"

static void sink_write_callback(void *arg);

/*
 * Runs one statement; the caller is connected to SPI.  Writing a flow's
 * sink (a write context pushed), the statement is labelled with the flow.
 */
static void
run_sql(const char *sql, int nargs, Oid *argtypes, Datum *args, int expected)
{
	int			rc;

	for (ErrorContextCallback *cb = error_context_stack; cb; cb = cb->previous)
		if (cb->callback == sink_write_callback)
		{
			sql = progress_label_sql(((SinkWriteContext *) cb->arg)->flow_name, sql);
			break;
		}
	rc = SPI_execute_with_args(sql, nargs, argtypes, args, NULL, false, 0);

	if (rc != expected)
		elog(ERROR, "flowpg could not run \"%s\": %s", sql, SPI_result_code_string(rc));
}

static void
sink_write_callback(void *arg)
{
	SinkWriteContext *cxt = (SinkWriteContext *) arg;
	int			code = geterrcode();

	errcontext("writing sink table %s of flow \"%s\"", cxt->sink_name, cxt->flow_name);
	if (code != ERRCODE_INVALID_COLUMN_REFERENCE && code != ERRCODE_UNIQUE_VIOLATION)
		return;
	if (cxt->key_columns)
		errhint("The flow has no aggregates: flowpg keeps the last row per key of the sink's unique index on (%s); another unique index of the sink, or rows written by others, may collide with the flow's. refresh_flow() recomputes the sink.",
				cxt->key_columns);
	else if (!cxt->plan->is_aggregate)
		errhint("The flow has no aggregates: flowpg appends its rows, keeping the last row per key only by a unique index on columns the flow writes (no expressions, no predicate, not deferrable), which the sink lacks. refresh_flow() recomputes the sink.");
	else
		errhint("flowpg writes one row per group of the flow: the sink needs its unique index on (%s), and rows written by others may collide with the flow's. refresh_flow() recomputes the sink.",
				sink_group_columns_text(cxt->plan));
}

void
sink_write_context_push(SinkWriteContext *cxt, Oid sink_relid, FlowPlan *plan,
						const char *flow_name)
{
	cxt->sink_relid = sink_relid;
	cxt->sink_name = get_rel_name(sink_relid);
	if (cxt->sink_name == NULL)
		cxt->sink_name = "?";
	cxt->plan = plan;
	cxt->flow_name = flow_name;
	cxt->key_columns = NULL;
	if (!plan->is_aggregate)
	{
		SinkKey		key;

		if (sink_projection_key(sink_relid, plan, InvalidOid, &key))
			cxt->key_columns = key.columns;
	}
	cxt->callback.callback = sink_write_callback;
	cxt->callback.arg = cxt;
	cxt->callback.previous = error_context_stack;
	error_context_stack = &cxt->callback;
}

void
sink_write_context_pop(SinkWriteContext *cxt)
{
	error_context_stack = cxt->callback.previous;
}

SinkRows *
sink_rows_create(int ncols)
{
	SinkRows   *rows = palloc0(sizeof(SinkRows));

	rows->ncols = ncols;
	rows->capacity = 64;
	rows->values = palloc(sizeof(Datum *) * Max(ncols, 1));
	rows->nulls = palloc(sizeof(bool *) * Max(ncols, 1));
	for (int c = 0; c < ncols; c++)
	{
		rows->values[c] = palloc(sizeof(Datum) * rows->capacity);
		rows->nulls[c] = palloc(sizeof(bool) * rows->capacity);
	}
	return rows;
}

/* Adds a row, copying its values into the current memory context. */
void
sink_rows_add(SinkRows *rows, FlowPlan *plan, Datum *values, bool *nulls)
{
	if (rows->nrows == rows->capacity)
	{
		rows->capacity *= 2;
		for (int c = 0; c < rows->ncols; c++)
		{
			rows->values[c] = repalloc(rows->values[c], sizeof(Datum) * rows->capacity);
			rows->nulls[c] = repalloc(rows->nulls[c], sizeof(bool) * rows->capacity);
		}
	}
	for (int c = 0; c < rows->ncols; c++)
	{
		int16		typlen;
		bool		typbyval;

		get_typlenbyval(plan->outputs[c].type, &typlen, &typbyval);
		rows->nulls[c][rows->nrows] = nulls[c];
		rows->values[c][rows->nrows] = nulls[c] ? (Datum) 0 :
			datumCopy(values[c], typbyval, typlen);
	}
	rows->nrows++;
}

/*
 * $n as an array of output column c, for unnest(): in the sink column's
 * type, each value converted as INSERT would convert it.
 */
static Datum
column_array(SinkRows *rows, SinkTarget *target, int c, Oid *arraytype)
{
	Oid			type = target->types[c];
	int16		typlen;
	bool		typbyval;
	char		typalign;
	int			dims[1] = {rows->nrows};
	int			lbs[1] = {1};
	Datum	   *values = rows->values[c];
	bool	   *nulls = rows->nulls[c];

	*arraytype = get_array_type(type);
	if (!OidIsValid(*arraytype))
		elog(ERROR, "flowpg: type %s has no array type", format_type_be(type));
	get_typlenbyvalalign(type, &typlen, &typbyval, &typalign);
	if (target->coerce[c])
	{
		values = palloc(sizeof(Datum) * Max(rows->nrows, 1));
		nulls = palloc(sizeof(bool) * Max(rows->nrows, 1));
		for (int r = 0; r < rows->nrows; r++)
		{
			nulls[r] = rows->nulls[c][r];
			values[r] = sink_target_convert(target, c, rows->values[c][r], &nulls[r]);
		}
	}
	return PointerGetDatum(construct_md_array(values, nulls, 1, dims, lbs,
											  type, typlen, typbyval, typalign));
}

/*
 * "FROM ROWS FROM (unnest($1), unnest($2), ...) AS u(c1, c2, ...)" over the columns
 * keep[c] selects, with their arrays as arguments; WITH ORDINALITY as
 * column ORDINALITY_COLUMN when ordinality.  A function returning a
 * composite type in FROM gives its fields, not the value: a column of a
 * composite type is unnested by its subscripts, and its values taken from
 * the array in a SELECT over that ("FROM (SELECT ..., ($3)[u.c3] AS c3
 * FROM ROWS FROM (...) AS u(...)) AS u").
 */
#define ORDINALITY_COLUMN "?flowpg_n"

static void
append_unnest(StringInfo sql, SinkRows *rows, FlowPlan *plan, SinkTarget *target, bool *keep,
			  bool ordinality, Oid *argtypes, Datum *args, int *nargs)
{
	StringInfoData functions;
	StringInfoData names;
	StringInfoData values;
	bool		composite = false;

	initStringInfo(&functions);
	initStringInfo(&names);
	initStringInfo(&values);
	for (int c = 0; c < plan->noutputs; c++)
	{
		const char *sep = functions.len ? ", " : "";
		const char *name = quote_identifier(plan->outputs[c].name);
		bool		rowtype;

		if (!keep[c])
			continue;
		args[*nargs] = column_array(rows, target, c, &argtypes[*nargs]);
		(*nargs)++;
		rowtype = type_is_rowtype(target->types[c]);
		composite |= rowtype;
		appendStringInfo(&functions, "%spg_catalog.%s($%d%s)", sep,
						 rowtype ? "generate_subscripts" : "unnest", *nargs, rowtype ? ", 1" : "");
		appendStringInfo(&names, "%s%s", sep, name);
		if (rowtype)
			appendStringInfo(&values, "%s($%d)[u.%s] AS %s", sep, *nargs, name, name);
		else
			appendStringInfo(&values, "%su.%s", sep, name);
	}
	if (ordinality)
	{
		appendStringInfo(&names, ", %s", quote_identifier(ORDINALITY_COLUMN));
		appendStringInfo(&values, ", u.%s", quote_identifier(ORDINALITY_COLUMN));
	}
	if (composite)
		appendStringInfo(sql, " FROM (SELECT %s FROM ROWS FROM (%s)%s AS u(%s)) AS u",
						 values.data, functions.data, ordinality ? " WITH ORDINALITY" : "",
						 names.data);
	else
		appendStringInfo(sql, " FROM ROWS FROM (%s)%s AS u(%s)",
						 functions.data, ordinality ? " WITH ORDINALITY" : "", names.data);
}

/* The sink's name, locked for writing; an error if it was dropped meanwhile. */
static char *
locked_sink_name(Oid sink_relid)
{
	LockRelationOid(sink_relid, RowExclusiveLock);
	if (!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(sink_relid)))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("the sink table of the flow was dropped")));
	return sink_qualified_relation_name(sink_relid);
}

/*
 * The columns flowpg fills itself, and their values: update_at (the time
 * of the write) and, in a sink of GreptimeDB's shape, __ts_placeholder.
 */
static void
filled_columns(Oid sink_relid, FlowPlan *plan, StringInfo columns, StringInfo values)
{
	if (sink_fills_update_at(sink_relid, plan))
	{
		appendStringInfoString(columns, ", update_at");
		appendStringInfoString(values, ", pg_catalog.now()");
	}
	if (get_attnum(sink_relid, SINK_TS_PLACEHOLDER) != InvalidAttrNumber &&
		!sink_is_output(plan, SINK_TS_PLACEHOLDER))
	{
		Oid			type = get_atttype(sink_relid, get_attnum(sink_relid, SINK_TS_PLACEHOLDER));

		appendStringInfoString(columns, ", " SINK_TS_PLACEHOLDER);
		/* an untyped literal: midnight for timestamp and date, UTC's for timestamptz */
		appendStringInfoString(values, type == TIMESTAMPOID || type == TIMESTAMPTZOID || type == DATEOID ?
							   ", '1970-01-01 00:00:00+00'" : ", 0");
	}
}

/*
 * The key columns of a projection's deduplication, prefixed: with
 * nulls_distinct, a row with a NULL key is a key of its own (its number).
 */
static void
append_dedup_keys(StringInfo sql, FlowPlan *plan, bool *keys, bool nulls_distinct,
				  const char *prefix, const char *number)
{
	bool		first = true;

	for (int c = 0; c < plan->noutputs; c++)
		if (keys[c])
		{
			appendStringInfo(sql, "%s%s%s", first ? "" : ", ", prefix,
							 quote_identifier(plan->outputs[c].name));
			first = false;
		}
	if (nulls_distinct)
	{
		appendStringInfoString(sql, ", CASE WHEN false");
		for (int c = 0; c < plan->noutputs; c++)
			if (keys[c])
				appendStringInfo(sql, " OR %s%s IS NULL", prefix,
								 quote_identifier(plan->outputs[c].name));
		appendStringInfo(sql, " THEN %s END", number);
	}
}

/*
 * " ON CONFLICT (conflict) DO UPDATE SET ..." of an INSERT INTO the sink AS
 * s: a row is rewritten only when a value changed.  conflict NULL: the
 * group keys (and __ts_placeholder where the index has it); keys NULL: the
 * group key outputs, which are not updated.
 *
 * "Changed" is decided on the values' binary images (record_image_eq, the
 * *= operator REFRESH MATERIALIZED VIEW CONCURRENTLY decides it with),
 * never by the types' equality: 1.50 = 1.5, '1 mon' = '30 days', -0 = 0
 * and 'ABC' = 'abc' under a nondeterministic collation, yet each is a
 * different value that the sink must hold when the query gives it.  An
 * image that differs for equal values only costs a rewrite.
 */
static void
append_upsert_clause(StringInfo sql, Oid sink_relid, FlowPlan *plan, const char *conflict,
					 bool *keys)
{
	bool		has_update_at = sink_fills_update_at(sink_relid, plan);
	StringInfoData old_values;
	StringInfoData new_values;
	bool		first;

	appendStringInfoString(sql, " ON CONFLICT (");
	if (conflict)
		appendStringInfoString(sql, conflict);
	else
	{
		sink_append_group_columns(sql, plan);
		if (sink_conflict_on_placeholder(sink_relid, plan))
			appendStringInfoString(sql, ", " SINK_TS_PLACEHOLDER);
	}
	appendStringInfoString(sql, ") DO ");
	initStringInfo(&old_values);
	initStringInfo(&new_values);
	first = true;
	for (int c = 0; c < plan->noutputs; c++)
	{
		const char *col = quote_identifier(plan->outputs[c].name);

		/* a group's key is the group's; a projection's is the last write's (1.0 after 1.00) */
		if (!keys && plan->outputs[c].is_group_key)
			continue;
		appendStringInfo(sql, "%s%s = excluded.%s", first ? "UPDATE SET " : ", ", col, col);
		appendStringInfo(&old_values, "%ss.%s", first ? "" : ", ", col);
		appendStringInfo(&new_values, "%sexcluded.%s", first ? "" : ", ", col);
		first = false;
	}
	if (first)
		appendStringInfoString(sql, "NOTHING");
	else
	{
		if (has_update_at)
			appendStringInfoString(sql, ", update_at = excluded.update_at");
		/* the function: "ROW() *= ROW()" would compare column by column */
		appendStringInfo(sql, " WHERE NOT pg_catalog.record_image_eq(ROW(%s), ROW(%s))",
						 old_values.data, new_values.data);
	}
}

/*
 * In a sink several flows write, a group that goes away leaves the key's
 * row to the other flows: its own columns become NULL (SET clause).
 */
static char *
own_values_to_null(Oid sink_relid, FlowPlan *plan)
{
	StringInfoData buf;

	initStringInfo(&buf);
	for (int c = 0; c < plan->noutputs; c++)
		if (!plan->outputs[c].is_group_key)
			appendStringInfo(&buf, "%s%s = NULL", buf.len ? ", " : "",
							 quote_identifier(plan->outputs[c].name));
	if (sink_fills_update_at(sink_relid, plan))
		appendStringInfoString(&buf, ", update_at = DEFAULT");
	return buf.data;
}

/*
 * The rows of a shared sink matching condition (over alias s, from the
 * FROM list from, or none) lose this flow's values; those left without any
 * flow's values are deleted: two statements, as one statement cannot see
 * its own update.
 */
static void
shared_statements(Oid sink_relid, FlowPlan *plan, const char *values, const char *from,
				  const char *condition, char **update_sql, char **delete_sql)
{
	char	   *sink = locked_sink_name(sink_relid);

	*update_sql = psprintf("UPDATE %s AS s SET %s%s%s WHERE %s", sink,
						   own_values_to_null(sink_relid, plan),
						   from ? " FROM " : "", from ? from : "", condition);
	*delete_sql = psprintf("DELETE FROM %s AS s%s%s WHERE (%s) AND ROW(%s) IS NULL", sink,
						   from ? " USING " : "", from ? from : "", condition, values);
}

static void
insert_rows(Oid sink_relid, FlowPlan *plan, SinkRows *rows, bool upsert)
{
	char	   *sink;
	bool	   *all = palloc(sizeof(bool) * Max(plan->noutputs, 1));
	bool	   *keys = palloc(sizeof(bool) * Max(plan->noutputs, 1));
	Oid		   *argtypes = palloc(sizeof(Oid) * Max(plan->noutputs, 1));
	Datum	   *args = palloc(sizeof(Datum) * Max(plan->noutputs, 1));
	int			nargs = 0;
	StringInfoData sql;
	StringInfoData conflict;
	SinkTarget *target;
	SinkKey		key;
	bool		projection_key = false;

	if (rows->nrows == 0)
		return;
	sink = locked_sink_name(sink_relid);
	target = sink_target(sink_relid, plan);
	/* another flow may have inserted the key's row */
	if (!upsert && sink_has_group_keys(plan) && sink_shared_values(sink_relid, plan))
		upsert = true;
	if (upsert && !sink_has_group_keys(plan))
	{
		/* one row, the whole result: replace it */
		run_sql(psprintf("DELETE FROM %s", sink), 0, NULL, NULL, SPI_OK_DELETE);
		upsert = false;
	}
	initStringInfo(&conflict);
	for (int c = 0; c < plan->noutputs; c++)
	{
		all[c] = true;
		keys[c] = plan->outputs[c].is_group_key;
	}
	if (upsert)
	{
		sink_append_group_columns(&conflict, plan);
		if (sink_conflict_on_placeholder(sink_relid, plan))
			appendStringInfoString(&conflict, ", " SINK_TS_PLACEHOLDER);
	}
	else if (sink_projection_key(sink_relid, plan, InvalidOid, &key))
	{
		/*
		 * A projection into a sink with a unique key: the last row written
		 * per key wins.  The rows are in the order their transactions
		 * committed (and, within one, their statements ran); ON CONFLICT
		 * cannot touch a row twice, so of the rows of one key in this
		 * statement the last one goes in.  Rows with a NULL key never
		 * conflict (NULLS DISTINCT): each is kept.
		 */
		projection_key = true;
		upsert = true;
		memcpy(keys, key.is_key, sizeof(bool) * plan->noutputs);
		appendStringInfoString(&conflict, key.columns);
	}
	initStringInfo(&sql);
	appendStringInfo(&sql, "INSERT INTO %s AS s (", sink);
	for (int c = 0; c < plan->noutputs; c++)
		appendStringInfo(&sql, "%s%s", c ? ", " : "", quote_identifier(plan->outputs[c].name));
	{
		StringInfoData columns;
		StringInfoData values;

		initStringInfo(&columns);
		initStringInfo(&values);
		filled_columns(sink_relid, plan, &columns, &values);
		appendStringInfo(&sql, "%s) SELECT ", columns.data);
		if (projection_key)
		{
			appendStringInfoString(&sql, "DISTINCT ON (");
			append_dedup_keys(&sql, plan, keys, key.nulls_distinct, "u.",
							  "u.\"" ORDINALITY_COLUMN "\"");
			appendStringInfoChar(&sql, ')');
		}
		for (int c = 0; c < plan->noutputs; c++)
			appendStringInfo(&sql, "%su.%s", c ? ", " : " ", quote_identifier(plan->outputs[c].name));
		appendStringInfoString(&sql, values.data);
	}
	append_unnest(&sql, rows, plan, target, all, projection_key, argtypes, args, &nargs);
	if (projection_key)
	{
		appendStringInfoString(&sql, " ORDER BY ");
		append_dedup_keys(&sql, plan, keys, key.nulls_distinct, "u.", "u.\"" ORDINALITY_COLUMN "\"");
		appendStringInfoString(&sql, ", u.\"" ORDINALITY_COLUMN "\" DESC");
	}
	if (upsert)
		append_upsert_clause(&sql, sink_relid, plan, conflict.data, keys);
	run_sql(sql.data, nargs, argtypes, args, SPI_OK_INSERT);
	sink_target_free(target);
}

void
sink_upsert(Oid sink_relid, FlowPlan *plan, SinkRows *rows)
{
	insert_rows(sink_relid, plan, rows, true);
}

void
sink_append(Oid sink_relid, FlowPlan *plan, SinkRows *rows)
{
	insert_rows(sink_relid, plan, rows, false);
}

void
sink_delete_groups(Oid sink_relid, FlowPlan *plan, SinkRows *rows)
{
	bool	   *keys = palloc(sizeof(bool) * Max(plan->noutputs, 1));
	Oid		   *argtypes = palloc(sizeof(Oid) * Max(plan->noutputs, 1));
	Datum	   *args = palloc(sizeof(Datum) * Max(plan->noutputs, 1));
	int			nargs = 0;
	StringInfoData from;
	StringInfoData condition;
	bool		first = true;
	SinkTarget *target;
	char	   *values;

	if (rows->nrows == 0)
		return;
	values = sink_shared_values(sink_relid, plan);
	if (!sink_has_group_keys(plan))
	{
		run_sql(psprintf("DELETE FROM %s", locked_sink_name(sink_relid)), 0, NULL, NULL,
				SPI_OK_DELETE);
		return;
	}
	initStringInfo(&from);
	appendStringInfoString(&from, "(SELECT *");
	for (int c = 0; c < plan->noutputs; c++)
		keys[c] = plan->outputs[c].is_group_key;
	target = sink_target(sink_relid, plan);
	append_unnest(&from, rows, plan, target, keys, false, argtypes, args, &nargs);
	sink_target_free(target);
	appendStringInfoString(&from, ") d");
	initStringInfo(&condition);
	for (int c = 0; c < plan->noutputs; c++)
	{
		const char *col = quote_identifier(plan->outputs[c].name);

		if (!keys[c])
			continue;
		appendStringInfo(&condition, "%ss.%s IS NOT DISTINCT FROM d.%s", first ? "" : " AND ", col, col);
		first = false;
	}
	if (values)
	{
		char	   *update_sql;
		char	   *delete_sql;

		shared_statements(sink_relid, plan, values, from.data, condition.data,
						  &update_sql, &delete_sql);
		run_sql(update_sql, nargs, argtypes, args, SPI_OK_UPDATE);
		run_sql(delete_sql, nargs, argtypes, args, SPI_OK_DELETE);
		return;
	}
	run_sql(psprintf("DELETE FROM %s s USING %s WHERE %s", locked_sink_name(sink_relid),
					 from.data, condition.data),
			nargs, argtypes, args, SPI_OK_DELETE);
}

/* INSERT INTO the sink the rows of query (the flow's outputs, in order). */
static char *
insert_query_sql(Oid sink_relid, FlowPlan *plan, const char *query, bool upsert)
{
	StringInfoData sql;
	StringInfoData columns;
	StringInfoData values;
	SinkKey		key;

	initStringInfo(&sql);
	appendStringInfo(&sql, "INSERT INTO %s%s (", sink_qualified_relation_name(sink_relid),
					 upsert ? " AS s" : "");
	for (int i = 0; i < plan->noutputs; i++)
		appendStringInfo(&sql, "%s%s", i ? ", " : "", quote_identifier(plan->outputs[i].name));
	initStringInfo(&columns);
	initStringInfo(&values);
	filled_columns(sink_relid, plan, &columns, &values);
	if (sink_projection_key(sink_relid, plan, InvalidOid, &key))
	{
		/*
		 * A projection into a sink with a unique key: one row per key.
		 * Which of the query's rows of a key wins must not depend on
		 * the plan: the one whose other columns are greatest, compared
		 * in output order (NULL least; types without an ordering by
		 * their text).  A row with a NULL key under NULLS DISTINCT is
		 * a key of its own (its row number).
		 */
		appendStringInfo(&sql, "%s) SELECT DISTINCT ON (", columns.data);
		append_dedup_keys(&sql, plan, key.is_key, key.nulls_distinct, "q.",
						  "q.\"" ORDINALITY_COLUMN "\"");
		appendStringInfoChar(&sql, ')');
		for (int c = 0; c < plan->noutputs; c++)
			appendStringInfo(&sql, "%sq.%s", c ? ", " : " ", quote_identifier(plan->outputs[c].name));
		appendStringInfo(&sql, "%s FROM (SELECT q.*, pg_catalog.row_number() OVER () AS %s FROM (%s) q) q ORDER BY ",
						 values.data, quote_identifier(ORDINALITY_COLUMN), query);
		append_dedup_keys(&sql, plan, key.is_key, key.nulls_distinct, "q.",
						  "q.\"" ORDINALITY_COLUMN "\"");
		for (int c = 0; c < plan->noutputs; c++)
		{
			TypeCacheEntry *tc;

			if (key.is_key[c])
				continue;
			tc = lookup_type_cache(plan->outputs[c].type, TYPECACHE_LT_OPR);
			appendStringInfo(&sql, ", q.%s%s DESC NULLS LAST", quote_identifier(plan->outputs[c].name),
							 OidIsValid(tc->lt_opr) ? "" : "::pg_catalog.text");
		}
		/* values equal but written differently (1.0 and 1.00): by their text */
		for (int c = 0; c < plan->noutputs; c++)
			appendStringInfo(&sql, ", q.%s::pg_catalog.text DESC NULLS LAST",
							 quote_identifier(plan->outputs[c].name));
	}
	else
		appendStringInfo(&sql, "%s) SELECT q.*%s FROM (%s) q", columns.data, values.data, query);
	/* a shared sink: the key's row may be another flow's already */
	if (upsert)
		append_upsert_clause(&sql, sink_relid, plan, NULL, NULL);
	return sql.data;
}

void
sink_refresh_statements(Oid sink_relid, FlowPlan *plan, List *ranges, bool whole,
						const char *query, SinkRefreshStatements *out)
{
	char	   *sink = sink_qualified_relation_name(sink_relid);
	char	   *values = sink_shared_values(sink_relid, plan);
	StringInfoData sql;
	ListCell   *lc;

	out->argtypes = palloc(sizeof(Oid) * Max(list_length(ranges) * 2, 1));
	out->args = palloc(sizeof(Datum) * Max(list_length(ranges) * 2, 1));
	out->nargs = 0;
	initStringInfo(&sql);
	appendStringInfoString(&sql, "true");
	if (!whole)
	{
		const char *wcol = quote_identifier(plan->outputs[plan->window_output].name);
		Oid			wtype;

		resetStringInfo(&sql);
		foreach(lc, ranges)
		{
			SinkWindowRange *r = lfirst(lc);

			if (foreach_current_index(lc) > 0)
				appendStringInfoString(&sql, " OR ");
			appendStringInfoString(&sql, "(true");
			if (r->has_start)
			{
				/* in the column's type: the key's cast keeps the order (sink_check_columns) */
				out->args[out->nargs] = sink_convert_value(sink_relid, plan, plan->window_output,
														   r->start, &wtype);
				out->argtypes[out->nargs++] = wtype;
				appendStringInfo(&sql, " AND %s >= $%d", wcol, out->nargs);
			}
			if (r->has_end)
			{
				out->args[out->nargs] = sink_convert_value(sink_relid, plan, plan->window_output,
														   r->end, &wtype);
				out->argtypes[out->nargs++] = wtype;
				appendStringInfo(&sql, " AND %s < $%d", wcol, out->nargs);
			}
			appendStringInfoChar(&sql, ')');
		}
	}
	out->cleanup_sql = NULL;
	if (values)
	{
		shared_statements(sink_relid, plan, values, NULL, sql.data,
						  &out->delete_sql, &out->cleanup_sql);
		out->insert_sql = insert_query_sql(sink_relid, plan, query, true);
		return;
	}
	out->delete_sql = psprintf("DELETE FROM %s%s%s", sink, whole ? "" : " WHERE ",
							   whole ? "" : sql.data);
	out->insert_sql = insert_query_sql(sink_relid, plan, query, false);
}

/*
 * The sink rows of a recording rule's current tick (alias.col): its tick
 * keys equal what the tick-only GROUP BY expressions give now (now() being
 * the tick's time, set by the caller), cast to the sink columns' types as
 * the rows written were.  Deparsed here, under the settings the statement
 * runs with.
 */
char *
sink_tick_condition(Oid sink_relid, FlowPlan *plan, const char *alias)
{
	StringInfoData buf;
	ListCell   *lc;
	int			output = 0;

	initStringInfo(&buf);
	foreach(lc, plan->query->targetList)
	{
		TargetEntry *tle = lfirst_node(TargetEntry, lc);
		FlowOutput *out;
		Oid			atttype;
		int32		atttypmod;
		Oid			attcollation;
		char	   *type;

		if (tle->resjunk)
			continue;
		out = &plan->outputs[output++];
		if (!out->is_tick_key)
			continue;
		get_atttypetypmodcoll(sink_relid, get_attnum(sink_relid, out->name),
							  &atttype, &atttypmod, &attcollation);
		type = format_type_extended(atttype, atttypmod,
									FORMAT_TYPE_TYPEMOD_GIVEN | FORMAT_TYPE_FORCE_QUALIFY);
		/* the steps of the tick (TQL): the rows from its first step to its last */
		if (output - 1 == plan->tick_steps_output)
			appendStringInfo(&buf, "%s%s.%s BETWEEN CAST((%s) AS %s) AND CAST((%s) AS %s)",
							 buf.len ? " AND " : "", alias, quote_identifier(out->name),
							 deparse_expression((Node *) plan->tick_steps_start, NIL, false, false),
							 type,
							 deparse_expression((Node *) plan->tick_steps_end, NIL, false, false),
							 type);
		else
			appendStringInfo(&buf, "%s%s.%s IS NOT DISTINCT FROM CAST((%s) AS %s)",
							 buf.len ? " AND " : "", alias, quote_identifier(out->name),
							 deparse_expression((Node *) tle->expr, NIL, false, false), type);
	}
	if (buf.len == 0)
		elog(ERROR, "a recording rule without a tick key");
	return buf.data;
}

void
sink_record_statements(Oid sink_relid, FlowPlan *plan, const char *query,
					   bool prune, TimestampTz cutoff, SinkRefreshStatements *out)
{
	char	   *sink = sink_qualified_relation_name(sink_relid);
	StringInfoData sql;

	out->argtypes = palloc(sizeof(Oid));
	out->args = palloc(sizeof(Datum));
	out->nargs = 0;

	/* the tick's rows are replaced: groups it no longer yields go too */
	initStringInfo(&sql);
	appendStringInfo(&sql, "DELETE FROM %s AS s WHERE (%s)", sink,
					 sink_tick_condition(sink_relid, plan, "s"));
	if (prune)
	{
		FlowOutput *key;

		if (plan->record_key_output < 0)
			elog(ERROR, "a recording rule with expire_after needs a time-typed tick key");
		key = &plan->outputs[plan->record_key_output];
		out->argtypes[0] = TIMESTAMPTZOID;
		out->args[0] = TimestampTzGetDatum(cutoff);
		out->nargs = 1;
		appendStringInfo(&sql, " OR s.%s < CAST($1 AS %s)", quote_identifier(key->name),
						 format_type_extended(key->type, key->typmod,
											  FORMAT_TYPE_TYPEMOD_GIVEN |
											  FORMAT_TYPE_FORCE_QUALIFY));
	}
	out->delete_sql = sql.data;
	out->cleanup_sql = NULL;
	out->insert_sql = insert_query_sql(sink_relid, plan, query, false);
}

uint64
sink_record_tick(Oid sink_relid, FlowPlan *plan, const char *flow_name, const char *query,
				 bool prune, TimestampTz cutoff)
{
	SinkRefreshStatements stmts;
	SinkWriteContext write_context;

	sink_write_context_push(&write_context, sink_relid, plan, flow_name);
	(void) locked_sink_name(sink_relid);
	sink_record_statements(sink_relid, plan, query, prune, cutoff, &stmts);
	run_sql(stmts.delete_sql, stmts.nargs, stmts.argtypes, stmts.args, SPI_OK_DELETE);
	run_sql(stmts.insert_sql, 0, NULL, NULL, SPI_OK_INSERT);
	sink_write_context_pop(&write_context);
	return SPI_processed;
}

uint64
sink_replace_windows(Oid sink_relid, FlowPlan *plan, const char *flow_name,
					 List *ranges, bool whole, const char *query)
{
	SinkRefreshStatements stmts;
	SinkWriteContext write_context;
	uint64		rows;

	sink_write_context_push(&write_context, sink_relid, plan, flow_name);
	sink_refresh_statements(sink_relid, plan, ranges, whole, query, &stmts);
	run_sql(stmts.delete_sql, stmts.nargs, stmts.argtypes, stmts.args,
			stmts.cleanup_sql ? SPI_OK_UPDATE : SPI_OK_DELETE);
	run_sql(stmts.insert_sql, 0, NULL, NULL, SPI_OK_INSERT);
	rows = SPI_processed;
	if (stmts.cleanup_sql)
		run_sql(stmts.cleanup_sql, stmts.nargs, stmts.argtypes, stmts.args, SPI_OK_DELETE);
	sink_write_context_pop(&write_context);
	return rows;
}

void
sink_delete_null_window(Oid sink_relid, FlowPlan *plan, const char *flow_name)
{
	SinkWriteContext write_context;

	char	   *condition = psprintf("s.%s IS NULL",
									 quote_identifier(plan->outputs[plan->window_output].name));
	char	   *values = sink_shared_values(sink_relid, plan);

	sink_write_context_push(&write_context, sink_relid, plan, flow_name);
	if (values)
	{
		char	   *update_sql;
		char	   *delete_sql;

		shared_statements(sink_relid, plan, values, NULL, condition, &update_sql, &delete_sql);
		run_sql(update_sql, 0, NULL, NULL, SPI_OK_UPDATE);
		run_sql(delete_sql, 0, NULL, NULL, SPI_OK_DELETE);
	}
	else
		run_sql(psprintf("DELETE FROM %s AS s WHERE %s", sink_qualified_relation_name(sink_relid),
						 condition),
				0, NULL, NULL, SPI_OK_DELETE);
	sink_write_context_pop(&write_context);
}
