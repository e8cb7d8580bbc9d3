/*-------------------------------------------------------------------------
 *
 * ddl_events.c
 *	  Keeping flows consistent with DDL on their tables, and with restores.
 *
 * A flow's stored query tree refers to tables and columns by OID and
 * number, so renaming a source, sink or column never breaks it.  Other DDL
 * is handled like PostgreSQL handles a table's dependent triggers and
 * indexes:
 *
 * - DROP TABLE of a source or sink drops the flows built on it (with a
 *   NOTICE), as a trigger or index goes with its table.
 * - ALTER TABLE that drops or retypes a column a flow reads, or a sink
 *   column a flow writes, is refused, as it is for a column a view uses.
 * - After any ALTER of a table, schema, function or type, the canonical
 *   query text of each flow is deparsed again, so pg_dump carries the
 *   current names.
 * - When pg_restore loads the catalog, its query trees still hold the old
 *   database's OIDs: a row trigger re-plans each flow from its canonical
 *   text under the flow's pinned settings.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_attribute.h"
#include "catalog/pg_type.h"
#include "commands/event_trigger.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "capture.h"
#include "catalog.h"
#include "worker.h"
#include "planner.h"
#include "settings.h"
#include "sink.h"

PG_FUNCTION_INFO_V1(flowpg_on_sql_drop);
PG_FUNCTION_INFO_V1(flowpg_on_ddl_command_end);
PG_FUNCTION_INFO_V1(flowpg_catalog_restore_fixup);

/* (relid, name) pairs of the pg_class objects an event touched. */
typedef struct TouchedRelation
{
	Oid			relid;
	char	   *identity;
} TouchedRelation;

static List *
touched_relations(const char *function, const char *extra_where)
{
	List	   *result = NIL;
	MemoryContext caller = CurrentMemoryContext;
	char	   *sql = psprintf("SELECT DISTINCT objid, object_identity FROM pg_catalog.%s() "
							   "WHERE classid = 'pg_catalog.pg_class'::pg_catalog.regclass %s",
							   function, extra_where);

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute(sql, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "reading %s() failed", function);
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		MemoryContext old = MemoryContextSwitchTo(caller);
		TouchedRelation *rel = palloc(sizeof(TouchedRelation));
		bool		isnull;

		rel->relid = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[i],
													SPI_tuptable->tupdesc, 1, &isnull));
		rel->identity = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2);
		result = lappend(result, rel);
		MemoryContextSwitchTo(old);
	}
	SPI_finish();
	return result;
}

Datum
flowpg_on_sql_drop(PG_FUNCTION_ARGS)
{
	List	   *dropped;
	ListCell   *lc;

	if (!CALLED_AS_EVENT_TRIGGER(fcinfo))
		elog(ERROR, "flowpg_on_sql_drop must be called as an event trigger");
	if (!catalog_exists())
		PG_RETURN_VOID();		/* flowpg itself is being dropped */

	dropped = touched_relations("pg_event_trigger_dropped_objects",
								"AND objsubid = 0 AND object_type IN ('table', 'partitioned table')");
	foreach(lc, dropped)
	{
		TouchedRelation *rel = lfirst(lc);
		ListCell   *lc2;
		ListCell   *lc3;

		foreach(lc2, catalog_get_by_relation(rel->relid))
		{
			FlowEntry  *entry = lfirst(lc2);

			ereport(NOTICE,
					(errmsg("drop cascades to flow %s", entry->flow_name),
					 errdetail("Table %s was the flow's %s.", rel->identity,
							   entry->sink_relid == rel->relid ? "sink" : "source")));
			catalog_delete(entry->flow_id);
			foreach(lc3, entry->source_relids)
				if (lfirst_oid(lc3) != rel->relid)
					capture_remove_if_unused(lfirst_oid(lc3));
		}
	}
	PG_RETURN_VOID();
}

typedef struct ColumnCheck
{
	Oid			relid;			/* InvalidOid: every table */
	RangeTblEntry *rte;			/* the offending column, when found */
	Var		   *var;
} ColumnCheck;

/* Is the column gone, or of another type than the flow was planned with? */
static bool
column_changed(Var *var, RangeTblEntry *rte, void *arg)
{
	ColumnCheck *check = arg;
	HeapTuple	tuple;
	bool		changed;

	if (var->varattno <= 0 ||
		(OidIsValid(check->relid) && rte->relid != check->relid))
		return false;
	tuple = SearchSysCache2(ATTNUM, ObjectIdGetDatum(rte->relid),
							Int16GetDatum(var->varattno));
	if (!HeapTupleIsValid(tuple))
		changed = true;
	else
	{
		Form_pg_attribute attr = (Form_pg_attribute) GETSTRUCT(tuple);

		changed = attr->attisdropped || attr->atttypid != var->vartype ||
			attr->atttypmod != var->vartypmod;
		ReleaseSysCache(tuple);
	}
	if (changed)
	{
		check->rte = rte;
		check->var = var;
	}
	return changed;
}

static void
flow_context_callback(void *arg)
{
	errcontext("flow \"%s\" depends on this table", ((FlowEntry *) arg)->flow_name);
}

