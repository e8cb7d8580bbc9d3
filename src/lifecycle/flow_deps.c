/*-------------------------------------------------------------------------
 *
 * flow_deps.c
 *	  A flow's dependency view: PostgreSQL's own dependency tracking for
 *	  what a flow reads and writes.
 *
 * Each flow has a view flowpg_flows.<flow name> over its canonical query,
 * never read, so that PostgreSQL refuses to drop what the query uses (and
 * drops the view with CASCADE: ddl_events.c then drops the flow).  The
 * view also depends on the sink table, a dependency flowpg records itself
 * (pg_dump does not carry it, so a restore and the update from 0.1 record
 * it again, flowpg._repair_dependencies).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/dependency.h"
#include "catalog/index.h"
#include "catalog/indexing.h"
#include "catalog/namespace.h"
#include "catalog/pg_depend.h"
#include "catalog/partition.h"
#include "catalog/pg_inherits.h"
#include "catalog/objectaddress.h"
#include "catalog/pg_policy.h"
#include "catalog/pg_rewrite.h"
#include "catalog/pg_trigger.h"
#include "catalog/pg_type.h"
#include "commands/event_trigger.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "storage/lock.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "catalog.h"
#include "flow_deps.h"
#include "privileged.h"
#include "settings.h"

PG_FUNCTION_INFO_V1(flowpg_repair_dependencies);

Oid
deps_create(const char *flow_name, const char *query, ArrayType *settings,
			Oid sink_relid)
{
	int			nestlevel = flow_settings_push_canonical(settings);
	Oid			relid;

	/* the canonical text parses the same under the pinned settings */
	privileged_execute(psprintf("CREATE VIEW flowpg_flows.%s AS %s",
										quote_identifier(flow_name), query),
							   0, NULL, NULL, NULL);
	flow_settings_pop(nestlevel);
	relid = get_relname_relid(flow_name, get_namespace_oid("flowpg_flows", false));
	Assert(OidIsValid(relid));
	deps_record_sink(relid, sink_relid);
	return relid;
}

/* Has the view a normal dependency on the table already? */
static bool
view_depends_on(Oid view_relid, Oid table_relid)
{
	Relation	depend = table_open(DependRelationId, AccessShareLock);
	ScanKeyData key[2];
	SysScanDesc scan;
	HeapTuple	tuple;
	bool		found = false;

	ScanKeyInit(&key[0], Anum_pg_depend_classid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(RelationRelationId));
	ScanKeyInit(&key[1], Anum_pg_depend_objid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(view_relid));
	scan = systable_beginscan(depend, DependDependerIndexId, true, NULL, 2, key);
	while (!found && HeapTupleIsValid(tuple = systable_getnext(scan)))
	{
		Form_pg_depend dep = (Form_pg_depend) GETSTRUCT(tuple);

		found = dep->refclassid == RelationRelationId && dep->refobjid == table_relid &&
			dep->refobjsubid == 0 && dep->deptype == DEPENDENCY_NORMAL;
	}
	systable_endscan(scan);
	table_close(depend, AccessShareLock);
	return found;
}

bool
deps_record_sink(Oid deps_view, Oid sink_relid)
{
	ObjectAddress view;
	ObjectAddress sink;

	if (view_depends_on(deps_view, sink_relid))
		return false;
	ObjectAddressSet(view, RelationRelationId, deps_view);
	ObjectAddressSet(sink, RelationRelationId, sink_relid);
	recordDependencyOn(&view, &sink, DEPENDENCY_NORMAL);
	return true;
}

/*
 * flowpg._repair_dependencies(): records the sink dependency of every flow
 * that lacks it -- those of 0.1 (the update script runs it), or of a
 * database that pg_upgrade brought over.  Returns how many it recorded.
 */
Datum
flowpg_repair_dependencies(PG_FUNCTION_ARGS)
{
	ListCell   *lc;
	int			recorded = 0;

	foreach(lc, catalog_get_all())
	{
		FlowEntry  *entry = lfirst(lc);

		if (OidIsValid(entry->deps_view) && get_rel_name(entry->deps_view) &&
			get_rel_name(entry->sink_relid) &&
			deps_record_sink(entry->deps_view, entry->sink_relid))
			recorded++;
	}
	PG_RETURN_INT32(recorded);
}

void
deps_drop(FlowEntry *entry)
{
	char	   *name;

	if (!OidIsValid(entry->deps_view) ||
		(name = get_rel_name(entry->deps_view)) == NULL)
		return;
	privileged_execute(psprintf("DROP VIEW IF EXISTS flowpg_flows.%s",
										quote_identifier(name)),
							   0, NULL, NULL, NULL);
}

