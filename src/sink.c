/*-------------------------------------------------------------------------
 *
 * sink.c
 *	  Where the sink is prepared and written: sink tables of flows.
 *
 * A missing sink is created with one column per output of the flow's query,
 * an update_at timestamptz column and a unique index (NULLS NOT DISTINCT,
 * as GROUP BY puts NULL keys into one group) on the group key columns.  An
 * existing sink is checked column by column, by name (flowpg.execute
 * matches by position where names differ, as GreptimeDB does:
 * sink_match_by_position); an output may have another type than its
 * column where INSERT would convert it (an assignment cast), and every
 * write converts it so -- the streaming writes in C (sink_target), the
 * batching refresh's INSERT ... SELECT by itself -- but a key only by a
 * cast that cannot merge two keys (coercion_is_injective).  The DDL runs
 * as the calling user, who then owns the sink, and takes every identifier
 * quoted.
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
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_index.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/varlena.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/ruleutils.h"
#include "utils/syscache.h"
#include "utils/typcache.h"
#include "access/stratnum.h"
#include "utils/datum.h"
#include "utils/array.h"

#include "access/genam.h"
#include "catalog/pg_am.h"
#include "catalog/pg_cast.h"
#include "catalog/pg_opclass.h"
#include "catalog/pg_proc.h"
#include "commands/defrem.h"
#include "executor/executor.h"
#include "parser/parse_coerce.h"
#include "catalog/pg_type.h"
#include "pgtime.h"
#include "utils/memutils.h"

#include "catalog.h"
#include "commands/trigger.h"
#include "dirty_log.h"
#include "progress.h"
#include "settings.h"
#include "sink.h"
#include "window.h"

static char *
qualified_relation_name(Oid relid)
{
	return quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)),
									  get_rel_name(relid));
}

static void sink_write_callback(void *arg);
static int	output_index(FlowPlan *plan, const char *name);

/*
 * Assignment casts.  An output whose type differs from its sink column's
 * is converted as INSERT converts it: the parser's coercion of the output
 * to the column's type, typmod and domain in the assignment context
 * (coerce_to_target_type with COERCION_ASSIGNMENT), NULL when PostgreSQL
 * has no such cast, the input itself when nothing needs converting.  The
 * input is a CaseTestExpr standing for the output's value: the streaming
 * writes evaluate it over values in hand (sink_convert_*), the batching
 * refresh's INSERT ... SELECT applies the same coercion itself.
 */
static Node *
assignment_coercion(FlowOutput *out, Oid type, int32 typmod)
{
	CaseTestExpr *input = makeNode(CaseTestExpr);

	input->typeId = out->type;
	input->typeMod = out->typmod;
	input->collation = out->collation;
	return coerce_to_target_type(NULL, (Node *) input, out->type, type, typmod,
								 COERCION_ASSIGNMENT, COERCE_IMPLICIT_CAST, -1);
}

/* Does the flow's pinned TimeZone (the one in force) keep one UTC offset at all times? */
static bool
timezone_has_fixed_offset(void)
{
	long		gmtoff;

	return session_timezone != NULL && pg_get_timezone_offset(session_timezone, &gmtoff);
}

/*
 * The implicit casts known to keep different values apart: widening within
 * integers, integers into numeric, real into double precision, and a date
 * or a timestamp into a finer time.  (Sharing a btree operator family is
 * not enough: text -> name is implicit, in text's family, and cuts values
 * at 63 bytes.)
 */
static const struct
{
	Oid			source;
	Oid			target;
}			injective_casts[] =
{
	{INT2OID, INT4OID}, {INT2OID, INT8OID}, {INT4OID, INT8OID},
	{INT2OID, NUMERICOID}, {INT4OID, NUMERICOID}, {INT8OID, NUMERICOID},
	{FLOAT4OID, FLOAT8OID},
	{DATEOID, TIMESTAMPOID}, {DATEOID, TIMESTAMPTZOID}, {TIMESTAMPOID, TIMESTAMPTZOID},
};

static bool
cast_known_injective(Oid source, Oid target)
{
	for (int i = 0; i < lengthof(injective_casts); i++)
		if (injective_casts[i].source == source && injective_casts[i].target == target)
			return true;
	return false;
}

/*
 * A key's collation in the sink (its column's, or a unique index's) keeps
 * the flow's keys apart when it is the output's own or deterministic (equal
 * only when the bytes are): a case-insensitive collation would make 'A' and
 * 'a' one key.
 */
static bool
key_collation_keeps_keys(Oid collation, Oid output_collation)
{
	return !OidIsValid(collation) || collation == output_collation ||
		get_collation_isdeterministic(collation);
}

/*
 * Is the conversion of a key injective: can two different keys of the flow
 * never become one value of the sink column (then one sink row would hold
 * two groups)?  Proven, or false with *why saying what could merge:
 *  - nothing converted, a domain check, or a binary-coercible relabelling
 *    between types whose equality is the same operator;
 *  - an implicit cast of injective_casts by an immutable function (int ->
 *    bigint, date -> timestamp, real -> double precision);
 *  - the same for a stable implicit cast (timestamp -> timestamptz, date ->
 *    timestamptz: they read TimeZone) when the flow's pinned TimeZone has a
 *    fixed offset (UTC): elsewhere the local times of a DST gap become one
 *    instant.
 * Length coercions (numeric -> numeric(10,2), text -> varchar(n): they
 * round or trim), assignment-only casts (numeric -> integer, timestamptz
 * -> timestamp), implicit casts across families (bigint -> double
 * precision: 2^53 and 2^53 + 1 become one), I/O conversions and anything
 * else are not proven.
 */
static bool
coercion_is_injective(Node *expr, const char **why)
{
	while (!IsA(expr, CaseTestExpr))
	{
		if (IsA(expr, CoerceToDomain))
			expr = (Node *) ((CoerceToDomain *) expr)->arg;
		else if (IsA(expr, RelabelType))
		{
			Node	   *arg = (Node *) ((RelabelType *) expr)->arg;
			TypeCacheEntry *from = lookup_type_cache(exprType(arg), TYPECACHE_EQ_OPR);
			TypeCacheEntry *to = lookup_type_cache(((RelabelType *) expr)->resulttype,
												   TYPECACHE_EQ_OPR);

			if (from->eq_opr != to->eq_opr)
			{
				*why = "the two types compare values by different equality operators";
				return false;
			}
			expr = arg;
		}
		else if (IsA(expr, FuncExpr) && ((FuncExpr *) expr)->args != NIL)
		{
			FuncExpr   *func = (FuncExpr *) expr;
			Node	   *arg = linitial(func->args);
			Oid			source = exprType(arg);
			Oid			target = func->funcresulttype;
			HeapTuple	tuple;
			char		context;
			char		volatility = func_volatile(func->funcid);

			if (source == target)
			{
				*why = "the conversion to the column's typmod rounds or trims values";
				return false;
			}
			tuple = SearchSysCache2(CASTSOURCETARGET, ObjectIdGetDatum(source),
									ObjectIdGetDatum(target));
			if (!HeapTupleIsValid(tuple))
			{
				*why = "the conversion is not a cast of the catalog";
				return false;
			}
			context = ((Form_pg_cast) GETSTRUCT(tuple))->castcontext;
			ReleaseSysCache(tuple);
			if (context != COERCION_CODE_IMPLICIT)
			{
				*why = "the cast is an assignment cast, which may round, truncate or shift values";
				return false;
			}
			if (!cast_known_injective(source, target))
			{
				*why = "flowpg cannot show that the cast keeps different values apart (it may trim or round them)";
				return false;
			}
			if (volatility == PROVOLATILE_STABLE && !timezone_has_fixed_offset())
			{
				*why = "the cast depends on the flow's TimeZone, which has daylight saving or other offset changes: the local times of a gap become one instant";
				return false;
			}
			if (volatility == PROVOLATILE_VOLATILE)
			{
				*why = "the cast is volatile";
				return false;
			}
			expr = arg;
		}
		else
		{
			*why = IsA(expr, CoerceViaIO) ? "the cast converts through the types' text, which may map different values to one" :
				"flowpg cannot show that the conversion keeps different values apart";
			return false;
		}
	}
	return true;
}

