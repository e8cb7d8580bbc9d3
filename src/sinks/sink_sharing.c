/*-------------------------------------------------------------------------
 *
 * sink_sharing.c
 *	  Several flows writing one sink, each its own columns on a shared key
 *	  (GreptimeDB's merge_mode = 'last_non_null').
 *
 * Flows may share a sink when each groups by the same key columns (the
 * sink's unique index) and no two write the same other column.  Each then
 * owns its value columns: it upserts them on the key and leaves the other
 * flows' columns alone.  Where a group of one flow goes away, its columns
 * are set to NULL in the key's row rather than the row deleted, and the
 * row goes only once every flow's columns in it are NULL.  So, per flow
 * and column, the sink holds the flow's query: the rows whose columns of
 * that flow are not all NULL are exactly its groups whose values are not
 * all NULL (a group whose every value is NULL is, in a shared sink, the
 * same as no group: GreptimeDB merges the last non-NULL values too).
 *
 * Sharing is decided from the catalog at every write (sink_shared_values,
 * kept per backend until the catalog changes), so a flow that starts
 * sharing its sink with one created later changes how it deletes from its
 * next write on.  Projections, global aggregates
 * and recording rules do not share: their rows are not keyed by groups
 * the other flows have.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/table.h"
#include "nodes/parsenodes.h"
#include "optimizer/optimizer.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/memutils.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "catalog.h"
#include "sink_columns.h"
#include "sink_sharing.h"

/* A flow's output column names, non-key ones into *values, keys into *keys. */
static void
entry_columns(FlowEntry *entry, List **keys, List **values)
{
	Query	   *query = (Query *) stringToNode(entry->query_tree);
	ListCell   *lc;

	foreach(lc, query->targetList)
	{
		TargetEntry *tle = lfirst_node(TargetEntry, lc);

		if (tle->resjunk)
			continue;
		if (tle->ressortgroupref != 0 && query->groupClause != NIL &&
			get_sortgroupref_clause_noerr(tle->ressortgroupref, query->groupClause) != NULL)
			*keys = lappend(*keys, makeString(tle->resname));
		else
			*values = lappend(*values, makeString(tle->resname));
	}
}

static List *
plan_columns(FlowPlan *plan, bool key)
{
	List	   *names = NIL;

	for (int i = 0; i < plan->noutputs; i++)
		if (plan->outputs[i].is_group_key == key)
			names = lappend(names, makeString(plan->outputs[i].name));
	return names;
}

static bool
same_names(List *a, List *b)
{
	ListCell   *lc;

	if (list_length(a) != list_length(b))
		return false;
	foreach(lc, a)
		if (!list_member(b, lfirst(lc)))
			return false;
	return true;
}

static char *
names_text(List *names)
{
	StringInfoData buf;
	ListCell   *lc;

	initStringInfo(&buf);
	foreach(lc, names)
		appendStringInfo(&buf, "%s%s", buf.len ? ", " : "", quote_identifier(strVal(lfirst(lc))));
	return buf.data;
}

/* Can this flow's plan share a sink at all? */
static const char *
why_not_shareable(FlowPlan *plan)
{
	if (!plan->is_aggregate || !sink_has_group_keys(plan))
		return plan->is_aggregate ? "it has no GROUP BY" : "it has no aggregates";
	if (plan->recording_rule)
		return "it is a recording rule";
	for (int i = 0; i < plan->noutputs; i++)
		if (!plan->outputs[i].is_group_key)
			return NULL;
	return "it writes no column besides the key";
}

/* The same of a flow of the catalog. */
static const char *
why_other_not_shareable(FlowEntry *other, List *other_values)
{
	if (!other->is_aggregate)
		return psprintf("flow \"%s\" has no aggregates", other->flow_name);
	if (other->options && strstr(other->options, "\"recording_rule\": true"))
		return psprintf("flow \"%s\" is a recording rule", other->flow_name);
	if (other_values == NIL)
		return psprintf("flow \"%s\" writes no column besides the key", other->flow_name);
	return NULL;
}

