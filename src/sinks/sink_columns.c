/*-------------------------------------------------------------------------
 *
 * sink_columns.c
 *	  How a flow's outputs meet an existing sink table's columns and keys.
 *
 * An existing sink is checked column by column, by name (flowpg.execute
 * matches by position where names differ, as GreptimeDB does:
 * sink_match_by_position); an output may have another type than its
 * column where INSERT would convert it (an assignment cast), and every
 * write converts it so -- the streaming writes in C (sink_target), the
 * batching refresh's INSERT ... SELECT by itself -- but a key only by a
 * cast that cannot merge two keys, and only under a collation that keeps
 * the flow's keys apart (the rules are sink_keys.c's).
 *
 * The keys a flow writes by: a flow with aggregates needs a unique index
 * on its group key columns, not deferrable (has_group_key_index); a flow
 * without aggregates keeps one row per key of a unique index over columns
 * it writes, where the sink has one (sink_projection_key).
 *
 * Nothing here writes the sink: sink.c creates and writes it.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/namespace.h"
#include "catalog/pg_index.h"
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "parser/parse_coerce.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/syscache.h"
#include "utils/typcache.h"

#include "sink_columns.h"

char *
sink_qualified_relation_name(Oid relid)
{
	return quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)),
									  get_rel_name(relid));
}

bool
sink_is_output(FlowPlan *plan, const char *name)
{
	for (int i = 0; i < plan->noutputs; i++)
		if (strcmp(plan->outputs[i].name, name) == 0)
			return true;
	return false;
}

bool
sink_fills_update_at(Oid sink_relid, FlowPlan *plan)
{
	return get_attnum(sink_relid, "update_at") != InvalidAttrNumber &&
		!sink_is_output(plan, "update_at");
}

/* The outputs' names, quoted and comma-separated, for messages. */
char *
sink_output_names_text(FlowPlan *plan)
{
	StringInfoData names;

	initStringInfo(&names);
	for (int i = 0; i < plan->noutputs; i++)
		appendStringInfo(&names, "%s%s", i ? ", " : "", quote_identifier(plan->outputs[i].name));
	return names.data;
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
 * The group key columns, the time window first: the batching refresh
 * deletes sink rows by window range, which the index then serves.
 */
void
sink_append_group_columns(StringInfo buf, FlowPlan *plan)
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

/* The columns of the group key index, for messages. */
char *
sink_group_columns_text(FlowPlan *plan)
{
	StringInfoData cols;

	initStringInfo(&cols);
	sink_append_group_columns(&cols, plan);
	return cols.data;
}

bool
sink_has_group_keys(FlowPlan *plan)
{
	for (int i = 0; i < plan->noutputs; i++)
		if (plan->outputs[i].is_group_key)
			return true;
	return false;
}

SinkTarget *
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
		coerce = sink_assignment_coercion(out, target->types[c], target->typmods[c]);
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

void
sink_target_free(SinkTarget *target)
{
	if (target->econtext)
		FreeExprContext(target->econtext, true);
}

/* Output c's value as the sink column holds it (in the current memory context). */
Datum
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
 * Does each column of the index compare the flow's keys under a collation
 * that keeps them apart (sink_key_collation_keeps_keys)?
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
			!sink_key_collation_keeps_keys(collations->values[i], plan->outputs[output].collation))
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
	AttrNumber	placeholder = get_attnum(RelationGetRelid(rel), SINK_TS_PLACEHOLDER);

	if (has_group_key_index(rel, plan, keys, nkeys, except_index))
		return 1;
	if (placeholder != InvalidAttrNumber && !sink_is_output(plan, SINK_TS_PLACEHOLDER) &&
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

	if (!sink_has_group_keys(plan))
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
bool
sink_conflict_on_placeholder(Oid sink_relid, FlowPlan *plan)
{
	Relation	rel;
	Bitmapset  *keys = NULL;
	int			nkeys = 0;
	bool		placeholder;

	if (get_attnum(sink_relid, SINK_TS_PLACEHOLDER) == InvalidAttrNumber ||
		sink_is_output(plan, SINK_TS_PLACEHOLDER))
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
	AttrNumber	placeholder = get_attnum(sink_relid, SINK_TS_PLACEHOLDER);

	memset(key, 0, sizeof(SinkKey));
	if (plan->is_aggregate)
		return false;
	if (sink_is_output(plan, SINK_TS_PLACEHOLDER))
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
			  strcmp(NameStr(attr->attname), SINK_TS_PLACEHOLDER) == 0) &&
			 !sink_is_output(plan, NameStr(attr->attname))))
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
	appendStringInfoString(&outs, sink_output_names_text(plan));
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
		if (sink_assignment_coercion(&plan->outputs[i], attr->atttypid, attr->atttypmod) == NULL)
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
 * Refuses a key column of a projection's key (an output written into the
 * sink's column, under the collation given or the column's) whose
 * conversion or collation could make two keys one.  key_columns: the
 * index's columns, NULL for an index not made yet.
 */
