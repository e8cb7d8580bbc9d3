/*-------------------------------------------------------------------------
 *
 * ddl_guards.c
 *	  Changes to tables that PostgreSQL's dependencies say too little
 *	  about, checked by ddl_before_utility before they run.
 *
 * - ALTER COLUMN ... TYPE of a column a flow reads: PostgreSQL refuses it
 *   for the flow's dependency view, naming one internal view.  Refused
 *   here first, naming every flow, with the way out (the flows dropped and
 *   created again over their sinks).  Following it instead would re-plan
 *   the flows under the caller's ALTER, as their owners, and could change
 *   their outputs' types under their sinks.
 * - DROP EXTENSION flowpg without CASCADE while flows exist: refused
 *   first, saying how many flows there are and what CASCADE keeps, not
 *   with PostgreSQL's line for each of their internal objects.
 * - A partition of a sink that leaves it (DROP, DETACH, TRUNCATE of the
 *   partition, which the sink's guard trigger does not see) takes rows out
 *   of the sink: below the horizon they are gone for good, so the session
 *   and flowpg.flow_errors hear of it.
 * - A TRUNCATE of a sink itself (its guard trigger, installed by
 *   sink_install_guard): every flow writing it recomputes its whole sink.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "commands/trigger.h"
#include "catalog/dependency.h"
#include "catalog/indexing.h"
#include "catalog/pg_class.h"
#include "catalog/partition.h"
#include "catalog/pg_depend.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_rewrite.h"
#include "lib/stringinfo.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "catalog.h"
#include "ddl_guards.h"
#include "dirty_log.h"
#include "stats.h"

/* The view (or table) a rule belongs to. */
static Oid
rule_relation(Oid rule)
{
	Relation	rewrite = table_open(RewriteRelationId, AccessShareLock);
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tuple;
	Oid			relid = InvalidOid;

	ScanKeyInit(&key, Anum_pg_rewrite_oid, BTEqualStrategyNumber, F_OIDEQ, ObjectIdGetDatum(rule));
	scan = systable_beginscan(rewrite, RewriteOidIndexId, true, NULL, 1, &key);
	if (HeapTupleIsValid(tuple = systable_getnext(scan)))
		relid = ((Form_pg_rewrite) GETSTRUCT(tuple))->ev_class;
	systable_endscan(scan);
	table_close(rewrite, AccessShareLock);
	return relid;
}

/* The flows whose dependency views read column attno of relid. */
static List *
flows_reading_column(Oid relid, AttrNumber attno, List *flows)
{
	Relation	depend = table_open(DependRelationId, AccessShareLock);
	ScanKeyData key[3];
	SysScanDesc scan;
	HeapTuple	tuple;

	ScanKeyInit(&key[0], Anum_pg_depend_refclassid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(RelationRelationId));
	ScanKeyInit(&key[1], Anum_pg_depend_refobjid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(relid));
	ScanKeyInit(&key[2], Anum_pg_depend_refobjsubid, BTEqualStrategyNumber, F_INT4EQ,
				Int32GetDatum(attno));
	scan = systable_beginscan(depend, DependReferenceIndexId, true, NULL, 3, key);
	while (HeapTupleIsValid(tuple = systable_getnext(scan)))
	{
		Form_pg_depend dep = (Form_pg_depend) GETSTRUCT(tuple);
		FlowEntry  *entry;
		Oid			view;

		if (dep->classid != RewriteRelationId)
			continue;
		view = rule_relation(dep->objid);
		entry = OidIsValid(view) ? catalog_get_by_deps_view(view) : NULL;
		if (entry && !list_member_ptr(flows, entry))
			flows = lappend(flows, entry);
	}
	systable_endscan(scan);
	table_close(depend, AccessShareLock);
	return flows;
}

void
ddl_refuse_column_retype(Oid relid, const char *column)
{
	List	   *flows = NIL;
	ListCell   *lc;
	StringInfoData names;

	if (!OidIsValid(relid) || column == NULL)
		return;
	/* the ALTER recurses to partitions and children: so do the flows reading them */
	foreach(lc, find_all_inheritors(relid, NoLock, NULL))
	{
		AttrNumber	attno = get_attnum(lfirst_oid(lc), column);

		if (attno != InvalidAttrNumber)
			flows = flows_reading_column(lfirst_oid(lc), attno, flows);
	}
	if (flows == NIL)
		return;
	initStringInfo(&names);
	foreach(lc, flows)
		appendStringInfo(&names, "%s%s", names.len > 0 ? ", " : "",
						 quote_identifier(((FlowEntry *) lfirst(lc))->flow_name));
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("cannot alter type of column \"%s\" of table %s: %s %s %s it",
					column, get_rel_name(relid),
					list_length(flows) == 1 ? "flow" : "flows", names.data,
					list_length(flows) == 1 ? "reads" : "read"),
			 errdetail("A flow's query, its outputs' types and its sink follow the column's type."),
			 errhint("Drop the flows with flowpg.drop_flow (their sinks stay), alter the column, and create them again with the same sinks; a flow with expire_after keeps the rows of its windows before the horizon.")));
}