/*
 * How the rows of a write are converted for the sink: per output, the
 * sink column's type and the compiled assignment coercion (NULL: the value
 * is written as it is).
 */
typedef struct SinkTarget
{
	Oid		   *types;
	int32	   *typmods;
	ExprState **coerce;
	ExprContext *econtext;
} SinkTarget;

static SinkTarget *
sink_target(Oid sink_relid, FlowPlan *plan)
{
	SinkTarget *target = palloc0(sizeof(SinkTarget));

	target->types = palloc(sizeof(Oid) * Max(plan->noutputs, 1));
	target->typmods = palloc(sizeof(int32) * Max(plan->noutputs, 1));
	target->coerce = palloc0(sizeof(ExprState *) * Max(plan->noutputs, 1));
	for (int c = 0; c < plan->noutputs; c++)
	{
		FlowOutput *out = &plan->outputs[c];
		AttrNumber	attnum = get_attnum(sink_relid, out->name);
		Oid			collation;
		Node	   *coerce;

		if (attnum == InvalidAttrNumber)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_COLUMN),
					 errmsg("sink table %s has no column \"%s\" for the flow's output",
							get_rel_name(sink_relid), out->name)));
		get_atttypetypmodcoll(sink_relid, attnum, &target->types[c], &target->typmods[c],
							  &collation);
		coerce = assignment_coercion(out, target->types[c], target->typmods[c]);
		if (coerce == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("column \"%s\" of sink table %s has type %s, but the flow outputs %s",
							out->name, get_rel_name(sink_relid),
							format_type_be(target->types[c]), format_type_be(out->type))));
		if (IsA(coerce, CaseTestExpr))
			continue;
		if (target->econtext == NULL)
			target->econtext = CreateStandaloneExprContext();
		target->coerce[c] = ExecInitExpr((Expr *) expression_planner((Expr *) coerce), NULL);
	}
	return target;
}

static void
sink_target_free(SinkTarget *target)
{
	if (target->econtext)
		FreeExprContext(target->econtext, true);
}

/* Output c's value as the sink column holds it (in the current memory context). */
static Datum
sink_target_convert(SinkTarget *target, int c, Datum value, bool *isnull)
{
	if (target->coerce[c] == NULL)
		return value;
	target->econtext->caseValue_datum = value;
	target->econtext->caseValue_isNull = *isnull;
	return ExecEvalExpr(target->coerce[c], target->econtext, isnull);
}

Datum
sink_convert_value(Oid sink_relid, FlowPlan *plan, int output, Datum value, Oid *type)
{
	SinkTarget *target = sink_target(sink_relid, plan);
	bool		isnull = false;
	Datum		result;
	int16		typlen;
	bool		typbyval;

	result = sink_target_convert(target, output, value, &isnull);
	*type = target->types[output];
	get_typlenbyval(*type, &typlen, &typbyval);
	if (!isnull)
		result = datumCopy(result, typbyval, typlen);
	sink_target_free(target);
	if (isnull)
		elog(ERROR, "flowpg: a window bound became NULL in the sink's type");
	return result;
}

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

/*
 * The group key columns, the time window first: the batching refresh
 * deletes sink rows by window range, which the index then serves.
 */
static void
append_group_columns(StringInfo buf, FlowPlan *plan)
{
	bool		first = true;

	if (plan->window_output >= 0)
	{
		appendStringInfoString(buf, quote_identifier(plan->outputs[plan->window_output].name));
		first = false;
	}
	for (int i = 0; i < plan->noutputs; i++)
	{
		if (!plan->outputs[i].is_group_key || i == plan->window_output)
			continue;
		appendStringInfo(buf, "%s%s", first ? "" : ", ",
						 quote_identifier(plan->outputs[i].name));
		first = false;
	}
}

static bool
has_group_keys(FlowPlan *plan)
{
	for (int i = 0; i < plan->noutputs; i++)
		if (plan->outputs[i].is_group_key)
			return true;
	return false;
}

static Oid
create_sink(RangeVar *rv, FlowPlan *plan)
{
	StringInfoData sql;
	Oid			relid;

	initStringInfo(&sql);
	appendStringInfo(&sql, "CREATE TABLE %s (",
					 rv->schemaname ? quote_qualified_identifier(rv->schemaname, rv->relname)
					 : quote_identifier(rv->relname));
	for (int i = 0; i < plan->noutputs; i++)
	{
		FlowOutput *out = &plan->outputs[i];

		appendStringInfo(&sql, "%s %s", quote_identifier(out->name),
						 format_type_extended(out->type, out->typmod,
											  FORMAT_TYPE_TYPEMOD_GIVEN |
											  FORMAT_TYPE_FORCE_QUALIFY));
		if (OidIsValid(out->collation) && out->collation != get_typcollation(out->type))
			appendStringInfo(&sql, " COLLATE %s", generate_collation_name(out->collation));
		appendStringInfoString(&sql, ", ");
	}
	appendStringInfoString(&sql, "update_at timestamp with time zone NOT NULL DEFAULT pg_catalog.now())");
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	run_sql(sql.data, 0, NULL, NULL, SPI_OK_UTILITY);
	relid = RangeVarGetRelid(rv, NoLock, false);

	if (has_group_keys(plan))
	{
		resetStringInfo(&sql);
		appendStringInfo(&sql, "CREATE UNIQUE INDEX ON %s (", qualified_relation_name(relid));
		append_group_columns(&sql, plan);
		appendStringInfoString(&sql, ") NULLS NOT DISTINCT");
		run_sql(sql.data, 0, NULL, NULL, SPI_OK_UTILITY);
	}
	SPI_finish();
	return relid;
}

/* GreptimeDB's time index of sinks without a time window: flowpg writes the epoch. */
#define TS_PLACEHOLDER "__ts_placeholder"

