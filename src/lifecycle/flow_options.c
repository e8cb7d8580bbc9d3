/*-------------------------------------------------------------------------
 *
 * flow_options.c
 *	  What create_flow records of a flow beyond its query
 *	  (flowpg.flow.options): the mode asked for and why 'auto' chose the
 *	  engine, the backfill, whether the streaming engine keeps a batching
 *	  flow's partial states, and what flowpg.execute was given.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "lib/stringinfo.h"
#include "utils/json.h"
#include "utils/timestamp.h"

#include "catalog.h"
#include "flow_create.h"
#include "flow_options.h"
#include "planner.h"

/*
 * Why mode => 'auto' chose the engine (flowpg.flows.mode_reason); NULL when
 * the mode was asked for.  Batching is said at creation too: its sink is
 * refreshed every flowpg.min_refresh_interval, not within a fraction of a
 * second, and nothing else would tell the user.
 */
const char *
flow_mode_reason(FlowPlan *plan, FlowMode requested, Interval *eval_interval)
{
	const char *reason;

	if (requested != FLOW_MODE_AUTO)
		return NULL;
	if (plan->streaming_refusal == NULL && eval_interval == NULL)
		return "the query fits the streaming engine";
	if (plan->streaming_refusal == NULL)
		return "eval_interval is given, and only batching flows run on ticks";
	reason = plan->streaming_refusal;
	/* eval_interval asks for a batching flow already: no news */
	if (eval_interval)
		return reason;
	ereport(NOTICE,
			(errmsg("the flow runs in batching mode: %s", reason),
			 errdetail("A batching flow's sink is recomputed every flowpg.min_refresh_interval; a streaming flow's within a fraction of a second."),
			 errhint("flowpg.flows.mode_reason keeps this; give mode => 'batching' to choose it without this notice.")));
	return reason;
}

/*
 * flowpg.flow.options: the requested mode and backfill; for a flow from
 * flowpg.execute also its WITH options and its query as written, which its
 * flow_definition shows for as long as the canonical query is the one it
 * was created with (a rename changes that).
 */
char *
flow_options(const FlowDefinition *def, FlowPlan *plan, FlowEntry *entry,
			 const char *mode_reason, const char *positional)
{
	StringInfoData buf;

	initStringInfo(&buf);
	appendStringInfo(&buf, "{\"requested_mode\": \"%s\", \"backfill\": %s",
					 def->mode_name, def->backfill ? "true" : "false");
	if (mode_reason)
	{
		appendStringInfoString(&buf, ", \"mode_reason\": ");
		escape_json(&buf, mode_reason);
	}
	/* the worker runs it on every tick, changes or not */
	if (plan->uses_now)
		appendStringInfoString(&buf, ", \"uses_now\": true");
	/* each tick adds its groups (refresh.c) */
	if (plan->recording_rule)
		appendStringInfoString(&buf, ", \"recording_rule\": true");
	if (entry->partial_states)
		appendStringInfoString(&buf, ", \"partial_states\": true");
	/*
	 * GreptimeDB's creation semantics (flowpg.execute without a backfill):
	 * the windows written from now on are the flow's (verify.c), and a
	 * replaced flow keeps the sink's rows (flow_create.c).
	 */
	if (!def->backfill && def->written_query)
		appendStringInfo(&buf, ", \"computed_from\": " INT64_FORMAT,
						 (int64) GetCurrentTimestamp());	/* after any run of the old one */
	if (def->written_query)
	{
		appendStringInfoString(&buf, ", \"written_query\": ");
		escape_json(&buf, def->written_query);
		appendStringInfoString(&buf, ", \"canonical_query\": ");
		escape_json(&buf, entry->query);
	}
	if (def->greptime_options)
		appendStringInfo(&buf, ", \"with\": %s", def->greptime_options);
	/* outputs matched to sink columns by position (flowpg.execute), renamed */
	if (positional)
	{
		appendStringInfoString(&buf, ", \"sink_columns_by_position\": ");
		escape_json(&buf, positional);
	}
	appendStringInfoChar(&buf, '}');
	return buf.data;
}
