/*-------------------------------------------------------------------------
 *
 * sink_sharing.h
 *	  Several flows writing one sink, each its own columns on a shared key.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLOWPG_SINK_SHARING_H
#define FLOWPG_SINK_SHARING_H

#include "planner.h"

/*
 * Refuses a flow into a sink that other flows (not own_flow_id) write,
 * unless all group by the same keys and write disjoint other columns,
 * which are nullable without defaults.
 */
extern void sink_check_sharing(Oid sink_relid, const char *flow_name, FlowPlan *plan,
							   int64 own_flow_id);

/*
 * NULL when at most one flow writes the sink; else the value columns of
 * every flow writing it, quoted and comma-separated: a key's row goes once
 * they are all NULL.
 */
extern char *sink_shared_values(Oid sink_relid, FlowPlan *plan);

/* The columns (String) the flows of the sink other than own_flow_id write. */
extern List *sink_columns_of_other_flows(Oid sink_relid, int64 own_flow_id);

/*
 * GreptimeDB's rule (flowpg.execute): every column of an existing sink is
 * written by the flow, filled by flowpg (update_at, __ts_placeholder) or
 * has a default -- or another flow of the sink writes it, or, nulls_filled
 * (merge_mode = 'last_non_null'), it is nullable.
 */
extern void sink_check_every_column_written(Oid sink_relid, FlowPlan *plan,
											int64 own_flow_id, bool nulls_filled);

#endif							/* FLOWPG_SINK_SHARING_H */
