/*-------------------------------------------------------------------------
 *
 * ddl_events.h
 *	  Keeping flows consistent with DDL: dependencies and event triggers.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLOWPG_DDL_EVENTS_H
#define FLOWPG_DDL_EVENTS_H

#include "catalog.h"

/*
 * Creates the view flowpg_flows.<flow_name> over the flow's canonical query,
 * which makes PostgreSQL record the flow's dependencies; returns its OID.
 */
extern Oid	deps_create(const char *flow_name, const char *query, ArrayType *settings);

/* Drops a flow's dependency view, if it still exists. */
extern void deps_drop(FlowEntry *entry);

/*
 * Before a utility command runs: refuses what an event trigger could only
 * catch after a commit (DROP INDEX CONCURRENTLY of a sink's key index).
 */
extern void ddl_before_utility(Node *stmt);

/* Removes a flow: catalog row, dirty log, counters, views, triggers, guard. */
extern void ddl_remove_flow(FlowEntry *entry);

#endif							/* FLOWPG_DDL_EVENTS_H */
