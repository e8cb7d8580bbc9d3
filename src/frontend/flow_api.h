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
	const char *flow_name;		/* as stored (flow_name_parse) */
	const char *sink_name;		/* as written: a table name in text */
	const char *query_text;
	const char *mode_name;		/* auto, streaming, batching */
	Interval   *expire_after;	/* NULL: never */
	Interval   *eval_interval;	/* NULL: adaptive */
	const char *comment;
	bool		or_replace;
	bool		if_not_exists;
	bool		backfill;
	bool		has_backfill_from;	/* with expire_after: the oldest time backfilled */
	TimestampTz backfill_from;
	/* from flowpg.execute: the statement, and the query as written there */
	const struct FlowQuerySource *source;
	const char *written_query;
	const char *greptime_options;	/* JSON object of its WITH options */
	ArrayType  *settings;		/* pinned settings to keep (NULL: this session's) */
	bool		vet_objects;	/* a pending flow starting: trust.c's rule applies */
	/* GreptimeDB's matching of an existing sink's columns, by position where names differ */
	bool		match_by_position;
	/* GreptimeDB's experimental_enable_incremental_read: append-only sources */
	bool		append_only_sources;
	/* GreptimeDB's merge_mode = 'last_non_null': nullable sink columns it does not write are NULL */
	bool		last_non_null;
} FlowDefinition;

typedef enum FlowCreated
{
	FLOW_CREATED,
	FLOW_REPLACED,
	FLOW_KEPT					/* it existed and if_not_exists was given */
} FlowCreated;

/* These take a flow's name as stored (see flow_name_parse). */
extern int64 flow_create(const FlowDefinition *def, FlowCreated *outcome);
extern void flow_check_limits(void);
extern bool flow_drop(const char *flow_name, bool if_exists);
extern int64 flow_flush(const char *flow_name);	/* flow_flush.c */

/*
 * The flow of that stored name, for its owner (or a role that may act for
 * it): waits for a pending flow's start, finishes a restored flow's
 * restore, errors out when there is none or the caller may not act for it.
 */
extern FlowEntry *flow_owned(const char *flow_name);

/* The error for a flow name that names no flow (saying so for a near one). */
extern void flow_does_not_exist(const char *flow_name) pg_attribute_noreturn();
extern void flow_set_comment(const char *flow_name, const char *comment);

/* A text argument of a SQL function: NULL and empty are errors naming it. */
extern char *flow_required_text_arg(FunctionCallInfo fcinfo, int argno, const char *argname);

/*
 * Flow names follow PostgreSQL's rules for identifiers, as table names
 * given as text do (regclass, sink_table): unquoted, a name is folded to
 * lower case; double-quoted, it keeps its case, spaces and other
 * characters.  Every function taking a flow's name from a user goes
 * through flow_name_parse, which returns the name as flowpg.flow stores it
 * (an error naming flow_name when the text is not one name), mostly by way
 * of flow_name_arg or flow_owned_by_caller.  The other functions of this
 * file (flow_drop, flow_flush, ...) and catalog_get_by_name take stored
 * names, which the GreptimeDB front end gets from its own scanner.
 */
extern char *flow_name_parse(const char *written);

/* A flow_name argument of a SQL function: required, then flow_name_parse. */
extern char *flow_name_arg(FunctionCallInfo fcinfo, int argno);

/*
 * A name given as text, by PostgreSQL's rules for names in text (those of
 * regclass): its parts, String nodes, separated by dots; NIL when the text
 * is not such a name.
 */
extern List *flow_written_name_parts(const char *written);

/*
 * The flow of that name as a user wrote it (flow_name_parse), for its
 * owner (or a role that may act for it): waits for a pending flow's start,
 * finishes a restored flow's restore, errors out when there is none or the
 * caller may not act for it.
 */
extern FlowEntry *flow_owned_by_caller(const char *written_name);

#endif							/* FLOWPG_FLOW_API_H */
