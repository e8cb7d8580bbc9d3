/*-------------------------------------------------------------------------
 *
 * greptime.h
 *	  GreptimeDB's flow statements (flowpg.execute): what other components
 *	  call of them -- the start of a pending flow, by a worker.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLOWPG_GREPTIME_H
#define FLOWPG_GREPTIME_H

/*
 * In a flowpg worker's transaction: runs a pending flow's CREATE FLOW again,
 * as its owner.  True when it started; *retry when it could not be tried now.
 */
extern bool greptime_start_pending_flow(const char *flow_name, bool *retry);

#endif							/* FLOWPG_GREPTIME_H */