static void
check_key_column(Oid sink_relid, FlowPlan *plan, int output, const char *relname,
				 List *collation_name, const char *key_columns)
{
	FlowOutput *out = &plan->outputs[output];
	Oid			type;
	int32		typmod;
	Oid			collation;
	const char *why = NULL;
	Node	   *coerce;

	get_atttypetypmodcoll(sink_relid, get_attnum(sink_relid, out->name), &type, &typmod,
						  &collation);
	if (collation_name)
		collation = get_collation_oid(collation_name, false);
	if (!sink_key_collation_keeps_keys(collation, out->collation))
		refuse_key_collation(out, relname, collation);
	coerce = sink_assignment_coercion(out, type, typmod);
	if (coerce && !sink_key_conversion_keeps_keys(coerce, plan, output, &why))
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("key column \"%s\" of sink table \"%s\" has type %s, but the flow outputs %s",
						out->name, relname, format_type_extended(type, typmod, FORMAT_TYPE_TYPEMOD_GIVEN),
						format_type_be(out->type)),
				 key_columns ?
				 errdetail("flowpg keeps one row per key of the sink's unique index on (%s); converting the key could make rows of different keys one: %s.",
						   key_columns, why) :
				 errdetail("The unique index would be the key flowpg keeps one row per; converting the key could make rows of different keys one: %s.",
						   why),
				 errhint("Give the column the output's type, or cast the output in the flow's query to the column's type.")));
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
		if (key.is_key[i])
			check_key_column(sink_relid, plan, i, relname, NIL, key.columns);
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

		/* __ts_placeholder is flowpg's, the same in every row */
		if (output < 0 && elem->name && strcmp(elem->name, SINK_TS_PLACEHOLDER) == 0)
			continue;
		/* an expression or a column the flow does not write: never its key */
		if (output < 0)
			return;
		check_key_column(sink_relid, plan, output, relname, elem->collation, NULL);
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
		coerce = sink_assignment_coercion(out, attr->atttypid, attr->atttypmod);
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
		if (out->is_group_key &&
			!sink_key_conversion_keeps_keys(coerce, plan, i, &why))
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
			!sink_key_collation_keeps_keys(attr->attcollation, out->collation))
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
		if (strcmp(NameStr(attr->attname), "update_at") == 0 &&
			!sink_is_output(plan, "update_at"))
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
		written = sink_is_output(plan, NameStr(attr->attname));
		if (!written && strcmp(NameStr(attr->attname), SINK_TS_PLACEHOLDER) == 0)
		{
			if (attr->atttypid != TIMESTAMPOID && attr->atttypid != TIMESTAMPTZOID &&
				attr->atttypid != DATEOID && attr->atttypid != INT8OID &&
				attr->atttypid != INT4OID)
				ereport(ERROR,
						(errcode(ERRCODE_DATATYPE_MISMATCH),
						 errmsg("column \"%s\" of sink table \"%s\" has type %s, but flowpg writes the epoch there",
								SINK_TS_PLACEHOLDER, relname, format_type_be(attr->atttypid)),
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
		char	   *cols = sink_group_columns_text(plan);

		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TABLE_DEFINITION),
				 errmsg("sink table \"%s\" has no unique index on the group key columns (%s)",
						relname, cols),
				 errdetail("flowpg writes one row per group and finds it by its keys; the index must not be deferrable."),
				 errhint("Create one: CREATE UNIQUE INDEX ON %s (%s) NULLS NOT DISTINCT;",
						 sink_qualified_relation_name(sink_relid), cols)));
	}
	table_close(rel, AccessShareLock);
	check_projection_key(sink_relid, plan, relname);
}