static bool
is_output(FlowPlan *plan, const char *name)
{
	for (int i = 0; i < plan->noutputs; i++)
		if (strcmp(plan->outputs[i].name, name) == 0)
			return true;
	return false;
}

/*
 * Does each column of the index compare the flow's keys under a collation
 * that keeps them apart (key_collation_keeps_keys)?
 */
static bool
index_collations_keep_keys(HeapTuple index_tuple, Relation rel, FlowPlan *plan)
{
	Form_pg_index index = (Form_pg_index) GETSTRUCT(index_tuple);
	bool		isnull;
	Datum		d = SysCacheGetAttr(INDEXRELID, index_tuple, Anum_pg_index_indcollation, &isnull);
	oidvector  *collations = (oidvector *) DatumGetPointer(d);

	Assert(!isnull);

	for (int i = 0; i < index->indnkeyatts; i++)
	{
		AttrNumber	attno = index->indkey.values[i];
		int			output;

		if (attno <= 0)
			continue;
		output = output_index(plan, NameStr(TupleDescAttr(RelationGetDescr(rel), attno - 1)->attname));
		if (output >= 0 &&
			!key_collation_keeps_keys(collations->values[i], plan->outputs[output].collation))
			return false;
	}
	return true;
}

/* Is there a unique index on exactly the group key columns? */
static bool
has_group_key_index(Relation rel, FlowPlan *plan, Bitmapset *keys, int nkeys,
					Oid except_index)
{
	List	   *indexes = RelationGetIndexList(rel);
	ListCell   *lc;

	foreach(lc, indexes)
	{
		HeapTuple	tuple = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(lfirst_oid(lc)));
		Form_pg_index index;
		bool		matches;

		if (lfirst_oid(lc) == except_index || !HeapTupleIsValid(tuple))
		{
			if (HeapTupleIsValid(tuple))
				ReleaseSysCache(tuple);
			continue;
		}
		index = (Form_pg_index) GETSTRUCT(tuple);
		matches = index->indisunique && index->indisvalid && index->indimmediate &&
			index->indnkeyatts == nkeys &&
			heap_attisnull(tuple, Anum_pg_index_indexprs, NULL) &&
			heap_attisnull(tuple, Anum_pg_index_indpred, NULL) &&
			index_collations_keep_keys(tuple, rel, plan);
		for (int i = 0; matches && i < index->indnkeyatts; i++)
		{
			AttrNumber	attno = index->indkey.values[i];

			if (!bms_is_member(attno, keys))
				matches = false;
			else if (!index->indnullsnotdistinct &&
					 !TupleDescAttr(RelationGetDescr(rel), attno - 1)->attnotnull)
				matches = false;	/* NULL keys would not conflict */
		}
		ReleaseSysCache(tuple);
		if (matches)
			return true;
	}
	return false;
}

/*
 * The sink's unique index on the group keys: 1 on the keys, 2 on the keys
 * and the __ts_placeholder flowpg fills (GreptimeDB's time index, the same
 * for every row: unique with it is unique without it), 0 none.
 */
static int
key_index_kind(Relation rel, FlowPlan *plan, Bitmapset *keys, int nkeys, Oid except_index)
{
	AttrNumber	placeholder = get_attnum(RelationGetRelid(rel), TS_PLACEHOLDER);

	if (has_group_key_index(rel, plan, keys, nkeys, except_index))
		return 1;
	if (placeholder != InvalidAttrNumber && !is_output(plan, TS_PLACEHOLDER) &&
		TupleDescAttr(RelationGetDescr(rel), placeholder - 1)->attnotnull &&
		has_group_key_index(rel, plan, bms_add_member(bms_copy(keys), placeholder),
							nkeys + 1, except_index))
		return 2;
	return 0;
}

bool
sink_has_key_index(Oid sink_relid, FlowPlan *plan, Oid except_index)
{
	Relation	rel;
	Bitmapset  *keys = NULL;
	int			nkeys = 0;
	bool		found;

	if (!has_group_keys(plan))
		return true;
	rel = table_open(sink_relid, AccessShareLock);
	for (int i = 0; i < plan->noutputs; i++)
	{
		if (!plan->outputs[i].is_group_key)
			continue;
		keys = bms_add_member(keys, get_attnum(sink_relid, plan->outputs[i].name));
		nkeys++;
	}
	found = key_index_kind(rel, plan, keys, nkeys, except_index) != 0;
	table_close(rel, AccessShareLock);
	return found;
}

/* Does ON CONFLICT name __ts_placeholder too (see key_index_kind)? */
static bool
conflict_on_placeholder(Oid sink_relid, FlowPlan *plan)
{
	Relation	rel;
	Bitmapset  *keys = NULL;
	int			nkeys = 0;
	bool		placeholder;

	if (get_attnum(sink_relid, TS_PLACEHOLDER) == InvalidAttrNumber || is_output(plan, TS_PLACEHOLDER))
		return false;
	rel = table_open(sink_relid, AccessShareLock);
	for (int i = 0; i < plan->noutputs; i++)
		if (plan->outputs[i].is_group_key)
		{
			keys = bms_add_member(keys, get_attnum(sink_relid, plan->outputs[i].name));
			nkeys++;
		}
	placeholder = key_index_kind(rel, plan, keys, nkeys, InvalidOid) == 2;
	table_close(rel, AccessShareLock);
	return placeholder;
}

static int
output_index(FlowPlan *plan, const char *name)
{
	for (int i = 0; i < plan->noutputs; i++)
		if (strcmp(plan->outputs[i].name, name) == 0)
			return i;
	return -1;
}

/*
 * The key of a flow without aggregates (a projection): the sink's unique
 * index whose columns the flow writes -- its outputs, and __ts_placeholder
 * when flowpg fills it (the same value in every row) -- without
 * expressions or a predicate, not deferrable (ON CONFLICT needs that).
 * The primary key when it qualifies, else the qualifying index of fewest
 * columns (then the oldest).  flowpg keeps one row per key of it.
 */
