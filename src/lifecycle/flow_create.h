/*-------------------------------------------------------------------------
 *
 * flow_create.h
 *	  Creating and replacing flows, for create_flow and for the GreptimeDB
 *	  front end (greptime.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLOWPG_FLOW_CREATE_H
#define FLOWPG_FLOW_CREATE_H

#include "utils/array.h"
#include "utils/timestamp.h"

#include "catalog.h"

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
extern void flow_set_comment(const char *flow_name, const char *comment);

/*
 * flowpg.max_flows and flowpg.max_flows_per_role, counted against a new
 * flow of the current user (pending flows included); an error when over.
 */
extern void flow_check_limits(void);

#endif							/* FLOWPG_FLOW_CREATE_H */
