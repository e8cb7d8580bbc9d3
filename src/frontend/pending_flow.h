/*-------------------------------------------------------------------------
 *
 * pending_flow.h
 *	  Flows waiting for their source tables (flowpg.pending_flow).
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLOWPG_PENDING_FLOW_H
#define FLOWPG_PENDING_FLOW_H

#include "utils/array.h"
#include "datatype/timestamp.h"

/* The longest CREATE FLOW statement a pending flow keeps, in bytes. */
#define PENDING_STATEMENT_MAX (64 * 1024)

typedef struct PendingFlow
{
	char	   *flow_name;
	Oid			owner;
	char	   *statement;		/* the CREATE FLOW statement, run again later */
	ArrayType  *settings;		/* the creator's settings, pinned as a flow's */
	char	   *sink_name;		/* as the statement names it, for the views */
	char	   *comment;
	char	   *options;		/* its WITH options (JSON), for the views */
	Interval   *expire_after;
	char	   *last_error;		/* why the last attempt to start failed */
} PendingFlow;

extern bool pending_flow_any(void);
extern bool pending_flow_exists(const char *flow_name);
extern PendingFlow *pending_flow_get(const char *flow_name);
extern List *pending_flow_get_all(void);
extern void pending_flow_add(const PendingFlow *flow, const char *missing);
extern void pending_flow_remove(const char *flow_name);
extern void pending_flow_set_error(const char *flow_name, const char *message);

/*
 * In a flowpg worker's transaction: runs a pending flow's CREATE FLOW again,
 * as its owner.  True when it started; *retry when it could not be tried now.
 */
extern bool pending_flow_start(const char *flow_name, bool *retry);

#endif							/* FLOWPG_PENDING_FLOW_H */