bool
sink_projection_key(Oid sink_relid, FlowPlan *plan, Oid except_index, SinkKey *key)
{
	Relation	rel;
	List	   *indexes;
	ListCell   *lc;
	HeapTuple	best = NULL;
	AttrNumber	placeholder = get_attnum(sink_relid, TS_PLACEHOLDER);

	memset(key, 0, sizeof(SinkKey));
	if (plan->is_aggregate)
		return false;
	if (is_output(plan, TS_PLACEHOLDER))
		placeholder = InvalidAttrNumber;	/* the flow writes it */
	rel = table_open(sink_relid, AccessShareLock);
	indexes = RelationGetIndexList(rel);
	foreach(lc, indexes)
	{
		HeapTuple	tuple = SearchSysCacheCopy1(INDEXRELID, ObjectIdGetDatum(lfirst_oid(lc)));
		Form_pg_index index;
		bool		usable;

		if (!HeapTupleIsValid(tuple))
			continue;
		index = (Form_pg_index) GETSTRUCT(tuple);
		usable = lfirst_oid(lc) != except_index &&
			index->indisunique && index->indisvalid && index->indimmediate &&
			heap_attisnull(tuple, Anum_pg_index_indexprs, NULL) &&
			heap_attisnull(tuple, Anum_pg_index_indpred, NULL);
		for (int i = 0; usable && i < index->indnkeyatts; i++)
			if (index->indkey.values[i] <= 0)
				usable = false;
		for (int i = 0; usable && i < index->indnkeyatts; i++)
		{
			AttrNumber	attno = index->indkey.values[i];
			Form_pg_attribute attr = TupleDescAttr(RelationGetDescr(rel), attno - 1);

			if (attno != placeholder && output_index(plan, NameStr(attr->attname)) < 0)
				usable = false;
		}
		if (usable)
		{
			Form_pg_index b = best ? (Form_pg_index) GETSTRUCT(best) : NULL;

			if (b == NULL ||
				(index->indisprimary && !b->indisprimary) ||
				(index->indisprimary == b->indisprimary &&
				 (index->indnkeyatts < b->indnkeyatts ||
				  (index->indnkeyatts == b->indnkeyatts && index->indexrelid < b->indexrelid))))
				best = tuple;
		}
	}
	if (best)
	{
		Form_pg_index index = (Form_pg_index) GETSTRUCT(best);
		StringInfoData cols;

		initStringInfo(&cols);
		key->index = index->indexrelid;
		key->is_key = palloc0(sizeof(bool) * Max(plan->noutputs, 1));
		for (int i = 0; i < index->indnkeyatts; i++)
		{
			AttrNumber	attno = index->indkey.values[i];
			Form_pg_attribute attr = TupleDescAttr(RelationGetDescr(rel), attno - 1);

			appendStringInfo(&cols, "%s%s", i ? ", " : "", quote_identifier(NameStr(attr->attname)));
			if (attno == placeholder)
			{
				key->placeholder = true;
				continue;
			}
			key->is_key[output_index(plan, NameStr(attr->attname))] = true;
			/* NULL keys never conflict: such rows are all kept */
			if (!index->indnullsnotdistinct && !attr->attnotnull)
				key->nulls_distinct = true;
		}
		key->columns = cols.data;
	}
	table_close(rel, AccessShareLock);
	return OidIsValid(key->index);
}

/* The columns of the group key index, for messages. */
static char *
group_columns_text(FlowPlan *plan)
{
	StringInfoData cols;

	initStringInfo(&cols);
	append_group_columns(&cols, plan);
	return cols.data;
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
				group_columns_text(cxt->plan));
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

/*
 * GreptimeDB's matching of a pre-created sink's columns (flowpg.execute):
 * outputs named after sink columns are matched by name; when some are
 * not, they are matched by position, each to the sink column at its own
 * position, which must be one no output names -- the columns flowpg fills
 * (update_at, __ts_placeholder) skipped wherever they are.  The flow then
 * has as many outputs as the sink such columns, or one fewer when the
 * sink's last one is a time column (GreptimeDB writes its now() there,
 * flowpg leaves it to its default).  The outputs matched by position are
 * renamed after their columns in the analysed query, so that everything
 * after this matches by name.  Returns "out AS col, ..." for those, NULL
 * when every output matched by name.
 */
char *
sink_match_by_position(Oid sink_relid, FlowPlan *plan)
{
	Relation	rel = table_open(sink_relid, AccessShareLock);
	TupleDesc	desc = RelationGetDescr(rel);
	List	   *columns = NIL;	/* Form_pg_attribute */
	int			ncolumns;
	bool	   *extra = palloc0(sizeof(bool) * Max(plan->noutputs, 1));
	bool		any_extra = false;
	StringInfoData outs;
	StringInfoData cols;
	StringInfoData renamed;
	ListCell   *lc;
	int			i;

	for (int a = 0; a < desc->natts; a++)
	{
		Form_pg_attribute attr = TupleDescAttr(desc, a);

		if (attr->attisdropped ||
			((strcmp(NameStr(attr->attname), "update_at") == 0 ||
			  strcmp(NameStr(attr->attname), TS_PLACEHOLDER) == 0) &&
			 !is_output(plan, NameStr(attr->attname))))
			continue;
		columns = lappend(columns, attr);
	}
	ncolumns = list_length(columns);
	for (i = 0; i < plan->noutputs; i++)
	{
		extra[i] = true;
		foreach(lc, columns)
			if (strcmp(NameStr(((Form_pg_attribute) lfirst(lc))->attname), plan->outputs[i].name) == 0)
				extra[i] = false;
		any_extra |= extra[i];
	}
	if (!any_extra)
	{
		table_close(rel, AccessShareLock);
		return NULL;
	}

	initStringInfo(&outs);
	initStringInfo(&cols);
	for (i = 0; i < plan->noutputs; i++)
		appendStringInfo(&outs, "%s%s", i ? ", " : "", quote_identifier(plan->outputs[i].name));
	foreach(lc, columns)
		appendStringInfo(&cols, "%s%s", foreach_current_index(lc) ? ", " : "",
						 quote_identifier(NameStr(((Form_pg_attribute) lfirst(lc))->attname)));
	if (!(plan->noutputs == ncolumns ||
		  (plan->noutputs + 1 == ncolumns &&
		   TypeCategory(((Form_pg_attribute) llast(columns))->atttypid) == TYPCATEGORY_DATETIME)))
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("the flow's %d output columns do not match the %d columns of sink table \"%s\"",
						plan->noutputs, ncolumns, RelationGetRelationName(rel)),
				 errdetail("The flow outputs (%s), the sink has (%s) besides update_at and __ts_placeholder. Outputs not named after a sink column are matched by position, as GreptimeDB does, which needs as many outputs as columns (or one fewer, when the last column is a time column).",
						   outs.data, cols.data),
				 errhint("Name each output after its sink column (AS name), or add or drop sink columns.")));

	initStringInfo(&renamed);
	for (i = 0; i < plan->noutputs; i++)
	{
		Form_pg_attribute attr;
		bool		named = false;
		ListCell   *tl;
		int			output = 0;

		if (!extra[i])
			continue;
		attr = i < ncolumns ? list_nth(columns, i) : NULL;
		for (int j = 0; attr && j < plan->noutputs; j++)
			if (!extra[j] && strcmp(plan->outputs[j].name, NameStr(attr->attname)) == 0)
				named = true;
		if (attr == NULL || named)
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("output column \"%s\" of the flow matches no column of sink table \"%s\"",
							plan->outputs[i].name, RelationGetRelationName(rel)),
					 errdetail("The flow outputs (%s), the sink has (%s) besides update_at and __ts_placeholder. An output not named after a sink column is matched by position, as GreptimeDB does, to the column at its own position (%d), which %s.",
							   outs.data, cols.data, i + 1,
							   attr ? "another output names" : "the sink does not have"),
					 errhint("Name the output after its sink column (AS name).")));
		if (assignment_coercion(&plan->outputs[i], attr->atttypid, attr->atttypmod) == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("output column \"%s\" of the flow, matched by position to column \"%s\" of sink table \"%s\", has type %s, but the column has type %s",
							plan->outputs[i].name, NameStr(attr->attname), RelationGetRelationName(rel),
							format_type_be(plan->outputs[i].type),
							format_type_extended(attr->atttypid, attr->atttypmod,
												 FORMAT_TYPE_TYPEMOD_GIVEN)),
					 errdetail("PostgreSQL has no assignment cast from %s to %s. Outputs not named after a sink column are matched by position, as GreptimeDB does.",
							   format_type_be(plan->outputs[i].type), format_type_be(attr->atttypid)),
					 errhint("Name the output after the sink column it is meant for (AS name), or cast it.")));
		appendStringInfo(&renamed, "%s%s AS %s", renamed.len ? ", " : "",
						 quote_identifier(plan->outputs[i].name),
						 quote_identifier(NameStr(attr->attname)));
		plan->outputs[i].name = pstrdup(NameStr(attr->attname));
		foreach(tl, plan->query->targetList)
		{
			TargetEntry *tle = lfirst_node(TargetEntry, tl);

			if (tle->resjunk)
				continue;
			if (output++ == i)
				tle->resname = plan->outputs[i].name;
		}
	}
	table_close(rel, AccessShareLock);
	return renamed.data;
}

