/*-------------------------------------------------------------------------
 *
 * flow_create.c
 *	  Creating and replacing a flow, and COMMENT ON FLOW.
 *
 * flow_create runs every check before it writes anything, and everything it
 * writes (sink table, index, catalog row, dependency view, capture triggers)
 * belongs to the calling transaction, so a failed call leaves nothing
 * behind.  Flow DDL is serialized by a lock on the flow's name, so two
 * sessions creating the same name see each other: the second waits, then
 * finds the first one's flow.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/pg_index.h"
#include "catalog/namespace.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_type.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "parser/analyze.h"
#include "parser/parser.h"
#include "parser/scansup.h"
#include "optimizer/optimizer.h"
#include "commands/dbcommands.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/date.h"
#include "utils/json.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"
#include "utils/varlena.h"
#include "utils/wait_event.h"

#include "access/xact.h"
#include "storage/lmgr.h"

#include "backfill.h"
#include "refresh.h"
#include "capture.h"
#include "dirty_log.h"
#include "catalog.h"
#include "flow_locks.h"
#include "registry.h"
#include "restore.h"
#include "flow_create.h"
#include "flow_deps.h"
#include "flow_drop.h"
#include "flow_names.h"
#include "stats.h"
#include "pool.h"
#include "eval_tick.h"
#include "flow_options.h"
#include "pending.h"
#include "preload.h"
#include "guc.h"
#include "planner.h"
#include "settings.h"
#include "sink.h"
#include "sink_columns.h"
#include "sink_sharing.h"
#include "stream_capture.h"
#include "trust.h"
#include "window.h"

/*
 * sink_table: a table name, perhaps qualified.  A name in the query's place
 * says the two were swapped.
 */
static RangeVar *
sink_table_arg(const char *sink_name, const char *query_text)
{
	List	   *parts = flow_written_name_parts(sink_name);

	if (parts == NIL || list_length(parts) > 3)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_NAME),
				 errmsg("invalid name syntax for sink_table: \"%s\"", sink_name),
				 errdetail("sink_table must be a table name such as metrics_1m or public.metrics_1m; double-quoted parts keep upper case, spaces and other characters, as in public.\"Metrics 1m\"."),
				 flow_written_name_parts(query_text) != NIL ?
				 errhint("The query is a name: create_flow takes flow_name, sink_table and query, in that order.") : 0));
	return makeRangeVarFromNameList(parts);
}

/*
 * flowpg puts triggers on the sources and locks them against writers while
 * a flow is created: the creator needs the right to do that much itself.
 */
static void
check_capture_privilege(List *source_relids)
{
	ListCell   *lc;

	foreach(lc, source_relids)
	{
		Oid			relid = lfirst_oid(lc);

		if (pg_class_aclcheck(relid, GetUserId(), ACL_TRIGGER) != ACLCHECK_OK)
			ereport(ERROR,
					(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					 errmsg("permission denied to capture changes of table %s",
							get_rel_name(relid)),
					 errdetail("flowpg installs triggers on a flow's source tables."),
					 errhint("The table's owner can GRANT TRIGGER ON %s to the flow's creator.",
							 get_rel_name(relid))));
	}
}

/*
 * The flow is only as fresh as its worker: say so when none could be
 * started (every background worker slot in use).  The launcher keeps trying.
 */
/*
 * GreptimeDB reads a source incrementally only when it is append-only; a
 * table with a primary key or unique index is its kind that keeps one row
 * per key (rows are replaced), which it refuses the option on.
 */
static void
check_append_only_sources(List *source_relids)
{
	ListCell   *lc;

	foreach(lc, source_relids)
	{
		Relation	rel = table_open(lfirst_oid(lc), AccessShareLock);
		List	   *indexes = RelationGetIndexList(rel);
		ListCell   *ic;

		foreach(ic, indexes)
		{
			HeapTuple	tuple = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(lfirst_oid(ic)));
			bool		unique;

			if (!HeapTupleIsValid(tuple))
				elog(ERROR, "cache lookup failed for index %u", lfirst_oid(ic));
			unique = ((Form_pg_index) GETSTRUCT(tuple))->indisunique;
			ReleaseSysCache(tuple);
			if (unique)
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("flow option experimental_enable_incremental_read requires append-only source tables, but source table \"%s\" is not append-only",
								RelationGetRelationName(rel)),
						 errdetail("Its unique index %s keeps one row per key, as a GreptimeDB table with a primary key does.",
								   get_rel_name(lfirst_oid(ic))),
						 errhint("Remove the option (flowpg reads changes incrementally without it), or drop the table's primary key and unique indexes.")));
		}
		table_close(rel, AccessShareLock);
	}
}

