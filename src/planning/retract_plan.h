/*-------------------------------------------------------------------------
 *
 * retract_plan.h
 *	  How a streaming flow takes back rows an UPDATE or DELETE removed.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLOWPG_RETRACT_PLAN_H
#define FLOWPG_RETRACT_PLAN_H

#include "access/htup.h"

#include "planner.h"

/*
 * Sets agg->retract (and, for a moving state that differs from the normal
 * one, switches the aggregate's functions to it) from its pg_aggregate row.
 */
extern void flow_plan_retraction(FlowAggregate *agg, HeapTuple tuple);

/* Why the plan's rows cannot be retracted; NULL when they can. */
extern char *flow_plan_retract_refusal(FlowPlan *plan);

#endif							/* FLOWPG_RETRACT_PLAN_H */
