/*-------------------------------------------------------------------------
 *
 * catalog.h
 *	  The flow catalog (table flowpg.flow): reading and writing flow rows.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLOWPG_CATALOG_H
#define FLOWPG_CATALOG_H

#include "nodes/nodes.h"
#include "storage/lockdefs.h"

#include "access/attnum.h"
#include "nodes/pg_list.h"
#include "utils/array.h"
#include "utils/timestamp.h"

typedef struct FlowEntry
{
	int64		flow_id;
	char	   *flow_name;
	Oid			owner;
	char	   *mode;			/* "streaming" or "batching" */
	bool		is_aggregate;
	List	   *source_relids;
	Oid			sink_relid;
	char	   *query;			/* canonical text */
	char	   *query_tree;		/* nodeToString of the analysed query */
	Oid			time_relid;		/* InvalidOid without a time window */
	AttrNumber	time_attno;
	char	   *window_expr;
	Interval   *expire_after;	/* NULL when not given */
	Interval   *eval_interval;
	char	   *comment;
	ArrayType  *settings;
	char	   *options;		/* jsonb, as text */
	bool		backfilled;		/* options' "backfill": create_flow filled the sink */
	bool		partial_states; /* options': a batching flow the streaming engine keeps */
	TimestampTz computed_from;	/* options': without a backfill, its definition's start; 0 */
	char	   *state;			/* active, failed, restoring */
	char	   *state_reason;
	Oid			deps_view;		/* flowpg_flows.<name>: records dependencies */
	int			window_output;	/* output index of the time window, -1 none */
	bool		paused;			/* pause_flow: nothing writes its sink */
	bool		written_here;	/* created or changed by this transaction */
} FlowEntry;

/*
 * Does the streaming engine keep the flow's state: a streaming flow, or a
 * batching flow with partial states (written at its refresh cadence).
 */
static inline bool
flow_on_streams(const FlowEntry *entry)
{
	return strcmp(entry->mode, "streaming") == 0 || entry->partial_states;
}

/* Does this database have flowpg's catalog (it may be being dropped)? */
extern bool catalog_exists(void);

/*
 * Does the database hold a flow, pending ones included?  Readable whatever
 * the version of flowpg's objects (an active snapshot is needed).
 */
extern bool catalog_has_any_flow(void);

/*
 * The version of the SQL objects this library works with.  A database
 * still at an older one (the library was upgraded, ALTER EXTENSION flowpg
 * UPDATE not run yet) keeps capturing -- the capture triggers and the dirty
 * log are the same -- but its worker waits and flowpg's functions refuse
 * (catalog_require_current_version) until the update.
 */
#ifndef FLOWPG_VERSION
#error "FLOWPG_VERSION comes from flowpg.control (Makefile)"
#endif
extern char *catalog_extension_version(void);
extern bool catalog_version_current(void);
extern bool catalog_version_older(const char *version);
extern void catalog_require_current_version(void);

extern Oid	catalog_relid(void);


/*
 * Where a flow's stored tree was planned ("system identifier:database"): a
 * catalog row restored from elsewhere has another value and is re-planned.
 */
extern char *catalog_planned_in(void);

extern FlowEntry *catalog_get_by_name(const char *flow_name);
extern FlowEntry *catalog_get_by_id(int64 flow_id);
extern FlowEntry *catalog_get_by_deps_view(Oid view_relid);
extern List *catalog_get_all(void);
extern FlowEntry *catalog_get_by_sink(Oid sink_relid);
/* Every flow writing the sink (several share one: sink_sharing.c). */
extern List *catalog_get_all_by_sink(Oid sink_relid);
extern List *catalog_get_by_relation(Oid relid);

extern int64 catalog_insert(FlowEntry *entry);

/*
 * Is catalog_insert running?  Any other insert into flowpg.flow is a
 * restore (pg_restore, psql < dump) of a flow.
 */
extern bool catalog_own_insert(void);

extern void catalog_set_state(int64 flow_id, const char *state, const char *reason);
extern void catalog_update(FlowEntry *entry);
extern void catalog_update_query_text(int64 flow_id, const char *query);
extern void catalog_set_comment(int64 flow_id, const char *comment);
extern void catalog_set_paused(int64 flow_id, bool paused);
extern void catalog_delete(int64 flow_id);

/* Errors out unless the current user owns the flow or is a superuser. */
extern void catalog_check_owner(FlowEntry *entry);

/*
 * Errors out when the flow is paused (pause_flow): action (flush_flow, say)
 * would write its sink.  The hint names resume_flow with the flow's name as
 * it must be written.
 */
extern void catalog_refuse_if_paused(FlowEntry *entry, const char *action);
extern int	catalog_errhint_resume(const char *flow_name);

/* The same for dropping it (a flow or a pending one): the database's owner may too. */
extern void catalog_check_may_drop(Oid owner, const char *flow_name);

/* Every flow with its mode and next due run, for the workers' schedule. */
typedef struct FlowSchedule
{
	int64		flow_id;
	bool		batching;
	bool		restoring;
	bool		backfilling;	/* a batching flow flowpg.flow_backfill has */
	bool		has_next_run;
	TimestampTz next_run_at;
	Interval   *eval_interval;	/* NULL: adaptive */
	bool		uses_now;		/* runs on every tick */
	Oid			owner;			/* for the fair share of workers (pool.c) */
} FlowSchedule;

extern List *catalog_schedule(void);

/* A flow's state after a run: failed with reason, or (NULL) active again. */
extern void catalog_set_run_state(int64 flow_id, const char *reason);

#endif							/* FLOWPG_CATALOG_H */
