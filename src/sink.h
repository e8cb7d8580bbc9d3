/*-------------------------------------------------------------------------
 *
 * sink.h
 *	  Sink tables: created for a flow, or checked against its output.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLOWPG_SINK_H
#define FLOWPG_SINK_H

#include "planner.h"

/*
 * Resolves the sink table named by sink_name, creating it (as the current
 * user) when missing, and checks that the flow can write it.  own_flow_id
 * is the flow being replaced, which may keep its sink.  *created tells
 * whether the table was created.
 */
extern Oid	sink_prepare(const char *sink_name, const char *flow_name,
						 FlowPlan *plan, int64 own_flow_id, bool *created);

/* Checks an existing sink against the flow's output columns. */
extern void sink_check_columns(Oid sink_relid, FlowPlan *plan);

#endif							/* FLOWPG_SINK_H */
