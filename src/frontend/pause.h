/*-------------------------------------------------------------------------
 *
 * pause.h
 *	  Pausing and resuming flows (flowpg.pause_flow, flowpg.resume_flow).
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLOWPG_PAUSE_H
#define FLOWPG_PAUSE_H

#include "catalog.h"

/* Errors out when the flow is paused: action (flush_flow, say) would write its sink. */
extern void pause_refuse_if_paused(FlowEntry *entry, const char *action);

/* The hint of those errors: resume_flow, with the flow's name as it must be written. */
extern int	pause_errhint_resume(const char *flow_name);

#endif							/* FLOWPG_PAUSE_H */
