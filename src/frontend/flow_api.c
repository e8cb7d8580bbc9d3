/*-------------------------------------------------------------------------
 *
 * flow_api.c
 *	  The SQL functions of flowpg: create_flow, drop_flow, window_bounds.
 *
 * create_flow runs every check before it writes anything, and everything it
 * writes (sink table, index, catalog row, backfilled rows) belongs to the
 * calling transaction, so a failed call leaves nothing behind.  Flow DDL is
 * serialized by a lock on the catalog, so two sessions creating the same
 * name see each other: the second waits, then finds the first one's flow.
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
#include "batch.h"
#include "capture.h"
#include "dirty_log.h"
#include "catalog.h"
#include "flow_locks.h"
#include "registry.h"
#include "restore.h"
#include "ddl_events.h"
#include "stats.h"
#include "pool.h"
#include "eval_tick.h"
#include "flow_api.h"
#include "flow_options.h"
#include "pending.h"
#include "preload.h"
#include "guc.h"
#include "planner.h"
#include "settings.h"
#include "sink.h"
#include "stream_capture.h"
#include "trust.h"
#include "window.h"

/*
 * The flow's lock, for a change that makes a run in progress moot: a
 * worker running the flow abandons its run (a user's refresh_flow is
 * waited for).
 */
static void
lock_flow_preempting(int64 flow_id)
{
	if (flow_try_lock(flow_id))
		return;
	(void) pool_preempt(flow_id);
	flow_lock(flow_id);
}


PG_FUNCTION_INFO_V1(flowpg_create_flow);
PG_FUNCTION_INFO_V1(flowpg_drop_flow);
PG_FUNCTION_INFO_V1(flowpg_window_bounds);
PG_FUNCTION_INFO_V1(flowpg_flow_window_bounds);
PG_FUNCTION_INFO_V1(flowpg_deparse_query);

char *
flow_required_text_arg(FunctionCallInfo fcinfo, int argno, const char *argname)
{
	char	   *value;

	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s must not be NULL", argname)));
	value = text_to_cstring(PG_GETARG_TEXT_PP(argno));
	if (value[0] == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must not be empty", argname)));
	return value;
}

/* A boolean argument: NULL is neither, an error naming it. */
static bool
required_bool_arg(FunctionCallInfo fcinfo, int argno, const char *argname)
{
	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s must not be NULL", argname)));
	return PG_GETARG_BOOL(argno);
}

List *
flow_written_name_parts(const char *written)
{
	char	   *rawname = pstrdup(written);
	List	   *names;
	List	   *parts = NIL;
	ListCell   *lc;

	if (!SplitIdentifierString(rawname, '.', &names))
		return NIL;
	foreach(lc, names)
	{
		if (((char *) lfirst(lc))[0] == '\0')
			return NIL;			/* "" */
		parts = lappend(parts, makeString(lfirst(lc)));
	}
	return parts;
}

char *
flow_name_parse(const char *written)
{
	List	   *parts = flow_written_name_parts(written);
	FlowEntry  *exact;

	if (list_length(parts) == 1)
		return strVal(linitial(parts));
	/* a flow of 0.1 could be named so: show how to reach it */
	exact = catalog_get_by_name(written);
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_NAME),
			 errmsg("invalid name syntax for flow_name: \"%s\"", written),
			 parts != NIL ?
			 errdetail("flow_name is one name: flows do not belong to a schema.") :
			 errdetail("flow_name must be a name such as per_minute, or a double-quoted one such as \"Per Minute\" to keep upper case, spaces or other characters."),
			 exact ?
			 errhint("Flow %s exists: write %s with its double quotes.",
					 quote_identifier(written), quote_identifier(written)) : 0));
	return NULL;
}

