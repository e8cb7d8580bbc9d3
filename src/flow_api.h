/*-------------------------------------------------------------------------
 *
 * flow_api.h
 *	  Creating, dropping and flushing flows, for the SQL functions and for
 *	  the GreptimeDB front end (greptime.c), which both call these.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLOWPG_FLOW_API_H
#define FLOWPG_FLOW_API_H

#include "fmgr.h"
#include "utils/array.h"

#include "catalog.h"
#include "utils/timestamp.h"

/* What create_flow is asked to do: its arguments. */
typedef struct FlowDefinition
{
	const char *flow_name;
	const char *sink_name;
	const char *query_text;
	const char *mode_name;		/* auto, streaming, batching */
	Interval   *expire_after;	/* NULL: never */
	Interval   *eval_interval;	/* NULL: adaptive */
	const char *comment;
	bool		or_replace;
	bool		if_not_exists;
	bool		backfill;
	/* from flowpg.execute: the statement, and the query as written there */
	const struct FlowQuerySource *source;
	const char *written_query;
	const char *greptime_options;	/* JSON object of its WITH options */
	ArrayType  *settings;		/* pinned settings to keep (NULL: this session's) */
	bool		vet_objects;	/* a pending flow starting: trust.c's rule applies */
} FlowDefinition;

typedef enum FlowCreated
{
	FLOW_CREATED,
	FLOW_REPLACED,
	FLOW_KEPT					/* it existed and if_not_exists was given */
} FlowCreated;

extern int64 flow_create(const FlowDefinition *def, FlowCreated *outcome);
extern void flow_check_limits(void);
extern bool flow_drop(const char *flow_name, bool if_exists);
extern int64 flow_flush(const char *flow_name);
extern void flow_set_comment(const char *flow_name, const char *comment);

/* A text argument of a SQL function: NULL and empty are errors naming it. */
extern char *flow_required_text_arg(FunctionCallInfo fcinfo, int argno, const char *argname);

/*
 * The flow of that name, for its owner (or a role that may act for it):
 * waits for a pending flow's start, finishes a restored flow's restore,
 * errors out when there is none or the caller may not act for it.
 */
extern FlowEntry *flow_owned_by_caller(const char *flow_name);

#endif							/* FLOWPG_FLOW_API_H */