static void
refuse_key_collation(FlowOutput *out, const char *relname, Oid collation)
{
	ereport(ERROR,
			(errcode(ERRCODE_COLLATION_MISMATCH),
			 errmsg("key column \"%s\" of sink table \"%s\" has the nondeterministic collation %s",
					out->name, relname, get_collation_name(collation)),
			 errdetail("Keys the flow tells apart could be one key under it (such as 'A' and 'a'): one sink row would hold two of the flow's keys."),
			 errhint("Give the column a deterministic collation, or the collation of the flow's output (COLLATE in the query).")));
}

/*
 * A projection keeps one row per key of the sink's unique index: keys the
 * conversion into the sink could merge would merge rows of different keys.
 */
static void
check_projection_key(Oid sink_relid, FlowPlan *plan, const char *relname)
{
	SinkKey		key;

	if (!sink_projection_key(sink_relid, plan, InvalidOid, &key))
		return;
	{
		Relation	rel = table_open(sink_relid, AccessShareLock);
		HeapTuple	tuple = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(key.index));
		bool		keeps;

		if (!HeapTupleIsValid(tuple))
			elog(ERROR, "cache lookup failed for index %u", key.index);
		keeps = index_collations_keep_keys(tuple, rel, plan);
		ReleaseSysCache(tuple);
		table_close(rel, AccessShareLock);
		if (!keeps)
			ereport(ERROR,
					(errcode(ERRCODE_COLLATION_MISMATCH),
					 errmsg("the unique index %s of sink table \"%s\" compares a key under a nondeterministic collation",
							get_rel_name(key.index), relname),
					 errdetail("flowpg keeps one row per key of that index on (%s); keys the flow tells apart (such as 'A' and 'a') could be one key under it.",
							   key.columns),
					 errhint("Use a deterministic collation in the index, or the collation of the flow's output.")));
	}
	for (int i = 0; i < plan->noutputs; i++)
	{
		FlowOutput *out = &plan->outputs[i];
		Oid			type;
		int32		typmod;
		Oid			collation;
		const char *why = NULL;
		Node	   *coerce;

		if (!key.is_key[i])
			continue;
		get_atttypetypmodcoll(sink_relid, get_attnum(sink_relid, out->name), &type, &typmod,
							  &collation);
		if (!key_collation_keeps_keys(collation, out->collation))
			refuse_key_collation(out, relname, collation);
		coerce = assignment_coercion(out, type, typmod);
		if (coerce && !coercion_is_injective(coerce, &why))
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("key column \"%s\" of sink table \"%s\" has type %s, but the flow outputs %s",
							out->name, relname, format_type_extended(type, typmod, FORMAT_TYPE_TYPEMOD_GIVEN),
							format_type_be(out->type)),
					 errdetail("flowpg keeps one row per key of the sink's unique index on (%s); converting the key could make rows of different keys one: %s.",
							   key.columns, why),
					 errhint("Give the column the output's type, or cast the output in the flow's query to the column's type.")));
	}
}

void
sink_check_index_columns(Oid sink_relid, FlowPlan *plan, List *index_params)
{
	const char *relname = get_rel_name(sink_relid);
	ListCell   *lc;

	foreach(lc, index_params)
	{
		IndexElem  *elem = lfirst_node(IndexElem, lc);
		int			output = elem->name ? output_index(plan, elem->name) : -1;
		FlowOutput *out;
		Oid			type;
		int32		typmod;
		Oid			collation;
		const char *why = NULL;
		Node	   *coerce;

		/* __ts_placeholder is flowpg's, the same in every row */
		if (output < 0 && elem->name && strcmp(elem->name, TS_PLACEHOLDER) == 0)
			continue;
		/* an expression or a column the flow does not write: never its key */
		if (output < 0)
			return;
		out = &plan->outputs[output];
		get_atttypetypmodcoll(sink_relid, get_attnum(sink_relid, out->name), &type, &typmod,
							  &collation);
		if (elem->collation)
			collation = get_collation_oid(elem->collation, false);
		if (!key_collation_keeps_keys(collation, out->collation))
			refuse_key_collation(out, relname, collation);
		coerce = assignment_coercion(out, type, typmod);
		if (coerce && !coercion_is_injective(coerce, &why))
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("key column \"%s\" of sink table \"%s\" has type %s, but the flow outputs %s",
							out->name, relname, format_type_extended(type, typmod, FORMAT_TYPE_TYPEMOD_GIVEN),
							format_type_be(out->type)),
					 errdetail("The unique index would be the key flowpg keeps one row per; converting the key could make rows of different keys one: %s.",
							   why),
					 errhint("Give the column the output's type, or cast the output in the flow's query to the column's type.")));
	}
}

