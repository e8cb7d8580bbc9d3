/*-------------------------------------------------------------------------
 *
 * pause.c
 *	  flowpg.pause_flow and flowpg.resume_flow.
 *
 * A paused flow (flowpg.flow.paused) keeps capturing: batching writers log
 * their windows dirty as always, and streaming writers log theirs dirty
 * instead of shipping partials (registry_set_paused), so nothing grows in
 * shared memory while it is paused.  Nothing writes its sink: the worker
 * neither schedules it (catalog_schedule) nor runs its rounds (stream_round.c
 * checks the catalog under the flow's lock), and flush_flow and
 * refresh_flow refuse (catalog_refuse_if_paused).  Resuming is exact because nothing was lost: the
 * dirty log and any batches queued before the pause are what the next run
 * applies, as after a fallback.  The flag is a catalog column, so it
 * survives a restart and a dump and restore.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "miscadmin.h"
#include "utils/builtins.h"

#include "refresh.h"
#include "catalog.h"
#include "flow_names.h"
#include "flow_locks.h"
#include "pool.h"
#include "registry.h"
#include "stats.h"

PG_FUNCTION_INFO_V1(flowpg_pause_flow);
PG_FUNCTION_INFO_V1(flowpg_resume_flow);

static void
set_paused(const char *flow_name, bool paused)
{
	FlowEntry  *entry = flow_owned_by_caller(flow_name);

	if (entry->paused == paused)
	{
		ereport(NOTICE,
				(errmsg("flow \"%s\" is %s", entry->flow_name,
						paused ? "already paused" : "not paused")));
		return;
	}
	/* a run in progress ends first: none writes the sink after this commits */
	flow_lock(entry->flow_id);
	catalog_set_paused(entry->flow_id, paused);
	if (flow_on_streams(entry))
		registry_set_paused(entry->flow_id, paused);
	if (!paused)
	{
		/* catch up now, not at the schedule's next look */
		stats_set_next_run(entry->flow_id, GetCurrentTimestamp());
		pool_request(MyDatabaseId);
	}
}

Datum
flowpg_pause_flow(PG_FUNCTION_ARGS)
{
	set_paused(flow_required_text_arg(fcinfo, 0, "flow_name"), true);
	PG_RETURN_VOID();
}

Datum
flowpg_resume_flow(PG_FUNCTION_ARGS)
{
	set_paused(flow_required_text_arg(fcinfo, 0, "flow_name"), false);
	PG_RETURN_VOID();
}