static void
warn_if_no_worker(void)
{
	TimestampTz since;
	pid_t		pid;

	if (pool_status(MyDatabaseId, &since, &pid) == WORKER_NONE)
		ereport(WARNING,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("no flowpg worker runs for database \"%s\"",
						get_database_name(MyDatabaseId)),
				 errdetail("Every background worker slot (max_worker_processes = %d) was in use when flowpg last tried to start one. "
						   "Until a slot frees, the flow's sink is written only by flush_flow and refresh_flow.",
						   max_worker_processes),
				 errhint("Raise max_worker_processes (the launcher, a worker per database with flows, parallel query and logical replication share it) and restart the server.")));
}

/*
 * flowpg.max_flows and flowpg.max_flows_per_role count every flow of the
 * database, pending ones included, against a new one of the current user.
 * A lock on the role, kept until commit, makes its concurrent creations
 * count one another (each waits for the one before to commit or abort).
 */
void
flow_check_limits(void)
{
	Oid			owner = GetUserId();
	List	   *flows;
	List	   *pending;
	int			mine = 0;
	ListCell   *lc;

	if (IsolationUsesXactSnapshot())
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("flows must be created in a READ COMMITTED transaction"),
				 errdetail("flowpg.max_flows and flowpg.max_flows_per_role count the flows concurrent sessions committed.")));
	LockDatabaseObject(AuthIdRelationId, owner, 0, ExclusiveLock);
	CommandCounterIncrement();	/* and a new snapshot: what committed meanwhile */
	flows = catalog_get_all();
	pending = pending_get_all();
	if (list_length(flows) + list_length(pending) >= flowpg_max_flows)
		ereport(ERROR,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("too many flows"),
				 errdetail("This database has %d flows (%d of them pending), the most flowpg.max_flows allows.",
						   list_length(flows) + list_length(pending), list_length(pending)),
				 errhint("Drop a flow, or raise flowpg.max_flows and restart the server.")));
	foreach(lc, flows)
		mine += ((FlowEntry *) lfirst(lc))->owner == owner;
	foreach(lc, pending)
		mine += ((PendingFlow *) lfirst(lc))->owner == owner;
	if (flowpg_max_flows_per_role > 0 && mine >= flowpg_max_flows_per_role)
		ereport(ERROR,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("too many flows for role %s", GetUserNameFromId(owner, false)),
				 errdetail("Role %s owns %d flows in this database, pending ones included; flowpg.max_flows_per_role is %d.",
						   GetUserNameFromId(owner, false), mine, flowpg_max_flows_per_role),
				 errhint("Drop one of its flows, or ask an administrator to raise flowpg.max_flows_per_role.")));
}

