/*-------------------------------------------------------------------------
 *
 * flow_drop.h
 *	  Dropping flows.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLOWPG_FLOW_DROP_H
#define FLOWPG_FLOW_DROP_H

#include "catalog.h"

/* Drops the flow of that stored name; false when none and if_exists. */
extern bool flow_drop(const char *flow_name, bool if_exists);

/* Removes a flow: catalog row, dirty log, counters, views, triggers, guard. */
extern void flow_remove(FlowEntry *entry);

/*
 * The flow's lock, for a change that makes a run in progress moot: a worker
 * running the flow abandons its run (a user's refresh_flow is waited for).
 */
extern void flow_lock_preempting(int64 flow_id);

#endif							/* FLOWPG_FLOW_DROP_H */
