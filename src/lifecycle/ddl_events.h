/*-------------------------------------------------------------------------
 *
 * ddl_events.h
 *	  Keeping flows consistent with DDL: the event triggers and utility checks.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLOWPG_DDL_EVENTS_H
#define FLOWPG_DDL_EVENTS_H

#include "catalog.h"


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


#endif							/* FLOWPG_DDL_EVENTS_H */