void
sink_check_columns(Oid sink_relid, FlowPlan *plan)
{
	Relation	rel = table_open(sink_relid, AccessShareLock);
	TupleDesc	desc = RelationGetDescr(rel);
	const char *relname = RelationGetRelationName(rel);
	Bitmapset  *keys = NULL;
	int			nkeys = 0;

	for (int i = 0; i < plan->noutputs; i++)
	{
		FlowOutput *out = &plan->outputs[i];
		Form_pg_attribute attr = NULL;
		Node	   *coerce;
		const char *why = NULL;

		for (int a = 0; a < desc->natts; a++)
		{
			Form_pg_attribute cand = TupleDescAttr(desc, a);

			if (!cand->attisdropped && strcmp(NameStr(cand->attname), out->name) == 0)
				attr = cand;
		}
		if (attr == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_COLUMN),
					 errmsg("sink table \"%s\" has no column \"%s\"", relname, out->name),
					 errdetail("The flow outputs column \"%s\" of type %s.",
							   out->name, format_type_be(out->type)),
					 errhint("Add the column to the sink table, or name the output after an existing column.")));
		coerce = assignment_coercion(out, attr->atttypid, attr->atttypmod);
		if (coerce == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("column \"%s\" of sink table \"%s\" has type %s, but the flow outputs %s",
							out->name, relname,
							format_type_extended(attr->atttypid, attr->atttypmod,
												 FORMAT_TYPE_TYPEMOD_GIVEN),
							format_type_be(out->type)),
					 errdetail("PostgreSQL has no assignment cast from %s to %s: INSERT would refuse the value too.",
							   format_type_be(out->type), format_type_be(attr->atttypid)),
					 errhint("Cast the output column in the flow's query (%s::%s), or change the column's type.",
							 quote_identifier(out->name),
							 format_type_extended(attr->atttypid, attr->atttypmod,
												  FORMAT_TYPE_TYPEMOD_GIVEN))));
		if (out->is_group_key && !coercion_is_injective(coerce, &why))
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("group key column \"%s\" of sink table \"%s\" has type %s, but the flow outputs %s",
							out->name, relname,
							format_type_extended(attr->atttypid, attr->atttypmod,
												 FORMAT_TYPE_TYPEMOD_GIVEN),
							format_type_be(out->type)),
					 errdetail("Converting the key could write two groups into one sink row: %s.", why),
					 errhint("Give the column the output's type, or cast the key in the flow's query (GROUP BY the cast value) to the column's type.")));
		/* the streaming writes pass a column's values as one array of its type */
		if (!OidIsValid(get_array_type(attr->atttypid)))
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("column \"%s\" of sink table \"%s\" has type %s, which has no array type",
							out->name, relname, format_type_be(attr->atttypid)),
					 errdetail("flowpg writes a column's values in one array of the column's type."),
					 errhint("Give the column the type the flow outputs (%s).", format_type_be(out->type))));
		if (out->is_group_key &&
			!key_collation_keeps_keys(attr->attcollation, out->collation))
			refuse_key_collation(out, relname, attr->attcollation);
		if (out->is_group_key)
		{
			keys = bms_add_member(keys, attr->attnum);
			nkeys++;
		}
	}
	for (int a = 0; a < desc->natts; a++)
	{
		Form_pg_attribute attr = TupleDescAttr(desc, a);
		bool		written = false;

		if (attr->attisdropped)
			continue;
		if (strcmp(NameStr(attr->attname), "update_at") == 0)
		{
			Oid			written = TIMESTAMPTZOID;

			/* the write's transaction time, converted as INSERT converts it */
			if ((getBaseType(attr->atttypid) != TIMESTAMPTZOID &&
				 getBaseType(attr->atttypid) != TIMESTAMPOID) ||
				!can_coerce_type(1, &written, &attr->atttypid, COERCION_ASSIGNMENT))
				ereport(ERROR,
						(errcode(ERRCODE_DATATYPE_MISMATCH),
						 errmsg("column \"update_at\" of sink table \"%s\" has type %s, but flowpg writes timestamp with time zone",
								relname, format_type_be(attr->atttypid)),
						 errdetail("flowpg writes the time of each write into a column named update_at: a timestamp with time zone, or a timestamp (the time in the flow's TimeZone)."),
						 errhint("Make it a timestamp with time zone or timestamp column, or rename it.")));
			continue;
		}
		written = is_output(plan, NameStr(attr->attname));
		if (!written && strcmp(NameStr(attr->attname), TS_PLACEHOLDER) == 0)
		{
			if (attr->atttypid != TIMESTAMPOID && attr->atttypid != TIMESTAMPTZOID &&
				attr->atttypid != DATEOID && attr->atttypid != INT8OID &&
				attr->atttypid != INT4OID)
				ereport(ERROR,
						(errcode(ERRCODE_DATATYPE_MISMATCH),
						 errmsg("column \"%s\" of sink table \"%s\" has type %s, but flowpg writes the epoch there",
								TS_PLACEHOLDER, relname, format_type_be(attr->atttypid)),
						 errhint("Make it a timestamp, timestamptz, date or integer column.")));
			continue;
		}
		if (!written && attr->attnotnull && !attr->atthasdef &&
			!attr->attidentity && !attr->attgenerated)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_TABLE_DEFINITION),
					 errmsg("column \"%s\" of sink table \"%s\" is NOT NULL without a default, and the flow does not write it",
							NameStr(attr->attname), relname),
					 errhint("Give the column a default, or drop its NOT NULL constraint.")));
	}
	if (nkeys > 0 && key_index_kind(rel, plan, keys, nkeys, InvalidOid) == 0)
	{
		char	   *cols = group_columns_text(plan);

		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TABLE_DEFINITION),
				 errmsg("sink table \"%s\" has no unique index on the group key columns (%s)",
						relname, cols),
				 errdetail("flowpg writes one row per group and finds it by its keys; the index must not be deferrable."),
				 errhint("Create one: CREATE UNIQUE INDEX ON %s (%s) NULLS NOT DISTINCT;",
						 qualified_relation_name(sink_relid), cols)));
	}
	table_close(rel, AccessShareLock);
	check_projection_key(sink_relid, plan, relname);
}

void
sink_check_owner(Oid sink_relid, Oid flow_owner)
{
	HeapTuple	tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(sink_relid));
	Oid			sink_owner;

	if (!HeapTupleIsValid(tuple))
		elog(ERROR, "cache lookup failed for relation %u", sink_relid);
	sink_owner = ((Form_pg_class) GETSTRUCT(tuple))->relowner;
	ReleaseSysCache(tuple);
	/* superusers count as members of every role: not for this */
	if (sink_owner != flow_owner && !is_member_of_role_nosuper(flow_owner, sink_owner))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("sink table %s is owned by role %s, not by the flow's owner %s",
						get_rel_name(sink_relid), GetUserNameFromId(sink_owner, false),
						GetUserNameFromId(flow_owner, false)),
				 errdetail("flowpg writes a sink with the rights of the flow's owner: the triggers of another role's table would run with them."),
				 errhint("Use a sink owned by the flow's owner or by a role it is a member of.")));
}

