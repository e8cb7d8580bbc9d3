/*-------------------------------------------------------------------------
 *
 * pending_flow.h
 *	  Starting flows waiting for their source tables (pending.h holds them).
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLOWPG_PENDING_FLOW_H
#define FLOWPG_PENDING_FLOW_H

/*
 * In a flowpg worker's transaction: runs a pending flow's CREATE FLOW again,
 * as its owner.  True when it started; *retry when it could not be tried now.
 */
extern bool pending_flow_start(const char *flow_name, bool *retry);

#endif							/* FLOWPG_PENDING_FLOW_H */