/* A partition left the sink of entry's flow: it recomputes, and says so. */
static void
sink_partition_left(FlowEntry *entry, Oid relid, const char *what)
{
	char	   *message;
	const char *detail;

	dirty_log_append(entry->flow_id, true, 0, 0, 0);
	message = psprintf("%s of partition %s takes its rows out of the sink of flow \"%s\"",
					   what, get_rel_name(relid), entry->flow_name);
	detail = entry->expire_after ?
		"The flow recomputes its maintained windows from the source; the rows of windows before its horizon (expire_after) are not recomputed." :
		"The flow recomputes them from the source.";
	ereport(WARNING,
			(errcode(ERRCODE_WARNING),
			 errmsg("%s", message), errdetail("%s", detail)));
	stats_record_warning(entry->flow_id, ERRCODE_WARNING, message, detail);
}

/*
 * A partition of a sink leaves it (DROP, DETACH) or is emptied (TRUNCATE
 * of the partition itself, which the sink's guard does not see): its rows
 * leave the sink.  The maintained windows are recomputed from the source;
 * the rows of windows before the horizon (expire_after), which nothing
 * recomputes, are gone -- a retention of the rollup, or a mistake: the
 * session and flowpg.flow_errors say so.
 */
void
ddl_sink_partition_leaves(Oid relid, const char *what)
{
	ListCell   *lc;

	if (!OidIsValid(relid) || !get_rel_relispartition(relid))
		return;
	foreach(lc, get_partition_ancestors(relid))
	{
		ListCell   *fc;

		foreach(fc, catalog_get_all_by_sink(lfirst_oid(lc)))
			sink_partition_left(lfirst(fc), relid, what);
	}
}



void
ddl_refuse_drop_extension(DropStmt *drop)
{
	ListCell   *lc;
	List	   *flows;
	StringInfoData names;
	int			shown = 0;

	if (drop->removeType != OBJECT_EXTENSION || drop->behavior == DROP_CASCADE)
		return;
	foreach(lc, drop->objects)
		if (strcmp(strVal(lfirst(lc)), "flowpg") == 0)
			break;
	if (lc == NULL || (flows = catalog_get_all()) == NIL)
		return;
	initStringInfo(&names);
	foreach(lc, flows)
	{
		if (shown++ == 10)
		{
			appendStringInfo(&names, " and %d more", list_length(flows) - 10);
			break;
		}
		appendStringInfo(&names, "%s%s", names.len > 0 ? ", " : "",
						 quote_identifier(((FlowEntry *) lfirst(lc))->flow_name));
	}
	ereport(ERROR,
			(errcode(ERRCODE_DEPENDENT_OBJECTS_STILL_EXIST),
			 errmsg_plural("cannot drop extension flowpg because %d flow exists",
						   "cannot drop extension flowpg because %d flows exist",
						   list_length(flows), list_length(flows)),
			 errdetail("Flows: %s.", names.data),
			 errhint("Drop them with flowpg.drop_flow, or use DROP EXTENSION flowpg CASCADE: either way their sink tables stay, with their rows; CASCADE also drops what depends on flowpg's own functions and views.")));
}

PG_FUNCTION_INFO_V1(flowpg_sink_truncated);

Datum
flowpg_sink_truncated(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;
	ListCell   *lc;

	if (!CALLED_AS_TRIGGER(fcinfo) || !TRIGGER_FIRED_BY_TRUNCATE(trigdata->tg_event))
		elog(ERROR, "flowpg_sink_truncated must be an AFTER TRUNCATE trigger");
	foreach(lc, catalog_get_all_by_sink(RelationGetRelid(trigdata->tg_relation)))
		dirty_log_append(((FlowEntry *) lfirst(lc))->flow_id, true, 0, 0, 0);
	return PointerGetDatum(NULL);
}
