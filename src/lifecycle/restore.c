/*-------------------------------------------------------------------------
 *
 * restore.c
 *	  Flows that arrive through a restore (pg_restore, psql < dump).
 *
 * pg_dump saves the catalog (flowpg.flow, config-dumped) among the data,
 * and the capture triggers, the sinks' unique indexes and TRUNCATE guards
 * among the post-data objects, which pg_restore creates only once the data
 * of their tables is in.  A flow restored with the default settings, its
 * worker running, must therefore not be maintained while its tables fill:
 * it would count rows twice or never, and a trigger it installed itself
 * would collide with the one pg_restore creates next.
 *
 * So any row inserted into flowpg.flow other than by create_flow is a
 * restored flow: a BEFORE INSERT trigger records its dependency view's
 * dependency on its sink (ddl_events.c), which pg_dump does not carry, and
 * re-plans it from its canonical,
 * schema-qualified text (its query tree holds the old database's OIDs) --
 * as its owner, in a restricted security context, without probing its
 * window (which would run the owner's functions) and without checking its
 * owner's rights (pg_restore grants them last) -- and marks it
 * 'restoring'.  Nothing maintains a restoring flow.  Once every capture
 * trigger of its sources and their partitions, its sink's guard and
 * unique index exist, every object its query resolves to is of a role that
 * can act as its owner (trust.c), and its owner may read the sources and write the sink,
 * restore_finish makes it active and logs it dirty as a whole: its first
 * run recomputes the sink from the restored source, once.  The worker
 * tries that every round; flush_flow and refresh_flow do it themselves.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_inherits.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

#include "capture.h"
#include "catalog.h"
#include "flow_deps.h"
#include "dirty_log.h"
#include "planner.h"
#include "restore.h"
#include "settings.h"
#include "sink.h"
#include "subxact.h"
#include "trust.h"
#include "pool.h"

PG_FUNCTION_INFO_V1(flowpg_catalog_restore_fixup);

#define RESTORING_REASON "restored from a dump: maintained once pg_restore has restored %s"

/*
 * Plans the canonical text as role, restricted, under the flow's settings
 * for canonical text; errors propagate.
 */
static FlowPlan *
plan_restored_as(Oid role, ArrayType *settings, const char *query, int window_output)
{
	FlowIdentity identity;
	FlowPlan   *plan;

	flow_enter(&identity, role, settings, true);
	plan = flow_plan_restored_text(query, window_output);
	flow_leave(&identity);
	return plan;
}

typedef struct RestoredPlan
{
	Oid			role;
	ArrayType  *settings;
	const char *query;
	int			window_output;
	FlowPlan   *plan;
} RestoredPlan;

static void
plan_restored_call(void *arg)
{
	RestoredPlan *rp = (RestoredPlan *) arg;

	rp->plan = plan_restored_as(rp->role, rp->settings, rp->query, rp->window_output);
}

/*
 * As the flow's owner -- or, when pg_restore has not granted the owner the
 * USAGE on the schemas its query names yet (it grants last), as the role
 * restoring, whose name lookups the fully qualified text does not depend
 * on.  Planning runs none of the flow's functions either way.
 */
static FlowPlan *
plan_restored(Oid owner, ArrayType *settings, const char *query, int window_output)
{
	RestoredPlan rp = {owner, settings, query, window_output, NULL};
	ErrorData  *edata = subxact_run(plan_restored_call, &rp);

	if (edata == NULL)
		return rp.plan;
	if (edata->sqlerrcode != ERRCODE_INSUFFICIENT_PRIVILEGE)
		ReThrowError(edata);
	FreeErrorData(edata);
	return plan_restored_as(GetUserId(), settings, query, window_output);
}