char *
flow_name_arg(FunctionCallInfo fcinfo, int argno)
{
	return flow_name_parse(flow_required_text_arg(fcinfo, argno, "flow_name"));
}

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
 * There is no flow of that name.  One whose name differs by case alone
 * (made before flow names followed PostgreSQL's rules, or double-quoted)
 * is reached by its quoted name: say so.
 */
void
flow_does_not_exist(const char *flow_name)
{
	const char *similar = NULL;
	ListCell   *lc;

	foreach(lc, catalog_get_all())
	{
		const char *name = ((FlowEntry *) lfirst(lc))->flow_name;

		if (strcmp(name, flow_name) != 0 &&
			strcmp(downcase_identifier(name, strlen(name), false, false), flow_name) == 0)
			similar = name;
	}
	ereport(ERROR,
			(errcode(ERRCODE_UNDEFINED_OBJECT),
			 errmsg("flow \"%s\" does not exist", flow_name),
			 similar ?
			 errhint("Flow %s exists: names are folded to lower case unless double-quoted; write %s with its double quotes.",
					 quote_identifier(similar), quote_identifier(similar)) : 0));
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

Datum
flowpg_create_flow(PG_FUNCTION_ARGS)
{
	FlowDefinition def = {0};
	FlowCreated outcome;

	def.flow_name = flow_name_arg(fcinfo, 0);
	def.sink_name = flow_required_text_arg(fcinfo, 1, "sink_table");
	def.query_text = flow_required_text_arg(fcinfo, 2, "query");
	def.mode_name = flow_required_text_arg(fcinfo, 3, "mode");
	def.expire_after = PG_ARGISNULL(4) ? NULL : PG_GETARG_INTERVAL_P(4);
	def.eval_interval = PG_ARGISNULL(5) ? NULL : PG_GETARG_INTERVAL_P(5);
	def.comment = PG_ARGISNULL(6) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(6));
	def.or_replace = required_bool_arg(fcinfo, 7, "or_replace");
	def.if_not_exists = required_bool_arg(fcinfo, 8, "if_not_exists");
	def.backfill = required_bool_arg(fcinfo, 9, "backfill");
	/* (0.2's create_flow, until ALTER EXTENSION UPDATE, has no backfill_from) */
	def.has_backfill_from = PG_NARGS() > 10 && !PG_ARGISNULL(10);
	if (def.has_backfill_from)
		def.backfill_from = PG_GETARG_TIMESTAMPTZ(10);
	PG_RETURN_INT64(flow_create(&def, &outcome));
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
		lock_flow_preempting(existing->flow_id);	/* no refresh while replacing */
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

Datum
flowpg_drop_flow(PG_FUNCTION_ARGS)
{
	(void) flow_drop(flow_name_arg(fcinfo, 0), required_bool_arg(fcinfo, 1, "if_exists"));
	PG_RETURN_VOID();
}

/* Drops the flow; false when it did not exist and if_exists was given. */
bool
flow_drop(const char *flow_name, bool if_exists)
{
	FlowEntry  *entry;

	catalog_require_current_version();
	flow_lock_name(flow_name);
	entry = catalog_get_by_name(flow_name);
	if (entry == NULL)
	{
		if (!if_exists)
			flow_does_not_exist(flow_name);
		ereport(NOTICE,
				(errmsg("flow \"%s\" does not exist, skipping", flow_name)));
		return false;
	}
	catalog_check_may_drop(entry->owner, entry->flow_name);
	lock_flow_preempting(entry->flow_id);	/* waits for a refresh in progress */
	ddl_remove_flow(entry);
	return true;
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

/* The (window_start, window_end) record of the window holding value. */
static Datum
window_bounds_result(FunctionCallInfo fcinfo, WindowProbe *probe, Datum value)
{
	TupleDesc	tupdesc;
	Datum		values[2];
	bool		nulls[2] = {false, false};
	int64		start;
	int64		end;
	bool		unbounded;

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	window_bounds(probe, window_datum_to_ordinal(probe->argtype, value),
				  &start, &end, &unbounded);
	values[0] = window_ordinal_to_datum(probe->argtype, start);
	if (!unbounded)
		values[1] = window_ordinal_to_datum(probe->argtype, end);
	else if (probe->argtype == DATEOID)
		values[1] = DateADTGetDatum(DATEVAL_NOEND);
	else if (window_is_time_type(probe->argtype))
		values[1] = TimestampGetDatum(DT_NOEND);
	else
		nulls[1] = true;
	return HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(tupdesc), values, nulls));
}

/* The value of window_bounds and flow_window_bounds: a window holds no NULL. */
static Datum
window_value_arg(FunctionCallInfo fcinfo, int argno)
{
	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("value must not be NULL")));
	return PG_GETARG_DATUM(argno);
}

