/*-------------------------------------------------------------------------
 *
 * capture.h
 *	  Where rows are captured: statement triggers on source tables that log
 *	  the changed time range of each flow in the dirty log.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLOWPG_CAPTURE_H
#define FLOWPG_CAPTURE_H

/* Installs flowpg's capture triggers on a source table unless present. */
extern void capture_install(Oid relid);

/* Removes them when no flow reads the table any more. */
extern void capture_remove_if_unused(Oid relid);

/* Does a flow read this table, or an ancestor it inherits from? */
extern bool capture_table_has_flows(Oid relid);

/* The ancestors of a table: partitioned tables and inheritance parents. */
extern List *capture_ancestors(Oid relid);

/* Does the table carry flowpg's capture triggers? */
extern bool capture_has_triggers(Oid relid);

/* Removes capture triggers that serve no flow (detached partitions). */
extern void capture_sweep(void);

/* Forgets cached flow lists; called when the catalog changes. */
extern void capture_invalidate_catalog(void);

/* Records that the whole of a flow must be recomputed. */
extern void capture_log_whole_flow(int64 flow_id);

/* Records that the windows of time ordinals lo..hi must be recomputed. */
extern void capture_log_range(int64 flow_id, int64 lo, int64 hi, int64 nrows);

#endif							/* FLOWPG_CAPTURE_H */