Datum
flowpg_catalog_restore_fixup(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;
	HeapTuple	tuple;
	TupleDesc	desc;
	bool		isnull;
	bool		no_window;
	bool		no_deps_view;
	Datum		deps_view;
	Oid			owner;
	FlowPlan   *plan;
	Datum		window_output;
	char	   *query;
	int			columns[7];
	Datum		values[7];
	bool		nulls[7];

	if (!CALLED_AS_TRIGGER(fcinfo) || !TRIGGER_FIRED_BEFORE(trigdata->tg_event) ||
		!TRIGGER_FIRED_FOR_ROW(trigdata->tg_event) ||
		!TRIGGER_FIRED_BY_INSERT(trigdata->tg_event) ||
		RelationGetRelid(trigdata->tg_relation) != catalog_relid())
		elog(ERROR, "flowpg_catalog_restore_fixup must be a BEFORE INSERT row trigger on flowpg.flow");
	tuple = trigdata->tg_trigtuple;
	if (catalog_own_insert())
		return PointerGetDatum(tuple);
	desc = RelationGetDescr(trigdata->tg_relation);

	/* its worker, when this commits: it finishes the restore */
	pool_request(MyDatabaseId);

	/* pg_dump restores the dependency view but not its dependency on the sink */
	deps_view = heap_getattr(tuple, SPI_fnumber(desc, "deps_view"), desc, &no_deps_view);
	if (!no_deps_view)
		(void) deps_record_sink(DatumGetObjectId(deps_view),
								DatumGetObjectId(heap_getattr(tuple, SPI_fnumber(desc, "sink_table"),
															  desc, &isnull)));

	owner = DatumGetObjectId(heap_getattr(tuple, SPI_fnumber(desc, "owner"), desc, &isnull));
	window_output = heap_getattr(tuple, SPI_fnumber(desc, "window_output"), desc, &no_window);
	query = TextDatumGetCString(heap_getattr(tuple, SPI_fnumber(desc, "query"), desc, &isnull));
	plan = plan_restored(owner,
						 DatumGetArrayTypePCopy(heap_getattr(tuple, SPI_fnumber(desc, "settings"),
															 desc, &isnull)),
						 query, no_window ? -1 : DatumGetInt16(window_output));

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
	columns[4] = SPI_fnumber(desc, "planned_in");
	values[4] = CStringGetTextDatum(catalog_planned_in());
	nulls[4] = false;
	columns[5] = SPI_fnumber(desc, "state");
	values[5] = CStringGetTextDatum("restoring");
	nulls[5] = false;
	columns[6] = SPI_fnumber(desc, "state_reason");
	values[6] = CStringGetTextDatum(psprintf(RESTORING_REASON, "its tables"));
	nulls[6] = false;
	return PointerGetDatum(heap_modify_tuple_by_cols(tuple, desc, 7, columns, values, nulls));
}

/* What of the flow is not restored yet; NULL when everything is. */
static char *
restore_missing(FlowEntry *entry)
{
	ListCell   *lc;
	FlowPlan   *plan;
	FlowIdentity identity;
	bool		readable;
	char	   *untrusted;
	AclMode		sink_rights = ACL_SELECT | ACL_INSERT | ACL_UPDATE | ACL_DELETE;

	plan = flow_plan_for_entry(entry);
	foreach(lc, entry->source_relids)
	{
		Oid			source = lfirst_oid(lc);
		List	   *captured = list_make1_oid(source);
		ListCell   *lc2;

		/* the tables whose rows the flow reads: FROM ONLY reads no child's */
		if (flow_plan_reads_descendants(plan->query, source))
			captured = find_all_inheritors(source, NoLock, NULL);
		foreach(lc2, captured)
			if (!capture_triggers_complete(lfirst_oid(lc2)))
				return psprintf("the capture triggers of table %s",
								get_rel_name(lfirst_oid(lc2)));
	}
	if (!sink_has_guard(entry->sink_relid))
		return psprintf("the triggers of sink table %s", get_rel_name(entry->sink_relid));
	if (!sink_has_key_index(entry->sink_relid, plan, InvalidOid))
		return psprintf("the unique index of sink table %s", get_rel_name(entry->sink_relid));

	/* the restored objects are not the ones its owner vetted: trust.c's rule */
	untrusted = trust_untrusted_in_query(plan->query, entry->owner);
	if (untrusted == NULL)
		untrusted = trust_untrusted_relation(entry->sink_relid, entry->owner, "sink table");
	if (untrusted == NULL)
		untrusted = sink_untrusted_code(entry->sink_relid, plan, entry->owner, true);
	if (untrusted)
		return psprintf("objects whose owners can act as role %s (%s), or once its owner re-creates it with or_replace, vetting them",
						GetUserNameFromId(entry->owner, false), untrusted);

	flow_enter(&identity, entry->owner, NULL, false);
	readable = flow_plan_owner_can_read(plan);
	flow_leave(&identity);
	if (!readable)
		return psprintf("the privileges of role %s on the flow's sources",
						GetUserNameFromId(entry->owner, false));
	if (pg_class_aclmask(entry->sink_relid, entry->owner, sink_rights, ACLMASK_ALL) != sink_rights)
		return psprintf("the privileges of role %s on sink table %s",
						GetUserNameFromId(entry->owner, false), get_rel_name(entry->sink_relid));
	return NULL;
}

bool
restore_finish(FlowEntry *entry, bool error_if_not)
{
	char	   *missing = restore_missing(entry);
	char	   *reason;

	if (missing == NULL)
	{
		catalog_set_state(entry->flow_id, "active", NULL);
		dirty_log_append(entry->flow_id, true, 0, 0, 0);
		entry->state = "active";
		return true;
	}
	reason = psprintf(RESTORING_REASON, missing);
	if (error_if_not)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("flow \"%s\" is being restored", entry->flow_name),
				 errdetail("It is %s.", reason),
				 errhint("Let pg_restore finish (its post-data section creates what is missing).")));
	if (entry->state_reason == NULL || strcmp(entry->state_reason, reason) != 0)
		catalog_set_state(entry->flow_id, "restoring", reason);
	return false;
}