static void
check_existing_sink(Oid relid, const char *flow_name, FlowPlan *plan, int64 own_flow_id)
{
	char		relkind = get_rel_relkind(relid);
	const char *relname = get_rel_name(relid);
	FlowEntry  *other;
	ListCell   *lc;

	if (relkind != RELKIND_RELATION && relkind != RELKIND_PARTITIONED_TABLE)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("sink \"%s\" is not a table", relname),
				 errdetail("%s", relkind == RELKIND_VIEW ? "It is a view." :
						   relkind == RELKIND_MATVIEW ? "It is a materialized view." :
						   relkind == RELKIND_FOREIGN_TABLE ? "It is a foreign table." :
						   "A sink must be an ordinary or partitioned table."),
				 errhint("Name a table, or a name that does not exist yet to have flowpg create the sink.")));
	if (get_rel_persistence(relid) == RELPERSISTENCE_TEMP)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("sink \"%s\" is a temporary table", relname),
				 errdetail("Temporary tables are invisible to flowpg's background worker.")));
	foreach(lc, plan->source_relids)
		if (lfirst_oid(lc) == relid)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("flow \"%s\" cannot write into its own source table \"%s\"",
							flow_name, relname)));
	other = catalog_get_by_sink(relid);
	if (other && other->flow_id != own_flow_id)
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("table \"%s\" is already the sink of flow \"%s\"", relname, other->flow_name),
				 errdetail("Two flows replacing rows of one table would undo each other's work.")));
	if (pg_class_aclcheck(relid, GetUserId(),
						  ACL_SELECT | ACL_INSERT | ACL_UPDATE | ACL_DELETE) != ACLCHECK_OK ||
		pg_class_aclmask(relid, GetUserId(),
						 ACL_SELECT | ACL_INSERT | ACL_UPDATE | ACL_DELETE, ACLMASK_ALL) !=
		(ACL_SELECT | ACL_INSERT | ACL_UPDATE | ACL_DELETE))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for sink table %s", relname),
				 errdetail("A flow runs as its owner, who needs SELECT, INSERT, UPDATE and DELETE on the sink.")));
	sink_check_owner(relid, GetUserId());
	sink_check_columns(relid, plan);
}

Oid
sink_prepare(RangeVar *rv, const char *flow_name, FlowPlan *plan,
			 int64 own_flow_id, bool *created)
{
	Oid			relid = RangeVarGetRelid(rv, ShareRowExclusiveLock, true);

	*created = !OidIsValid(relid);
	if (*created)
	{
		if (rv->relpersistence == RELPERSISTENCE_TEMP ||
			(rv->schemaname && strcmp(rv->schemaname, "pg_temp") == 0))
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("a sink cannot be a temporary table")));
		relid = create_sink(rv, plan);
		if (get_rel_persistence(relid) == RELPERSISTENCE_TEMP)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("a sink cannot be a temporary table"),
					 errdetail("The first schema of search_path is pg_temp."),
					 errhint("Qualify the sink's name with a schema.")));
	}
	else
		check_existing_sink(relid, flow_name, plan, own_flow_id);
	return relid;
}

/*
 * The sink's guard: an AFTER TRUNCATE trigger.  A truncated sink no longer
 * equals the flow's query, so the flow is recomputed as a whole.  It is
 * also what tells a restore that the sink's rows are in (pg_restore
 * creates triggers after a table's data).
 */
#define SINK_GUARD "flowpg_sink_truncate"

bool
sink_is_guard(const char *tgname)
{
	return strcmp(tgname, SINK_GUARD) == 0;
}

bool
sink_has_guard(Oid sink_relid)
{
	return OidIsValid(get_trigger_oid(sink_relid, SINK_GUARD, true));
}

void
sink_install_guard(Oid sink_relid)
{
	char	   *sink = qualified_relation_name(sink_relid);

	if (sink_has_guard(sink_relid))
		return;
	catalog_execute_privileged(psprintf("CREATE TRIGGER %s AFTER TRUNCATE ON %s "
										"FOR EACH STATEMENT EXECUTE FUNCTION flowpg._sink_truncated()",
										SINK_GUARD, sink),
							   0, NULL, NULL, NULL);
	/* a sink truncated by a replica-role session is no less stale */
	catalog_execute_privileged(psprintf("ALTER TABLE %s ENABLE ALWAYS TRIGGER %s", sink, SINK_GUARD),
							   0, NULL, NULL, NULL);
}

void
sink_remove_guard(Oid sink_relid)
{
	if (get_rel_name(sink_relid) == NULL || !sink_has_guard(sink_relid) ||
		catalog_get_by_sink(sink_relid) != NULL)
		return;
	catalog_execute_privileged(psprintf("DROP TRIGGER %s ON %s", SINK_GUARD,
										qualified_relation_name(sink_relid)),
							   0, NULL, NULL, NULL);
}

PG_FUNCTION_INFO_V1(flowpg_sink_truncated);

