/*-------------------------------------------------------------------------
 *
 * flow_drop.c
 *	  Dropping a flow: by drop_flow, DROP FLOW, or because something it
 *	  needs went (ddl_events.c, ddl_suspend.c).
 *
 * What a flow holds goes with it in the dropping transaction: its catalog
 * row, dirty log entries, counters, dependency view, the capture triggers
 * no other flow needs, and its sink's guard.  The sink table stays.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "nodes/pg_list.h"

#include "backfill.h"
#include "capture.h"
#include "catalog.h"
#include "dirty_log.h"
#include "flow_deps.h"
#include "flow_drop.h"
#include "flow_locks.h"
#include "flow_names.h"
#include "pool.h"
#include "sink.h"
#include "stats.h"

/*
 * The flow's lock, for a change that makes a run in progress moot: a
 * worker running the flow abandons its run (a user's refresh_flow is
 * waited for).
 */
void
flow_lock_preempting(int64 flow_id)
{
	if (flow_try_lock(flow_id))
		return;
	(void) pool_preempt(flow_id);
	flow_lock(flow_id);
}


/* Drops the flow; false when it did not exist and if_exists was given. */
bool
flow_drop(const char *flow_name, bool if_exists)
{
	FlowEntry  *entry;

	catalog_require_current_version();
	flow_lock_name(flow_name);
	entry = catalog_get_by_name(flow_name);
	if (entry == NULL)
	{
		if (!if_exists)
			flow_does_not_exist(flow_name);
		ereport(NOTICE,
				(errmsg("flow \"%s\" does not exist, skipping", flow_name)));
		return false;
	}
	catalog_check_may_drop(entry->owner, entry->flow_name);
	flow_lock_preempting(entry->flow_id);	/* waits for a refresh in progress */
	flow_remove(entry);
	return true;
}

void
flow_remove(FlowEntry *entry)
{
	ListCell   *lc;

	catalog_delete(entry->flow_id);
	dirty_log_forget(entry->flow_id);
	stats_forget(entry->flow_id);
	backfill_forget(entry->flow_id);
	deps_drop(entry);
	foreach(lc, entry->source_relids)
		capture_remove_if_unused(lfirst_oid(lc));
	sink_remove_guard(entry->sink_relid);
}

