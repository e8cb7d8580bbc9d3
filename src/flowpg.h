/*-------------------------------------------------------------------------
 *
 * flowpg.h
 *	  Module-wide settings (GUCs) and the preload check of flowpg.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLOWPG_H
#define FLOWPG_H

/* GUCs, see flowpg.c */
extern bool flowpg_enabled;
extern int	flowpg_max_flows;
extern int	flowpg_max_flows_per_role;
extern int	flowpg_state_memory_kb;
extern int	flowpg_queue_memory_kb;
extern int	flowpg_flush_interval_ms;
extern int	flowpg_min_refresh_interval_ms;
extern int	flowpg_query_timeout_ms;
extern int	flowpg_slow_query_threshold_ms;
extern int	flowpg_workers_per_database;

/* Errors out unless flowpg was loaded through shared_preload_libraries. */
extern void flowpg_require_preload(void);

#endif							/* FLOWPG_H */
