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
 * which makes PostgreSQL record the flow's dependencies, and makes it
 * depend on the sink (deps_record_sink); returns its OID.
 */
extern Oid	deps_create(const char *flow_name, const char *query, ArrayType *settings,
						Oid sink_relid);

/*
 * Records that the flow's dependency view depends on its sink table, so
 * that DROP TABLE of the sink is refused without CASCADE; false when it was
 * recorded already.
 */
extern bool deps_record_sink(Oid deps_view, Oid sink_relid);

/* Drops a flow's dependency view, if it still exists. */
extern void deps_drop(FlowEntry *entry);

/*
 * Before a utility command runs: refuses what an event trigger could only
 * catch after a commit (DROP INDEX CONCURRENTLY of a sink's key index).
 */
extern void ddl_before_utility(Node *stmt);

/*
 * For a DROP TABLE of sinks or DROP SCHEMA of their schemas, without
 * CASCADE: the error context lines saying which flows write them and how to
 * drop those (NIL for any other statement), for ddl_drop_context_callback,
 * an ErrorContextCallback to push while the statement runs.
 */
extern List *ddl_drop_context(Node *stmt);
extern void ddl_drop_context_callback(void *arg);

/* Removes a flow: catalog row, dirty log, counters, views, triggers, guard. */
extern void ddl_remove_flow(FlowEntry *entry);

/* ddl_suspend.c: a table about to be dropped; GreptimeDB's flows over it become pending. */
extern void ddl_suspend_flows(Oid relid);

#endif							/* FLOWPG_DDL_EVENTS_H */