/* A value column of a shared sink must take NULL, and be NULL until written. */
static void
check_value_column(Oid sink_relid, const char *column)
{
	AttrNumber	attnum = get_attnum(sink_relid, column);
	Relation	rel;
	Form_pg_attribute attr;
	bool		notnull;
	bool		hasdef;

	if (attnum <= 0)
		return;					/* no such column: sink_check_columns says so */
	rel = table_open(sink_relid, AccessShareLock);
	attr = TupleDescAttr(RelationGetDescr(rel), attnum - 1);
	notnull = attr->attnotnull;
	hasdef = attr->atthasdef;
	table_close(rel, AccessShareLock);
	if (notnull || hasdef)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TABLE_DEFINITION),
				 errmsg("column \"%s\" of shared sink table \"%s\" is %s",
						column, get_rel_name(sink_relid), notnull ? "NOT NULL" : "given a default"),
				 errdetail("In a sink several flows write, a key's row holds NULL in the columns of a flow that has no group of that key."),
				 errhint("ALTER TABLE %s ALTER COLUMN %s %s;", sink_qualified_relation_name(sink_relid),
						 quote_identifier(column), notnull ? "DROP NOT NULL" : "DROP DEFAULT")));
}

void
sink_check_sharing(Oid sink_relid, const char *flow_name, FlowPlan *plan, int64 own_flow_id)
{
	List	   *others = NIL;
	List	   *keys = plan_columns(plan, true);
	List	   *values = plan_columns(plan, false);
	const char *relname = get_rel_name(sink_relid);
	ListCell   *lc;

	foreach(lc, catalog_get_all_by_sink(sink_relid))
	{
		FlowEntry  *other = lfirst(lc);

		if (other->flow_id != own_flow_id)
			others = lappend(others, other);
	}
	if (others == NIL)
		return;
	foreach(lc, others)
	{
		FlowEntry  *other = lfirst(lc);
		List	   *other_keys = NIL;
		List	   *other_values = NIL;
		const char *why = why_not_shareable(plan);
		ListCell   *vc;

		entry_columns(other, &other_keys, &other_values);
		if (why == NULL)
			why = why_other_not_shareable(other, other_values);
		if (why == NULL && !same_names(keys, other_keys))
			why = psprintf("flow \"%s\" groups by (%s), this flow by (%s)", other->flow_name,
						   names_text(other_keys), names_text(keys));
		if (why)
			ereport(ERROR,
					(errcode(ERRCODE_DUPLICATE_OBJECT),
					 errmsg("table \"%s\" is already the sink of flow \"%s\"", relname, other->flow_name),
					 errdetail("Flows share a sink only when each groups by the same key columns and writes its own other columns; %s.", why),
					 errhint("Write this flow into a sink of its own.")));
		foreach(vc, values)
			if (list_member(other_values, lfirst(vc)))
				ereport(ERROR,
						(errcode(ERRCODE_DUPLICATE_COLUMN),
						 errmsg("column \"%s\" of sink table \"%s\" is written by flow \"%s\" already",
								strVal(lfirst(vc)), relname, other->flow_name),
						 errdetail("Flows sharing a sink each write their own columns on the shared key (%s); two flows writing one column would overwrite each other's values.",
								   names_text(keys)),
						 errhint("Name the output otherwise (AS) and add a column for it, or write this flow into a sink of its own.")));
	}
	/* every flow's value columns: each leaves the others' NULL */
	foreach(lc, values)
		check_value_column(sink_relid, strVal(lfirst(lc)));
	foreach(lc, others)
	{
		List	   *other_keys = NIL;
		List	   *other_values = NIL;
		ListCell   *vc;

		entry_columns(lfirst(lc), &other_keys, &other_values);
		foreach(vc, other_values)
			check_value_column(sink_relid, strVal(lfirst(vc)));
	}
}

/*
 * Whether a sink is shared is asked at every write: the answers are kept
 * per backend until flowpg's catalog changes (catalog_changed invalidates
 * its relcache entry, which every backend processes).
 */
typedef struct SharedAnswer
{
	Oid			sink_relid;		/* the hash key */
	char	   *values;			/* NULL: one flow writes it */
} SharedAnswer;