static void
check_window_value_type(Oid valtype)
{
	if (!window_is_time_type(valtype) && !window_is_integer_type(valtype))
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("a time window cannot be over type %s", format_type_be(valtype)),
				 errhint("Use timestamptz, timestamp, date, smallint, integer or bigint.")));
}

/*
 * window_bounds(expression, value): the expression is SQL over $1, parsed
 * and analysed by PostgreSQL as the target of "SELECT <expression>".
 */
Datum
flowpg_window_bounds(PG_FUNCTION_ARGS)
{
	char	   *exprtext = flow_required_text_arg(fcinfo, 0, "expression");
	Datum		value = window_value_arg(fcinfo, 1);
	Oid			valtype = get_fn_expr_argtype(fcinfo->flinfo, 1);
	char	   *sql = psprintf("SELECT %s", exprtext);
	List	   *raw;
	RawStmt    *stmt;
	SelectStmt *select;
	Query	   *query;
	Expr	   *expr;
	WindowProbe *probe;

	check_window_value_type(valtype);
	raw = raw_parser(sql, RAW_PARSE_DEFAULT);
	stmt = list_length(raw) == 1 ? linitial_node(RawStmt, raw) : NULL;
	select = stmt && IsA(stmt->stmt, SelectStmt) ? (SelectStmt *) stmt->stmt : NULL;
	if (select == NULL || list_length(select->targetList) != 1 ||
		select->fromClause || select->whereClause || select->groupClause ||
		select->havingClause || select->sortClause || select->limitCount ||
		select->limitOffset || select->distinctClause || select->op != SETOP_NONE ||
		select->withClause || select->valuesLists || select->intoClause ||
		select->lockingClause || select->windowClause)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("\"%s\" is not a single expression", exprtext),
				 errhint("Write the window expression over $1, for example date_trunc('hour', $1).")));

	query = parse_analyze_fixedparams(stmt, sql, &valtype, 1, NULL);
	if (query->commandType != CMD_SELECT || query->utilityStmt != NULL ||
		list_length(query->targetList) != 1 || query->rtable != NIL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("\"%s\" is not a single expression", exprtext)));
	if (query->hasAggs || query->hasSubLinks || query->hasTargetSRFs ||
		query->hasWindowFuncs)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("a time window expression cannot use aggregates, subqueries or set-returning functions")));
	expr = linitial_node(TargetEntry, query->targetList)->expr;
	if (contain_volatile_functions((Node *) expr))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
				 errmsg("a time window expression cannot use volatile functions")));

	probe = window_probe_create(expr, valtype);
	window_check_monotonic(probe, exprtext, 1, 0);
	return window_bounds_result(fcinfo, probe, value);
}