/* Errors out when ALTERs to relid broke the flow's source or sink. */
static void
revalidate_flow(FlowEntry *entry, Query *query, Oid relid)
{
	ColumnCheck check = {relid, NULL, NULL};
	ErrorContextCallback callback;

	if (flow_plan_walk_columns(query, column_changed, &check))
	{
		char	   *colname = get_attname(check.rte->relid, check.var->varattno, true);

		/* a dropped column is named by the flow's own record of it */
		if (colname == NULL || get_attnum(check.rte->relid, colname) == InvalidAttrNumber)
			colname = strVal(list_nth(check.rte->eref->colnames, check.var->varattno - 1));
		ereport(ERROR,
				(errcode(ERRCODE_DEPENDENT_OBJECTS_STILL_EXIST),
				 errmsg("cannot drop or change the type of column \"%s\" of table %s because flow \"%s\" reads it",
						colname, get_rel_name(check.rte->relid), entry->flow_name),
				 errhint("Drop the flow first with flowpg.drop_flow('%s'), or replace it with a query that does not use the column.",
						 entry->flow_name)));
	}
	if (entry->sink_relid == relid)
	{
		callback.callback = flow_context_callback;
		callback.arg = entry;
		callback.previous = error_context_stack;
		error_context_stack = &callback;
		sink_check_columns(relid, flow_plan_query_tree(query));
		error_context_stack = callback.previous;
	}
}

Datum
flowpg_on_ddl_command_end(PG_FUNCTION_ARGS)
{
	List	   *altered;
	List	   *flows;
	ListCell   *lc;

	if (!CALLED_AS_EVENT_TRIGGER(fcinfo))
		elog(ERROR, "flowpg_on_ddl_command_end must be called as an event trigger");
	if (!catalog_exists())
		PG_RETURN_VOID();
	flows = catalog_get_all();
	if (flows == NIL)
		PG_RETURN_VOID();

	altered = touched_relations("pg_event_trigger_ddl_commands", "");
	foreach(lc, flows)
	{
		FlowEntry  *entry = lfirst(lc);
		Query	   *query = stringToNode(entry->query_tree);
		char	   *text;
		ListCell   *lc2;

		foreach(lc2, altered)
		{
			TouchedRelation *rel = lfirst(lc2);

			if (rel->relid == entry->sink_relid ||
				list_member_oid(entry->source_relids, rel->relid))
				revalidate_flow(entry, query, rel->relid);
		}
		text = flow_plan_deparse(query, entry->settings);
		if (strcmp(text, entry->query) != 0)
			catalog_update_query_text(entry->flow_id, text);
	}
	PG_RETURN_VOID();
}

typedef struct RelidCollector
{
	List	   *relids;
} RelidCollector;

static bool
collect_relid(Var *var, RangeTblEntry *rte, void *arg)
{
	RelidCollector *collector = arg;

	collector->relids = list_append_unique_oid(collector->relids, rte->relid);
	return false;
}

/*
 * BEFORE INSERT row trigger on flowpg.flow.  A row whose query tree reads
 * other tables than its source_tables column names (restored by name) comes
 * from another database: plan it again from its canonical text.
 */
Datum
flowpg_catalog_restore_fixup(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;
	HeapTuple	tuple;
	TupleDesc	desc;
	bool		isnull;
	Datum	   *items;
	int			nitems;
	List	   *declared = NIL;
	RelidCollector collector = {NIL};
	Query	   *query;
	ArrayType  *settings;
	int			nestlevel;
	FlowPlan   *plan;
	int			columns[4];
	Datum		values[4];
	bool		nulls[4];

	if (!CALLED_AS_TRIGGER(fcinfo) || !TRIGGER_FIRED_BEFORE(trigdata->tg_event) ||
		!TRIGGER_FIRED_FOR_ROW(trigdata->tg_event))
		elog(ERROR, "flowpg_catalog_restore_fixup must be a BEFORE row trigger");
	tuple = trigdata->tg_trigtuple;
	desc = RelationGetDescr(trigdata->tg_relation);

	deconstruct_array(DatumGetArrayTypeP(heap_getattr(tuple, SPI_fnumber(desc, "source_tables"), desc, &isnull)),
					  REGCLASSOID, sizeof(Oid), true, TYPALIGN_INT, &items, NULL, &nitems);
	for (int i = 0; i < nitems; i++)
		declared = list_append_unique_oid(declared, DatumGetObjectId(items[i]));
	query = stringToNode(TextDatumGetCString(heap_getattr(tuple, SPI_fnumber(desc, "query_tree"), desc, &isnull)));
	(void) flow_plan_walk_columns(query, collect_relid, &collector);
	worker_request(MyDatabaseId);
	if (list_difference_oid(collector.relids, declared) == NIL)
		return PointerGetDatum(tuple);

	settings = DatumGetArrayTypeP(heap_getattr(tuple, SPI_fnumber(desc, "settings"), desc, &isnull));
	nestlevel = flow_settings_push(settings);
	plan = flow_plan_query_text(TextDatumGetCString(heap_getattr(tuple, SPI_fnumber(desc, "query"), desc, &isnull)));
	flow_settings_pop(nestlevel);

	columns[0] = SPI_fnumber(desc, "query_tree");
	values[0] = CStringGetTextDatum(nodeToString(plan->query));
	nulls[0] = false;
	columns[1] = SPI_fnumber(desc, "time_table");
	values[1] = ObjectIdGetDatum(plan->time_relid);
	nulls[1] = plan->window_expr == NULL;
	columns[2] = SPI_fnumber(desc, "time_column");
	values[2] = Int16GetDatum(plan->time_attno);
	nulls[2] = plan->window_expr == NULL;
	columns[3] = SPI_fnumber(desc, "window_expr");
	values[3] = plan->window_expr ? CStringGetTextDatum(plan->window_text) : (Datum) 0;
	nulls[3] = plan->window_expr == NULL;
	return PointerGetDatum(heap_modify_tuple_by_cols(tuple, desc, 4, columns, values, nulls));
}
