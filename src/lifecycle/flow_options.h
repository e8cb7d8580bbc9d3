/*-------------------------------------------------------------------------
 *
 * flow_options.h
 *	  What create_flow records of a flow beyond its query, see flow_options.c.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLOWPG_FLOW_OPTIONS_H
#define FLOWPG_FLOW_OPTIONS_H

#include "catalog.h"
#include "flow_create.h"
#include "planner.h"

/* Why mode => 'auto' chose the engine; NULL when a mode was asked for. */
extern const char *flow_mode_reason(FlowPlan *plan, FlowMode requested,
									Interval *eval_interval);

/* The flow's options (jsonb text) for its catalog row. */
extern char *flow_options(const FlowDefinition *def, FlowPlan *plan, FlowEntry *entry,
						  const char *mode_reason, const char *positional);

#endif							/* FLOWPG_FLOW_OPTIONS_H */