Datum
flowpg_sink_truncated(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;
	FlowEntry  *entry;

	if (!CALLED_AS_TRIGGER(fcinfo) || !TRIGGER_FIRED_BY_TRUNCATE(trigdata->tg_event))
		elog(ERROR, "flowpg_sink_truncated must be an AFTER TRUNCATE trigger");
	entry = catalog_get_by_sink(RelationGetRelid(trigdata->tg_relation));
	if (entry)
		dirty_log_append(entry->flow_id, true, 0, 0, 0);
	return PointerGetDatum(NULL);
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
 * column ORDINALITY_COLUMN when ordinality.
 */
#define ORDINALITY_COLUMN "?flowpg_n"

static void
append_unnest(StringInfo sql, SinkRows *rows, FlowPlan *plan, SinkTarget *target, bool *keep,
			  bool ordinality, Oid *argtypes, Datum *args, int *nargs)
{
	bool		first = true;

	appendStringInfoString(sql, " FROM ROWS FROM (");
	for (int c = 0; c < plan->noutputs; c++)
	{
		if (!keep[c])
			continue;
		args[*nargs] = column_array(rows, target, c, &argtypes[*nargs]);
		(*nargs)++;
		appendStringInfo(sql, "%spg_catalog.unnest($%d)", first ? "" : ", ", *nargs);
		first = false;
	}
	appendStringInfo(sql, ")%s AS u(", ordinality ? " WITH ORDINALITY" : "");
	first = true;
	for (int c = 0; c < plan->noutputs; c++)
	{
		if (!keep[c])
			continue;
		appendStringInfo(sql, "%s%s", first ? "" : ", ", quote_identifier(plan->outputs[c].name));
		first = false;
	}
	if (ordinality)
		appendStringInfo(sql, ", %s", quote_identifier(ORDINALITY_COLUMN));
	appendStringInfoChar(sql, ')');
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
	return qualified_relation_name(sink_relid);
}

/*
 * The columns flowpg fills itself, and their values: update_at (the time
 * of the write) and, in a sink of GreptimeDB's shape, __ts_placeholder.
 */
static void
filled_columns(Oid sink_relid, FlowPlan *plan, StringInfo columns, StringInfo values)
{
	if (get_attnum(sink_relid, "update_at") != InvalidAttrNumber)
	{
		appendStringInfoString(columns, ", update_at");
		appendStringInfoString(values, ", pg_catalog.now()");
	}
	if (get_attnum(sink_relid, TS_PLACEHOLDER) != InvalidAttrNumber &&
		!is_output(plan, TS_PLACEHOLDER))
	{
		Oid			type = get_atttype(sink_relid, get_attnum(sink_relid, TS_PLACEHOLDER));

		appendStringInfoString(columns, ", " TS_PLACEHOLDER);
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
 * group key outputs, which are not updated.  Values are compared in the
 * sink column's type.
 */
static void
append_upsert_clause(StringInfo sql, Oid sink_relid, FlowPlan *plan, const char *conflict,
					 bool *keys)
{
	bool		has_update_at = get_attnum(sink_relid, "update_at") != InvalidAttrNumber;
	StringInfoData changed;
	bool		first;

	appendStringInfoString(sql, " ON CONFLICT (");
	if (conflict)
		appendStringInfoString(sql, conflict);
	else
	{
		append_group_columns(sql, plan);
		if (conflict_on_placeholder(sink_relid, plan))
			appendStringInfoString(sql, ", " TS_PLACEHOLDER);
	}
	appendStringInfoString(sql, ") DO ");
	initStringInfo(&changed);
	first = true;
	for (int c = 0; c < plan->noutputs; c++)
	{
		const char *col = quote_identifier(plan->outputs[c].name);
		AttrNumber	attnum = get_attnum(sink_relid, plan->outputs[c].name);
		TypeCacheEntry *tc;

		/* a group's key is the group's; a projection's is the last write's (1.0 after 1.00) */
		if (!keys && plan->outputs[c].is_group_key)
			continue;
		appendStringInfo(sql, "%s%s = excluded.%s", first ? "UPDATE SET " : ", ", col, col);
		/* types without an equality operator, and keys (equal), are compared as text */
		tc = lookup_type_cache(attnum != InvalidAttrNumber ? get_atttype(sink_relid, attnum) :
							   plan->outputs[c].type, TYPECACHE_EQ_OPR);
		if (OidIsValid(tc->eq_opr) && !(keys && keys[c]))
			appendStringInfo(&changed, "%ss.%s IS DISTINCT FROM excluded.%s",
							 first ? "" : " OR ", col, col);
		else
			appendStringInfo(&changed, "%ss.%s::pg_catalog.text IS DISTINCT FROM excluded.%s::pg_catalog.text",
							 first ? "" : " OR ", col, col);
		first = false;
	}
	if (first)
		appendStringInfoString(sql, "NOTHING");
	else
	{
		if (has_update_at)
			appendStringInfoString(sql, ", update_at = excluded.update_at");
		appendStringInfo(sql, " WHERE %s", changed.data);
	}
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
	if (upsert && !has_group_keys(plan))
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
		append_group_columns(&conflict, plan);
		if (conflict_on_placeholder(sink_relid, plan))
			appendStringInfoString(&conflict, ", " TS_PLACEHOLDER);
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
	StringInfoData sql;
	bool		first = true;
	SinkTarget *target;

	if (rows->nrows == 0)
		return;
	if (!has_group_keys(plan))
	{
		run_sql(psprintf("DELETE FROM %s", locked_sink_name(sink_relid)), 0, NULL, NULL,
				SPI_OK_DELETE);
		return;
	}
	initStringInfo(&sql);
	appendStringInfo(&sql, "DELETE FROM %s s USING (SELECT *", locked_sink_name(sink_relid));
	for (int c = 0; c < plan->noutputs; c++)
		keys[c] = plan->outputs[c].is_group_key;
	target = sink_target(sink_relid, plan);
	append_unnest(&sql, rows, plan, target, keys, false, argtypes, args, &nargs);
	sink_target_free(target);
	appendStringInfoString(&sql, ") d WHERE ");
	for (int c = 0; c < plan->noutputs; c++)
	{
		const char *col = quote_identifier(plan->outputs[c].name);

		if (!keys[c])
			continue;
		appendStringInfo(&sql, "%ss.%s IS NOT DISTINCT FROM d.%s", first ? "" : " AND ", col, col);
		first = false;
	}
	run_sql(sql.data, nargs, argtypes, args, SPI_OK_DELETE);
}

/* INSERT INTO the sink the rows of query (the flow's outputs, in order). */
static char *
insert_query_sql(Oid sink_relid, FlowPlan *plan, const char *query)
{
	StringInfoData sql;
	StringInfoData columns;
	StringInfoData values;
	SinkKey		key;

	initStringInfo(&sql);
	appendStringInfo(&sql, "INSERT INTO %s (", qualified_relation_name(sink_relid));
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
	return sql.data;
}

void
sink_refresh_statements(Oid sink_relid, FlowPlan *plan, List *ranges, bool whole,
						const char *query, SinkRefreshStatements *out)
{
	char	   *sink = qualified_relation_name(sink_relid);
	StringInfoData sql;
	ListCell   *lc;

	out->argtypes = palloc(sizeof(Oid) * Max(list_length(ranges) * 2, 1));
	out->args = palloc(sizeof(Datum) * Max(list_length(ranges) * 2, 1));
	out->nargs = 0;
	initStringInfo(&sql);
	appendStringInfo(&sql, "DELETE FROM %s", sink);
	if (!whole)
	{
		const char *wcol = quote_identifier(plan->outputs[plan->window_output].name);
		Oid			wtype;

		appendStringInfoString(&sql, " WHERE ");
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
	out->delete_sql = sql.data;

	out->insert_sql = insert_query_sql(sink_relid, plan, query);
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

		if (tle->resjunk)
			continue;
		out = &plan->outputs[output++];
		if (!out->is_tick_key)
			continue;
		get_atttypetypmodcoll(sink_relid, get_attnum(sink_relid, out->name),
							  &atttype, &atttypmod, &attcollation);
		appendStringInfo(&buf, "%s%s.%s IS NOT DISTINCT FROM CAST((%s) AS %s)",
						 buf.len ? " AND " : "", alias, quote_identifier(out->name),
						 deparse_expression((Node *) tle->expr, NIL, false, false),
						 format_type_extended(atttype, atttypmod,
											  FORMAT_TYPE_TYPEMOD_GIVEN |
											  FORMAT_TYPE_FORCE_QUALIFY));
	}
	if (buf.len == 0)
		elog(ERROR, "a recording rule without a tick key");
	return buf.data;
}

void
sink_record_statements(Oid sink_relid, FlowPlan *plan, const char *query,
					   bool prune, TimestampTz cutoff, SinkRefreshStatements *out)
{
	char	   *sink = qualified_relation_name(sink_relid);
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
	out->insert_sql = insert_query_sql(sink_relid, plan, query);
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

	sink_write_context_push(&write_context, sink_relid, plan, flow_name);
	sink_refresh_statements(sink_relid, plan, ranges, whole, query, &stmts);
	run_sql(stmts.delete_sql, stmts.nargs, stmts.argtypes, stmts.args, SPI_OK_DELETE);
	run_sql(stmts.insert_sql, 0, NULL, NULL, SPI_OK_INSERT);
	sink_write_context_pop(&write_context);
	return SPI_processed;
}

void
sink_delete_null_window(Oid sink_relid, FlowPlan *plan, const char *flow_name)
{
	SinkWriteContext write_context;

	sink_write_context_push(&write_context, sink_relid, plan, flow_name);
	run_sql(psprintf("DELETE FROM %s WHERE %s IS NULL", qualified_relation_name(sink_relid),
					 quote_identifier(plan->outputs[plan->window_output].name)),
			0, NULL, NULL, SPI_OK_DELETE);
	sink_write_context_pop(&write_context);
}