static HTAB *shared_answers = NULL;
static MemoryContext shared_answers_memory = NULL;
static Oid	shared_answers_catalog = InvalidOid;

static void
shared_answers_callback(Datum arg, Oid relid)
{
	if (shared_answers != NULL &&
		(relid == InvalidOid || relid == shared_answers_catalog))
	{
		MemoryContextReset(shared_answers_memory);
		shared_answers = NULL;
	}
}

char *
sink_shared_values(Oid sink_relid, FlowPlan *plan)
{
	SharedAnswer *answer;
	bool		found;
	List	   *flows;
	List	   *values = NIL;
	ListCell   *lc;

	if (shared_answers_memory == NULL)
	{
		shared_answers_memory = AllocSetContextCreate(TopMemoryContext, "flowpg shared sinks",
													  ALLOCSET_SMALL_SIZES);
		CacheRegisterRelcacheCallback(shared_answers_callback, (Datum) 0);
	}
	if (shared_answers != NULL)
	{
		answer = hash_search(shared_answers, &sink_relid, HASH_FIND, NULL);
		if (answer)
			return answer->values ? pstrdup(answer->values) : NULL;
	}

	/* (reading the catalog may process invalidations, which drop the table) */
	shared_answers_catalog = catalog_relid();
	flows = catalog_get_all_by_sink(sink_relid);
	if (list_length(flows) >= 2)
		foreach(lc, flows)
		{
			List	   *keys = NIL;

			entry_columns(lfirst(lc), &keys, &values);
		}
	if (shared_answers == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(Oid);
		ctl.entrysize = sizeof(SharedAnswer);
		ctl.hcxt = shared_answers_memory;
		shared_answers = hash_create("flowpg shared sinks", 16, &ctl,
									 HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	}
	answer = hash_search(shared_answers, &sink_relid, HASH_ENTER, &found);
	answer->values = values ? MemoryContextStrdup(shared_answers_memory, names_text(values)) : NULL;
	return answer->values ? pstrdup(answer->values) : NULL;
}

List *
sink_columns_of_other_flows(Oid sink_relid, int64 own_flow_id)
{
	List	   *columns = NIL;
	ListCell   *lc;

	foreach(lc, catalog_get_all_by_sink(sink_relid))
	{
		FlowEntry  *other = lfirst(lc);

		if (other->flow_id != own_flow_id)
			entry_columns(other, &columns, &columns);
	}
	return columns;
}

void
sink_check_every_column_written(Oid sink_relid, FlowPlan *plan, int64 own_flow_id,
								bool nulls_filled)
{
	Relation	rel = table_open(sink_relid, AccessShareLock);
	TupleDesc	desc = RelationGetDescr(rel);
	List	   *others = sink_columns_of_other_flows(sink_relid, own_flow_id);

	for (int a = 0; a < desc->natts; a++)
	{
		Form_pg_attribute attr = TupleDescAttr(desc, a);
		const char *name = NameStr(attr->attname);

		if (attr->attisdropped || attr->atthasdef || attr->attidentity || attr->attgenerated ||
			sink_is_output(plan, name) || strcmp(name, "update_at") == 0 ||
			strcmp(name, SINK_TS_PLACEHOLDER) == 0 ||
			(nulls_filled && !attr->attnotnull) ||
			list_member(others, makeString((char *) name)))
			continue;
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TABLE_DEFINITION),
				 errmsg("column \"%s\" of sink table \"%s\" has no default, and the flow does not write it",
						name, RelationGetRelationName(rel)),
				 errdetail("The flow outputs (%s). GreptimeDB refuses a sink column that its flow does not fill.",
						   sink_output_names_text(plan)),
				 errhint("Add the column to the flow's query, give it a default (ALTER TABLE %s ALTER COLUMN %s SET DEFAULT ...), or drop it; a sink that several flows write (GreptimeDB's merge_mode = 'last_non_null') takes WITH (merge_mode = 'last_non_null') in each flow.",
						 sink_qualified_relation_name(sink_relid), quote_identifier(name))));
	}
	table_close(rel, AccessShareLock);
}
