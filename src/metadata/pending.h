/*-------------------------------------------------------------------------
 *
 * pending.h
 *	  Flows waiting for their source tables (flowpg.pending_flow).
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLOWPG_PENDING_H
#define FLOWPG_PENDING_H

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

extern bool pending_any(void);
extern bool pending_exists(const char *flow_name);
extern PendingFlow *pending_get(const char *flow_name);
extern List *pending_get_all(void);
extern void pending_add(const PendingFlow *flow, const char *missing);
extern void pending_remove(const char *flow_name);
extern void pending_set_error(const char *flow_name, const char *message);

#endif							/* FLOWPG_PENDING_H */
