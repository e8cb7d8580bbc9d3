/*-------------------------------------------------------------------------
 *
 * stream_publish.c
 *	  The round's last stage: what it did, for others to see.  Its counters
 *	  go to the flow's registry slot (flow_stats, flush_flow's answer), and
 *	  once a second the rounds since the last record go to flowpg.flow_run
 *	  (stats.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "miscadmin.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "flow_locks.h"
#include "stats.h"
#include "stream_flow.h"
#include "stream_state.h"

#define STATS_RECORD_USECS (1000 * 1000)

/* After a round: counters for flow_stats and flush_flow. */
void
stream_publish(StreamFlow *flow, int64 flush_done, bool failed, TimestampTz committed)
{
	FlowShared *sh = flow->sh ? flow->sh : stream_state_shared(flow->flow_id, false);

	if (sh == NULL)
	{
		if (flush_done)
		{
			StreamStats none = {0};

			none.freshness_us = -1;
			registry_publish(flow->flow_id, &none, flush_done, failed);
		}
		return;
	}
	if (sh->oldest_unflushed != 0 && !failed &&
		!(DsaPointerIsValid(sh->store) && store_has_changed_at(sh->store)) &&
		flow->append_rows == NULL)
	{
		sh->stats.freshness_us = committed - sh->oldest_unflushed;
		sh->stats.last_flush_at = committed;
		sh->oldest_unflushed = 0;
	}
	/* a flush_flow answered with nothing left to write: up to date then too */
	else if (flush_done && !failed && sh->oldest_unflushed == 0)
		sh->stats.last_flush_at = committed;
	sh->stats.oldest_unwritten = sh->oldest_unflushed;
	store_counters_at(sh->store, &sh->stats.state_groups, &sh->stats.state_bytes);
	sh->stats.refills = sh->refills;
	sh->stats.repairs = sh->repairs;
	sh->stats.last_worker = MyProcPid;
	sh->stats.unrecorded_runs = sh->unrecorded_runs;
	sh->stats.unrecorded_rows_in = sh->unrecorded.rows_in;
	sh->stats.unrecorded_rows_out = (int64) sh->unrecorded.rows_out;
	sh->stats.last_round_at = sh->last_round_at;
	sh->stats.last_round_us = sh->last_round_us;
	sh->stats.retry_at = sh->failures > 0 ? sh->retry_at : 0;
	sh->stats.degraded = sh->degraded || sh->has_watermark;
	sh->stats.degraded_whole = sh->degraded;
	sh->stats.degrades = sh->degrades_total;
	sh->stats.evictions = sh->evictions;
	registry_publish(flow->flow_id, &sh->stats, flush_done, failed);
}

void
stream_record_rounds(StreamFlow *flow, TimestampTz now, bool force)
{
	FlowShared *sh = flow->sh;

	if (sh == NULL || sh->unrecorded_runs == 0)
		return;
	if (sh->unrecorded_since == 0)
		sh->unrecorded_since = now;
	if (!force && now - sh->unrecorded_since < STATS_RECORD_USECS)
		return;
	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	if (!flow_locks_try_tables(RowExclusiveLock))
	{
		/* recorded next time */
		PopActiveSnapshot();
		CommitTransactionCommand();
		return;
	}
	stats_record_rounds(flow->flow_id, &sh->unrecorded, sh->unrecorded_runs,
						sh->last_round_at - sh->last_round_us, sh->last_round_at);
	PopActiveSnapshot();
	CommitTransactionCommand();
	memset(&sh->unrecorded, 0, sizeof(RunResult));
	sh->unrecorded_runs = 0;
	sh->unrecorded_since = now;
}