/* flow_window_bounds(flow, value): the same with a flow's own window. */
Datum
flowpg_flow_window_bounds(PG_FUNCTION_ARGS)
{
	char	   *flow_name = flow_name_arg(fcinfo, 0);
	Datum		value = window_value_arg(fcinfo, 1);
	Oid			valtype = get_fn_expr_argtype(fcinfo->flinfo, 1);
	FlowEntry  *entry = catalog_get_by_name(flow_name);
	FlowPlan   *plan;
	Datum		result;
	FlowIdentity identity;

	if (entry == NULL)
		flow_does_not_exist(flow_name);
	/* the owner's window expression runs only in a transaction of a role that may act for it */
	catalog_check_owner(entry);
	plan = flow_plan_for_entry(entry);
	if (plan->window_expr == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("flow \"%s\" has no time window", flow_name)));
	if (valtype != plan->time_type)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("the time column of flow \"%s\" has type %s, not %s",
						flow_name, format_type_be(plan->time_type),
						format_type_be(valtype)),
				 errhint("Cast the value to %s.", format_type_be(plan->time_type))));

	/* the window is the owner's code: it runs as the owner, restricted */
	flow_enter(&identity, entry->owner, entry->settings, false);
	result = window_bounds_result(fcinfo, flow_plan_window_probe(plan), value);
	flow_leave(&identity);
	return result;
}

/* The query of a flow, deparsed from its stored tree (the flows view). */
Datum
flowpg_deparse_query(PG_FUNCTION_ARGS)
{
	FlowEntry  *entry = catalog_get_by_id(PG_GETARG_INT64(0));

	if (entry == NULL)
		PG_RETURN_NULL();
	PG_RETURN_TEXT_P(cstring_to_text(flow_plan_deparse(stringToNode(entry->query_tree),
													   entry->settings, entry->owner)));
}

/*
 * A pending flow is started by a worker once its tables exist (pool.c,
 * greptime.c): flush_flow and refresh_flow of one ask for that attempt and
 * wait for it, as they wait for any work of the worker.  NULL when there is
 * no such pending flow; an error when it is still pending after the attempt.
 */
static FlowEntry *
wait_for_pending_start(const char *flow_name)
{
	PendingFlow *pending = pending_get(flow_name);
	TimestampTz deadline = GetCurrentTimestamp() + (int64) flowpg_query_timeout_ms * 1000;
	FlowEntry  *entry;
	uint64		pass;

	/* started by a worker between the caller's look at the catalog and ours */
	if (pending == NULL)
		return catalog_get_by_name(flow_name);
	if (!has_privs_of_role(GetUserId(), pending->owner))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("must be owner of flow \"%s\"", flow_name)));
	preload_require();	/* no worker could start it */
	pass = pool_check_pending_now();
	while (!pool_pending_pass_done(pass))
	{
		if (flowpg_query_timeout_ms > 0 && GetCurrentTimestamp() > deadline)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("pending flow \"%s\" was not tried within flowpg.query_timeout", flow_name),
					 errdetail("A flowpg worker starts pending flows; none answered."),
					 errhint("flowpg.flows shows whether the database has a worker.")));
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, 10,
						 PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
	entry = catalog_get_by_name(flow_name);
	if (entry)
		return entry;
	pending = pending_get(flow_name);
	if (pending == NULL)
		return NULL;			/* dropped meanwhile */
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("flow \"%s\" is pending: it could not start", flow_name),
			 pending->last_error ?
			 errdetail("Its last attempt to start failed: %s", pending->last_error) :
			 errdetail("Its source tables do not exist yet (or are not committed)."),
			 errhint("flowpg.information_schema_flows shows what it waits for.")));
	return NULL;
}

/*
 * The flow of that (stored) name, which the caller must own, ready to be
 * flushed or refreshed: a restored one only once its tables are complete.
 */
FlowEntry *
flow_owned(const char *flow_name)
{
	FlowEntry  *entry;

	catalog_require_current_version();
	entry = catalog_get_by_name(flow_name);

	if (entry == NULL)
		entry = wait_for_pending_start(flow_name);
	if (entry == NULL)
		flow_does_not_exist(flow_name);
	catalog_check_owner(entry);
	if (strcmp(entry->state, "restoring") == 0)
	{
		(void) restore_finish(entry, true);
		entry = catalog_get_by_id(entry->flow_id);
	}
	return entry;
}

FlowEntry *
flow_owned_by_caller(const char *written_name)
{
	return flow_owned(flow_name_parse(written_name));
}
