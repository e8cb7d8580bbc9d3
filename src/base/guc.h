/*-------------------------------------------------------------------------
 *
 * guc.h
 *	  flowpg's settings (GUCs), see guc.c.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLOWPG_GUC_H
#define FLOWPG_GUC_H

extern bool flowpg_enabled;
extern int	flowpg_max_flows;
extern int	flowpg_max_flows_per_role;
extern int	flowpg_max_streaming_flows_per_role;
extern int	flowpg_state_memory_kb;
extern int	flowpg_queue_memory_kb;
extern int	flowpg_flush_interval_ms;
extern int	flowpg_max_sink_lag_ms;
extern int	flowpg_state_keep_s;
extern int	flowpg_min_refresh_interval_ms;
extern int	flowpg_query_timeout_ms;
extern int	flowpg_slow_query_threshold_ms;
extern int	flowpg_workers_per_database;
extern bool flowpg_inline_aggregates;
extern bool flowpg_batching_partial_states;
extern bool flowpg_execute_backfill;

extern void guc_define(void);

#endif							/* FLOWPG_GUC_H */
