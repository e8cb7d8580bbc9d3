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
extern int	flowpg_min_refresh_interval_ms;
extern int	flowpg_query_timeout_ms;
extern int	flowpg_slow_query_threshold_ms;
extern int	flowpg_workers_per_database;
extern bool flowpg_inline_aggregates;

/* flowpg.streaming_ship: what a writer ships of an aggregate flow's rows */
typedef enum StreamingShip
{
	STREAMING_SHIP_AUTO,		/* rows while they are nearly all groups of their own */
	STREAMING_SHIP_GROUPS,		/* always partial groups */
	STREAMING_SHIP_ROWS			/* rows (past 1,024 of a partial: groups) */
} StreamingShip;

extern int	flowpg_streaming_ship;

extern void guc_define(void);

#endif							/* FLOWPG_GUC_H */