int64
flow_create(const FlowDefinition *def, FlowCreated *outcome)
{
	const char *flow_name = def->flow_name;
	Interval   *expire_after = def->expire_after;
	Interval   *eval_interval = def->eval_interval;
	bool		or_replace = def->or_replace;
	bool		if_not_exists = def->if_not_exists;
	bool		backfill = def->backfill;
	FlowMode	requested;
	FlowEntry  *existing;
	FlowEntry  *entry;
	FlowPlan   *plan;
	const char *mode_reason;
	RangeVar   *sink;
	bool		sink_created;
	char	   *positional = NULL;
	ListCell   *lc;

	preload_require();
	catalog_require_current_version();
	if (or_replace && if_not_exists)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("or_replace and if_not_exists cannot be used together")));
	if (def->has_backfill_from && (expire_after == NULL || !backfill))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("backfill_from needs expire_after and backfill"),
				 errdetail("backfill_from is the oldest time whose windows the backfill computes below the horizon of expire_after; without expire_after every window is maintained, so every window is computed."),
				 errhint("Give expire_after, or leave backfill_from out.")));
	/* flow_name_parse and the GreptimeDB scanner truncate names, as PostgreSQL does */
	Assert(strlen(flow_name) < NAMEDATALEN);
	requested = flow_mode_from_name(def->mode_name);
	sink = sink_table_arg(def->sink_name, def->query_text);

	flow_lock_name(flow_name);
	existing = catalog_get_by_name(flow_name);
	if (existing == NULL && pending_exists(flow_name))
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("flow \"%s\" already exists, pending: it waits for its source tables", flow_name),
				 errhint("Drop it with flowpg.execute('DROP FLOW %s') first.", quote_identifier(flow_name))));
	if (existing)
	{
		if (if_not_exists)
		{
			ereport(NOTICE,
					(errcode(ERRCODE_DUPLICATE_OBJECT),
					 errmsg("flow \"%s\" already exists, skipping", flow_name)));
			*outcome = FLOW_KEPT;
			return existing->flow_id;
		}
		if (!or_replace)
			ereport(ERROR,
					(errcode(ERRCODE_DUPLICATE_OBJECT),
					 errmsg("flow \"%s\" already exists", flow_name),
					 errhint("Use or_replace => true to replace it, or if_not_exists => true to keep it.")));
		catalog_check_owner(existing);
		flow_lock_preempting(existing->flow_id);	/* no refresh while replacing */
	}

	if (existing == NULL)
		flow_check_limits();

	entry = palloc0(sizeof(FlowEntry));
	entry->flow_name = pstrdup(flow_name);
	entry->owner = GetUserId();
	/* a pending flow keeps the settings it was given with, not the starting session's */
	entry->settings = def->settings ? def->settings : flow_settings_capture();

	plan = flow_plan_query_text(def->query_text, FLOW_WINDOW_FIND, def->source,
								def->vet_objects ? flow_name : NULL);
	check_capture_privilege(plan->source_relids);
	if (def->append_only_sources)
		check_append_only_sources(plan->source_relids);
	/* writers cannot apply the owner's policies to their rows: recompute */
	if (plan->streaming_refusal == NULL && flow_plan_uses_row_security(plan))
		plan->streaming_refusal = "row-level security policies filter a source table for the flow's owner";
	entry->mode = (char *) flow_mode_name(flow_plan_choose_mode(plan, requested,
																expire_after,
																eval_interval));
	mode_reason = flow_mode_reason(plan, requested, eval_interval);
	/* the streaming engine keeps its windows, if a slot is free (below) */
	entry->partial_states = strcmp(entry->mode, "batching") == 0 && plan->is_aggregate &&
		plan->streaming_refusal == NULL && flowpg_batching_partial_states;
	settings_warn_unsafe_search_path(entry->owner);
	if (def->match_by_position)
	{
		/* the lock sink_prepare takes */
		Oid			sink_relid = RangeVarGetRelid(sink, ShareRowExclusiveLock, true);

		if (OidIsValid(sink_relid) &&
			(get_rel_relkind(sink_relid) == RELKIND_RELATION ||
			 get_rel_relkind(sink_relid) == RELKIND_PARTITIONED_TABLE))
			positional = sink_match_by_position(sink_relid, plan);
	}
	entry->sink_relid = sink_prepare(sink, flow_name, plan,
									 existing ? existing->flow_id : 0,
									 &sink_created);
	if (def->match_by_position && !sink_created)
		sink_check_every_column_written(entry->sink_relid, plan,
										existing ? existing->flow_id : 0, def->last_non_null);
	/* a recording rule's ticks are told apart by the group keys */
	if (plan->recording_rule && !sink_has_key_index(entry->sink_relid, plan, InvalidOid))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
				 errmsg("sink table %s of recording rule \"%s\" has no unique index on its group key columns",
						get_rel_name(entry->sink_relid), flow_name),
				 errdetail("The flow groups by now(): each tick writes its own groups and keeps those of earlier ticks, told apart by their keys."),
				 errhint("Create a unique index on the sink's columns of the GROUP BY keys (NULLS NOT DISTINCT, or NOT NULL columns).")));
	/* a sink someone made meanwhile: its triggers and defaults would run as the owner */
	if (def->vet_objects && !sink_created)
		trust_require(trust_untrusted_relation(entry->sink_relid, entry->owner, "sink table"),
					  flow_name, entry->owner);
	/* code any member of a group could change runs as the owner at every run */
	trust_require_table_code(sink_untrusted_code(entry->sink_relid, plan, entry->owner, true),
							 flow_name, entry->owner);

	entry->is_aggregate = plan->is_aggregate;
	entry->source_relids = plan->source_relids;
	entry->query = flow_plan_deparse(plan->query, entry->settings, entry->owner);
	flow_plan_check_evaluable(entry->query, entry->owner, entry->settings, flow_name);
	entry->query_tree = nodeToString(plan->query);
	entry->time_relid = plan->window_expr ? plan->time_relid : InvalidOid;
	entry->time_attno = plan->window_expr ? plan->time_attno : InvalidAttrNumber;
	entry->window_expr = plan->window_text;
	entry->window_output = plan->window_output;
	entry->expire_after = expire_after;
	entry->eval_interval = eval_interval;
	entry->comment = def->comment ? pstrdup(def->comment) : NULL;
	entry->options = flow_options(def, plan, entry, mode_reason, positional);

	if (existing)
		deps_drop(existing);
	entry->deps_view = deps_create(flow_name, entry->query, entry->settings,
								   entry->sink_relid);
	if (existing)
	{
		entry->flow_id = existing->flow_id;
		catalog_update(entry);
	}
	else
		catalog_insert(entry);
	if (flow_on_streams(entry) &&
		!registry_reserve(entry->flow_id, entry->owner, entry->partial_states))
	{
		/* no slot for it: the batching flow recomputes its windows */
		entry->partial_states = false;
		entry->options = flow_options(def, plan, entry, mode_reason, positional);
		catalog_update(entry);
	}

	/*
	 * Capture from now on.  The lock waits for writers in progress and keeps
	 * new ones out until this transaction ends, so a change is either
	 * captured or committed before this transaction: then the backfill,
	 * whose snapshots are all taken after it committed, sees it.
	 */
	foreach(lc, plan->source_relids)
	{
		LockRelationOid(lfirst_oid(lc), ShareRowExclusiveLock);
		capture_install(lfirst_oid(lc));
	}
	if (existing)
		foreach(lc, existing->source_relids)
			capture_remove_if_unused(lfirst_oid(lc));
	sink_install_guard(entry->sink_relid);
	if (existing && existing->sink_relid != entry->sink_relid)
		sink_remove_guard(existing->sink_relid);
	/*
	 * Online: the worker computes the sink after the commit (backfill.c),
	 * a streaming flow's by loading its state.  A replaced streaming flow's
	 * old rows go with a whole recompute in the same round.
	 */
	if (backfill)
	{
		backfill_begin(entry, def->has_backfill_from, def->backfill_from);

		/*
		 * A streaming flow's load only upserts the groups of its query:
		 * rows a sink already held (a replaced flow's, or an existing
		 * table's) go with a whole recompute in the same round, and a
		 * replacement with an unchanged graph reloads anyway.
		 */
		if (flow_on_streams(entry) && (existing || !sink_created))
		{
			dirty_log_append(entry->flow_id, true, 0, 0, 0);
			registry_request_reset(entry->flow_id);
		}
	}
	else if (existing && def->written_query)
	{
		/*
		 * GreptimeDB's semantics (flowpg.execute without a backfill): the
		 * sink keeps its rows; the new definition computes the windows that
		 * change from now on (a streaming flow's state is loaded anew).
		 */
		backfill_forget(entry->flow_id);	/* the old definition's */
		if (flow_on_streams(entry))
			registry_request_reset(entry->flow_id);
	}
	else if (existing)
	{
		backfill_forget(entry->flow_id);	/* the old definition's */
		dirty_log_append(entry->flow_id, true, 0, 0, 0);	/* the old rows are stale */
	}
	/* EVAL INTERVAL: the first tick after now, a multiple of it since the epoch */
	if (eval_interval)
		stats_set_next_run(entry->flow_id, eval_tick_after(eval_interval, GetCurrentTimestamp()));
	else if (existing)
		stats_set_next_run(entry->flow_id, GetCurrentTimestamp());	/* not the old flow's tick */
	pool_request(MyDatabaseId);
	warn_if_no_worker();

	*outcome = existing ? FLOW_REPLACED : FLOW_CREATED;
	return entry->flow_id;
}

/* COMMENT ON FLOW: the owner's, like COMMENT ON for any object. */
void
flow_set_comment(const char *flow_name, const char *comment)
{
	FlowEntry  *entry;

	flow_lock_name(flow_name);
	entry = catalog_get_by_name(flow_name);
	if (entry == NULL)
		flow_does_not_exist(flow_name);
	catalog_check_owner(entry);
	catalog_set_comment(entry->flow_id, comment);
}

