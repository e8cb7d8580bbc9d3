/*-------------------------------------------------------------------------
 *
 * ddl_suspend.c
 *	  GreptimeDB's flows outlive a dropped source or sink: DROP TABLE turns
 *	  them into pending flows, which start again when they can.
 *
 * GreptimeDB accepts DROP TABLE of a flow's source or sink while the flow
 * lives.  A flow made through flowpg.execute does the same here: before
 * the DROP runs (ddl_before_utility), the flow is removed -- its capture
 * triggers, its dependency view (so the DROP meets no dependency), its
 * state -- and kept as a pending flow (pending.c) with its CREATE FLOW
 * statement, owner and pinned settings.  flowpg.flows shows it pending,
 * with the reason.
 *
 * - A dropped source: the flow starts again when a table of that name is
 *   created (the event trigger of pending_flow.c), planned anew over it:
 *   a table of another shape is refused, and the reason stays in the
 *   views.  It starts with a backfill, which replaces what the sink held.
 * - A dropped sink: a worker starts the flow as soon as the DROP commits,
 *   which creates the sink again and backfills it.
 *
 * Meanwhile nothing is written: the sink keeps what it held (a dropped
 * source), or is gone (a dropped sink).  The DROP's transaction carries it
 * all: rolled back, the flow is as it was.  Flows made with create_flow
 * keep PostgreSQL's rule: their tables cannot be dropped while they live.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"

#include "catalog.h"
#include "ddl_suspend.h"
#include "flow_drop.h"
#include "flow_locks.h"
#include "pending.h"
#include "pool.h"
#include "privileged.h"
#include "sink_columns.h"

/* Was the flow made through flowpg.execute (GreptimeDB's statements)? */
static bool
is_greptime_flow(FlowEntry *entry)
{
	return entry->options && strstr(entry->options, "\"written_query\"") != NULL;
}

/* The flow's CREATE FLOW statement, as SHOW CREATE FLOW gives it. */
static char *
flow_statement(FlowEntry *entry)
{
	Oid			types[1] = {INT8OID};
	Datum		values[1] = {Int64GetDatum(entry->flow_id)};
	char	   *statement = NULL;

	privileged_query("SELECT flow_definition FROM flowpg.flows WHERE flow_id = $1",
					 1, types, values, NULL);
	if (SPI_processed == 1)
		statement = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
	if (statement)
		statement = MemoryContextStrdup(TopTransactionContext, statement);
	privileged_query_end();
	if (statement == NULL)
		elog(ERROR, "flow \"%s\" has no definition", entry->flow_name);
	return statement;
}

static void
suspend_flow(FlowEntry *entry, Oid dropped)
{
	bool		sink = dropped == entry->sink_relid;
	char	   *table = sink_qualified_relation_name(dropped);
	PendingFlow pending = {0};

	flow_lock_name(entry->flow_name);
	flow_lock(entry->flow_id);
	pending.flow_name = entry->flow_name;
	pending.owner = entry->owner;
	pending.statement = flow_statement(entry);
	pending.settings = entry->settings;
	pending.sink_name = sink_qualified_relation_name(entry->sink_relid);
	pending.comment = entry->comment;
	pending.options = entry->options;
	pending.expire_after = entry->expire_after;
	flow_remove(entry);
	pending_add(&pending, sink ?
				psprintf("its sink %s, dropped: a worker creates it again", table) :
				psprintf("its source %s, dropped: it starts again when the table is created", table));
	ereport(NOTICE,
			(errmsg("flow \"%s\" is pending: its %s %s is dropped", entry->flow_name,
					sink ? "sink" : "source", table),
			 sink ?
			 errdetail("A flowpg worker creates the sink again once this transaction commits, and computes it.") :
			 errdetail("The flow starts again, computing its sink anew, when a table of that name and shape is created.")));
	if (sink)
		pool_check_pending_at_commit();
}

void
ddl_suspend_flows(Oid relid)
{
	ListCell   *lc;

	foreach(lc, catalog_get_by_relation(relid))
	{
		FlowEntry  *entry = lfirst(lc);

		if (is_greptime_flow(entry) && strcmp(entry->state, "restoring") != 0)
			suspend_flow(entry, relid);
	}
}
