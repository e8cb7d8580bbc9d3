/*-------------------------------------------------------------------------
 *
 * guc.c
 *	  flowpg's settings (GUCs): their variables and definitions.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <limits.h>

#include "utils/guc.h"

#include "guc.h"

bool		flowpg_enabled = true;
int			flowpg_max_flows = 64;
int			flowpg_max_flows_per_role = 0;
int			flowpg_max_streaming_flows_per_role = 0;
int			flowpg_state_memory_kb = 64 * 1024;
int			flowpg_queue_memory_kb = 16 * 1024;
int			flowpg_flush_interval_ms = 100;
int			flowpg_max_sink_lag_ms = 30 * 1000;
int			flowpg_state_keep_s = 300;
int			flowpg_min_refresh_interval_ms = 5000;
int			flowpg_query_timeout_ms = 10 * 60 * 1000;
int			flowpg_slow_query_threshold_ms = 60 * 1000;
int			flowpg_workers_per_database = 3;
bool		flowpg_inline_aggregates = true;
bool		flowpg_batching_partial_states = true;
bool		flowpg_execute_backfill = true;


/* Called from _PG_init while shared_preload_libraries loads flowpg. */
void
guc_define(void)
{
	DefineCustomBoolVariable("flowpg.enabled",
							 "Runs flows; when off, changes are still captured but nothing is refreshed.",
							 NULL,
							 &flowpg_enabled,
							 true,
							 PGC_SIGHUP,
							 0,
							 NULL, NULL, NULL);

	DefineCustomBoolVariable("flowpg.inline_aggregates",
							 "Computes count, sum, min and max over by-value types, and the transitions of avg and variance of float8 and avg of int2/int4, inline in streaming flows.",
							 "Off calls their functions through fmgr, as for every other aggregate; "
							 "the results are the same.  Read when a process compiles a flow.",
							 &flowpg_inline_aggregates,
							 true,
							 PGC_SUSET,
							 0,
							 NULL, NULL, NULL);

	DefineCustomBoolVariable("flowpg.execute_backfill",
							 "Computes, for a flow flowpg.execute creates without WITH (backfill = ...), the rows its source already holds.",
							 "Off: GreptimeDB's creation semantics -- a new flow computes only the windows "
							 "its source's changes touch after its creation, and CREATE OR REPLACE "
							 "keeps the sink's rows; verify_flow then compares those windows only.",
							 &flowpg_execute_backfill,
							 true,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	DefineCustomBoolVariable("flowpg.batching_partial_states",
							 "Keeps the windows of a batching flow whose query the streaming engine can run as partial states, fed by its table's shared capture.",
							 "Its refresh then writes the groups changed since the last one from "
							 "those states instead of re-reading its windows from the source.  "
							 "Read when a flow is created; off, every refresh recomputes.",
							 &flowpg_batching_partial_states,
							 true,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	DefineCustomIntVariable("flowpg.max_flows",
							"Maximum number of flows in the server.",
							NULL,
							&flowpg_max_flows,
							64, 1, 10000,
							PGC_POSTMASTER,
							0,
							NULL, NULL, NULL);

	DefineCustomIntVariable("flowpg.max_flows_per_role",
							"Maximum number of flows one role may own in a database (0: flowpg.max_flows).",
							NULL,
							&flowpg_max_flows_per_role,
							0, 0, 10000,
							PGC_SUSET,
							0,
							NULL, NULL, NULL);

	DefineCustomIntVariable("flowpg.max_streaming_flows_per_role",
							"Maximum number of streaming flows one role may own in the whole server (0: flowpg.max_flows).",
							"Streaming flows of every database share 4 * flowpg.max_flows slots in shared memory; "
							"superusers' flows are not counted.",
							&flowpg_max_streaming_flows_per_role,
							0, 0, 40000,
							PGC_SIGHUP,
							0,
							NULL, NULL, NULL);

	DefineCustomIntVariable("flowpg.state_memory",
							"Shared memory for the state of streaming flows.",
							NULL,
							&flowpg_state_memory_kb,
							64 * 1024, 1024, INT_MAX / 2,
							PGC_POSTMASTER,
							GUC_UNIT_KB,
							NULL, NULL, NULL);

	DefineCustomIntVariable("flowpg.queue_memory",
							"Shared memory for the input queues of streaming flows.",
							NULL,
							&flowpg_queue_memory_kb,
							16 * 1024, 256, INT_MAX / 2,
							PGC_POSTMASTER,
							GUC_UNIT_KB,
							NULL, NULL, NULL);

	DefineCustomIntVariable("flowpg.flush_interval",
							"Period of the streaming sink writes.",
							NULL,
							&flowpg_flush_interval_ms,
							100, 1, 3600 * 1000,
							PGC_SIGHUP,
							GUC_UNIT_MS,
							NULL, NULL, NULL);

	DefineCustomIntVariable("flowpg.max_sink_lag",
							"Longest a streaming flow's applied changes wait for their sink write.",
							"Sink writes are paced by their cost: the next one waits four times "
							"as long as the last one took, times the number of flows the worker "
							"runs (at least flush_interval), but no "
							"change waits longer than this.  flush_flow writes at once.",
							&flowpg_max_sink_lag_ms,
							30 * 1000, 1, 3600 * 1000,
							PGC_SIGHUP,
							GUC_UNIT_MS,
							NULL, NULL, NULL);

	DefineCustomIntVariable("flowpg.state_keep",
							"How far behind its newest row a streaming flow keeps its windows' partial states.",
							"Windows that end earlier leave the state (the sink keeps their rows); "
							"a change to one recomputes it from the source.  The newest row counts "
							"no later than now().  -1 keeps every window.  Applies to flows whose "
							"time column is NOT NULL or that have expire_after.",
							&flowpg_state_keep_s,
							300, -1, INT_MAX,
							PGC_SIGHUP,
							GUC_UNIT_S,
							NULL, NULL, NULL);

	DefineCustomIntVariable("flowpg.min_refresh_interval",
							"Shortest period between two runs of a batching flow without eval_interval.",
							NULL,
							&flowpg_min_refresh_interval_ms,
							5000, 0, INT_MAX,
							PGC_SIGHUP,
							GUC_UNIT_MS,
							NULL, NULL, NULL);

	DefineCustomIntVariable("flowpg.query_timeout",
							"Statement timeout of one flow run.",
							"0 disables the timeout.",
							&flowpg_query_timeout_ms,
							10 * 60 * 1000, 0, INT_MAX,
							PGC_SIGHUP,
							GUC_UNIT_MS,
							NULL, NULL, NULL);

	DefineCustomIntVariable("flowpg.slow_query_threshold",
							"Flow runs longer than this are logged.",
							"-1 disables the log.",
							&flowpg_slow_query_threshold_ms,
							60 * 1000, -1, INT_MAX,
							PGC_SIGHUP,
							GUC_UNIT_MS,
							NULL, NULL, NULL);

	DefineCustomIntVariable("flowpg.workers_per_database",
							"Most flowpg workers running the flows of one database at once.",
							"One of them is always left to streaming rounds while the others run batching refreshes.",
							&flowpg_workers_per_database,
							3, 1, 16,
							PGC_SIGHUP,
							0,
							NULL, NULL, NULL);

}
