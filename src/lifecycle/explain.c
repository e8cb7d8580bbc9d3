/*-------------------------------------------------------------------------
 *
 * explain.c
 *	  explain_flow: what a flow is made of and what its runs execute, one
 *	  line of text a row, laid out as EXPLAIN's text format.
 *
 * Every fact comes from where the engines take it: the catalog row (the
 * mode, and why auto chose it), the flow's plan (window, keys, filter,
 * aggregates and their pg_aggregate functions), aggregate.c's own choice
 * of what a streaming flow computes inline, the sources' triggers, the
 * streaming state's counters, and the statements refresh.c builds for a
 * refresh of one window.  Those are EXPLAINed where a refresh runs them:
 * as the flow's owner, restricted, under its pinned settings.  With
 * analyze the flow's query for that window runs under EXPLAIN ANALYZE --
 * the query only, never the sink's DELETE or INSERT -- and every EXPLAIN
 * runs in a subtransaction that is rolled back, so nothing they did stays,
 * not even the locks their plans took on the sink.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/relation.h"
#include "access/table.h"
#include "catalog/pg_am.h"
#include "catalog/pg_class.h"
#include "catalog/pg_index.h"
#include "catalog/pg_trigger.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "aggregate.h"
#include "refresh.h"
#include "capture.h"
#include "flow_names.h"
#include "guc.h"
#include "planner.h"
#include "registry.h"
#include "subxact.h"
#include "window.h"

PG_FUNCTION_INFO_V1(flowpg_explain_flow);

typedef struct Explain
{
	FlowEntry  *entry;
	bool		analyze;
	bool		streaming;
	MemoryContext memory;		/* of the lines: outlives the run's SPI */
	List	   *lines;
} Explain;

static void add_line(Explain *ex, int indent, const char *fmt,...) pg_attribute_printf(3, 4);

/*
 * Appends a line, indented by two spaces a level; text of several lines
 * (a deparsed query) becomes as many, the later ones indented one more.
 */
static void
add_line(Explain *ex, int indent, const char *fmt,...)
{
	MemoryContext old = MemoryContextSwitchTo(ex->memory);
	StringInfoData buf;
	char	   *text;

	initStringInfo(&buf);
	for (;;)
	{
		va_list		args;
		int			needed;

		va_start(args, fmt);
		needed = appendStringInfoVA(&buf, fmt, args);
		va_end(args);
		if (needed == 0)
			break;
		enlargeStringInfo(&buf, needed);
	}
	text = buf.data;
	for (;;)
	{
		char	   *newline = strchr(text, '\n');
		StringInfoData one;

		initStringInfo(&one);
		appendStringInfoSpaces(&one, (indent + (text != buf.data)) * 2);
		appendBinaryStringInfo(&one, text, newline ? newline - text : strlen(text));
		ex->lines = lappend(ex->lines, one.data);
		if (newline == NULL)
			break;
		text = newline + 1;
	}
	MemoryContextSwitchTo(old);
}

static char *
relation_text(Oid relid)
{
	return quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)),
									  get_rel_name(relid));
}

/* A value as its type's output function prints it (the settings in force). */
static char *
datum_text(Oid type, Datum value)
{
	Oid			outfunc;
	bool		isvarlena;

	getTypeOutputInfo(type, &outfunc, &isvarlena);
	return OidOutputFunctionCall(outfunc, value);
}

static char *
ordinal_text(FlowPlan *plan, int64 x)
{
	return datum_text(plan->time_type, window_ordinal_to_datum(plan->time_type, x));
}

/* A function's name as pg_aggregate shows it (regproc); "-" for none. */
static char *
function_name(Oid fnoid)
{
	return DatumGetCString(DirectFunctionCall1(regprocout, ObjectIdGetDatum(fnoid)));
}

/* A string member of the catalog row's options; NULL when absent. */
static char *
option_text(FlowEntry *entry, const char *key)
{
	Jsonb	   *options = DatumGetJsonbP(DirectFunctionCall1(jsonb_in,
															 CStringGetDatum(entry->options)));
	JsonbValue *value;

	if (!JB_ROOT_IS_OBJECT(options))
		return NULL;
	value = getKeyJsonValueFromContainer(&options->root, key, strlen(key), NULL);
	if (value == NULL || value->type != jbvString)
		return NULL;
	return pnstrdup(value->val.string.val, value->val.string.len);
}

static void
explain_mode(Explain *ex)
{
	FlowEntry  *entry = ex->entry;
	char	   *reason = option_text(entry, "mode_reason");
	char	   *requested = option_text(entry, "requested_mode");

	if (reason)
		add_line(ex, 0, "Mode: %s (chosen: %s)", entry->mode, reason);
	else if (requested && strcmp(requested, "auto") != 0)
		add_line(ex, 0, "Mode: %s (requested)", entry->mode);
	else if (requested)
		add_line(ex, 0, "Mode: %s (chosen by mode => 'auto')", entry->mode);
	else
		add_line(ex, 0, "Mode: %s", entry->mode);
	if (entry->partial_states)
		add_line(ex, 1, "Partial states: kept by the streaming engine from the table's shared capture; "
				 "each refresh writes the groups changed since the last one (flowpg.batching_partial_states)");
}

/* A hash index cannot serve a window's range of times; the others can. */
static bool
index_serves_ranges(Oid indexrelid)
{
	HeapTuple	tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(indexrelid));
	bool		serves;

	if (!HeapTupleIsValid(tuple))
		return false;
	serves = ((Form_pg_class) GETSTRUCT(tuple))->relam != HASH_AM_OID;
	ReleaseSysCache(tuple);
	return serves;
}

/*
 * An index of the time column's table whose first key is that column
 * and that can serve a range of it, or NULL.  Without one, every recompute of a window (a batching refresh, a
 * streaming flow's dirty windows) reads the whole source.
 */
static char *
time_column_index(FlowPlan *plan)
{
	Relation	rel = table_open(plan->time_relid, AccessShareLock);
	List	   *indexes = RelationGetIndexList(rel);
	ListCell   *lc;
	char	   *found = NULL;

	foreach(lc, indexes)
	{
		HeapTuple	tuple = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(lfirst_oid(lc)));
		Form_pg_index index;

		if (!HeapTupleIsValid(tuple))
			continue;
		index = (Form_pg_index) GETSTRUCT(tuple);
		if (index->indisvalid && index->indnkeyatts > 0 &&
			index->indkey.values[0] == plan->time_attno &&
			heap_attisnull(tuple, Anum_pg_index_indpred, NULL) &&
			index_serves_ranges(index->indexrelid))
			found = relation_text(index->indexrelid);
		ReleaseSysCache(tuple);
		if (found)
			break;
	}
	table_close(rel, AccessShareLock);
	return found;
}

/*
 * The window holding x, and which time the explained refresh is of: the
 * newest in the source (a sample that does not move with the clock), or
 * now() when no row has a time.
 */
static void
explain_window(Explain *ex, RefreshRun *run, FlowPlan *plan, WindowProbe *probe, int64 *x)
{
	FlowEntry  *entry = ex->entry;
	int64		start;
	int64		end;
	bool		unbounded;
	char	   *index_name;

	if (probe == NULL)
	{
		add_line(ex, 0, plan->recording_rule ?
				 "Window: none (every tick adds the groups of its time)" :
				 "Window: none (every run recomputes the whole flow)");
		return;
	}
	add_line(ex, 0, "Window: %s", plan->window_text);
	add_line(ex, 1, "Time column: %s.%s (%s)", relation_text(plan->time_relid),
			 quote_identifier(get_attname(plan->time_relid, plan->time_attno, false)),
			 format_type_be(plan->time_type));
	index_name = time_column_index(plan);
	if (index_name)
		add_line(ex, 1, "Time column index: %s", index_name);
	else
		add_line(ex, 1, "Time column index: none: every recompute of a window reads the whole source (CREATE INDEX ON %s (%s) lets it read only that window)",
				 relation_text(plan->time_relid),
				 quote_identifier(get_attname(plan->time_relid, plan->time_attno, false)));
	if (refresh_newest_time(run, x))
		add_line(ex, 1, "Sample: the newest time in the source, %s", ordinal_text(plan, *x));
	else
	{
		*x = window_ordinal_from_timestamptz(plan->time_type,
											 GetCurrentTransactionStartTimestamp());
		add_line(ex, 1, "Sample: now(), %s (no row of the source has a time)",
				 ordinal_text(plan, *x));
	}
	window_bounds(probe, *x, &start, &end, &unbounded);
	add_line(ex, 1, "Sample window: %s, the times [%s, %s)",
			 datum_text(probe->resulttype, window_probe_eval(probe, *x)),
			 ordinal_text(plan, start), unbounded ? "infinity" : ordinal_text(plan, end));
	if (entry->expire_after && !plan->recording_rule)
		add_line(ex, 1, "Expire after: %s (windows from %s on are maintained; older ones are frozen, kept as they are)",
				 datum_text(INTERVALOID, IntervalPGetDatum(entry->expire_after)),
				 ordinal_text(plan, window_expiry_cutoff(probe, entry->expire_after)));
}

static void
explain_schedule(Explain *ex, FlowPlan *plan)
{
	FlowEntry  *entry = ex->entry;

	if (entry->eval_interval)
		add_line(ex, 0, "Eval interval: %s (runs at its multiples since the Unix epoch)",
				 datum_text(INTERVALOID, IntervalPGetDatum(entry->eval_interval)));
	if (plan->recording_rule)
	{
		add_line(ex, 1, "Recording rule: a GROUP BY key is a function of the tick alone (now() being the tick's time); each tick replaces its own rows, and the rows of earlier ticks stay");
		if (entry->expire_after)
			add_line(ex, 1, "Expire after: %s (at each tick, rows whose %s is older than the tick's time minus it are deleted)",
					 datum_text(INTERVALOID, IntervalPGetDatum(entry->expire_after)),
					 quote_identifier(plan->outputs[plan->record_key_output].name));
	}
	else if (plan->uses_now)
		add_line(ex, 1, "Uses now(): recomputed whole at every tick, now() being the tick's time");
}

/* Is target (by address) within tree? */
static bool
contains_node(Node *tree, Node *target)
{
	if (tree == NULL)
		return false;
	if (tree == target)
		return true;
	return expression_tree_walker(tree, contains_node, target);
}

/* The target list entry of an output of the query (junk entries are no outputs). */
static TargetEntry *
output_entry(Query *query, int output)
{
	ListCell   *lc;
	int			n = 0;

	foreach(lc, query->targetList)
	{
		TargetEntry *tle = lfirst_node(TargetEntry, lc);

		if (tle->resjunk)
			continue;
		if (n++ == output)
			return tle;
	}
	elog(ERROR, "flow output %d not found", output);
	return NULL;				/* keep compiler quiet */
}

static void
explain_keys(Explain *ex, FlowPlan *plan)
{
	Query	   *query = plan->query;
	StringInfoData keys;
	char	   *text;

	initStringInfo(&keys);
	for (int i = 0; i < plan->noutputs; i++)
		if (plan->outputs[i].is_group_key)
			appendStringInfo(&keys, "%s%s", keys.len ? ", " : "",
							 quote_identifier(plan->outputs[i].name));
	if (query->jointree->quals)
	{
		text = flow_plan_expr_text(query, (Expr *) query->jointree->quals);
		add_line(ex, 0, "Filter: %s", text ? text : "over several tables (see the refresh query)");
	}
	add_line(ex, 0, "Group keys: %s", keys.len ? keys.data : "none");
	for (int i = 0; i < plan->noutputs; i++)
	{
		if (!plan->outputs[i].is_group_key)
			continue;
		text = flow_plan_expr_text(query, output_entry(query, i)->expr);
		add_line(ex, 1, "%s: %s%s", quote_identifier(plan->outputs[i].name),
				 text ? text : "over several tables",
				 i == plan->window_output ? " (the time window)" : "");
	}
	if (query->havingQual)
	{
		text = flow_plan_expr_text(query, (Expr *) query->havingQual);
		add_line(ex, 0, "Having: %s", text ? text : "over several tables (see the refresh query)");
	}
}

/*
 * Where a streaming flow computes the aggregate: what agg_support_init
 * decides for this session's processes (flowpg.inline_aggregates is read
 * when a process compiles the flow).
 */
static char *
streaming_path(FlowAggregate *def)
{
	AggSupport	agg;
	bool		trans_inline;
	bool		combine_inline;

	agg_support_init(&agg, def, flowpg_inline_aggregates);
	trans_inline = agg.trans_inline != AGG_FN_CALL;
	combine_inline = agg.combine_inline != AGG_FN_CALL;
	if (trans_inline && combine_inline)
		return "inline (flowpg's fast path: transition and combine without function calls)";
	if (trans_inline || combine_inline)
		return psprintf("%s inline, %s through the generic function call",
						trans_inline ? "transition" : "combine",
						trans_inline ? "combine" : "transition");
	return psprintf("generic (transition and combine functions called through fmgr%s)",
					flowpg_inline_aggregates ? "" : "; flowpg.inline_aggregates is off");
}

/* How the streaming engine takes a removed row back out of the aggregate. */
static const char *
retraction_text(FlowAggregate *def)
{
	switch (def->retract)
	{
		case FLOW_RETRACT_INVERSE:
			return psprintf("exact, by the inverse transition function %s%s",
							function_name(def->minvtransfn),
							def->moving ? " on the moving-aggregate state" : "");
		case FLOW_RETRACT_EXTREME:
			return "free unless the removed value is the extreme: then the group is recomputed from its rows";
		case FLOW_RETRACT_NONE:
			break;
	}
	return "none: no inverse transition function and no sort operator";
}

static void
explain_aggregates(Explain *ex, FlowPlan *plan)
{
	Query	   *query = plan->query;
	ListCell   *lc;

	if (plan->aggregates == NIL)
	{
		add_line(ex, 0, "Aggregates: none");
		return;
	}
	add_line(ex, 0, "Aggregates:");
	foreach(lc, plan->aggregates)
	{
		FlowAggregate *def = lfirst(lc);
		char	   *text = flow_plan_expr_text(query, (Expr *) def->aggref);
		StringInfoData where;

		initStringInfo(&where);
		for (int i = 0; i < plan->noutputs; i++)
			if (contains_node((Node *) output_entry(query, i)->expr, (Node *) def->aggref))
				appendStringInfo(&where, "%s%s", where.len ? ", " : "",
								 quote_identifier(plan->outputs[i].name));
		if (where.len == 0)
			appendStringInfoString(&where, "HAVING");
		add_line(ex, 1, "%s -> %s", text ? text : format_procedure(def->aggref->aggfnoid),
				 where.data);
		add_line(ex, 2, "Path: %s", ex->streaming ? streaming_path(def) :
				 "computed by the refresh query (PostgreSQL's executor)");
		add_line(ex, 2, "Functions: transfn %s, combinefn %s, serialfn %s, deserialfn %s, finalfn %s",
				 function_name(def->transfn), function_name(def->combinefn),
				 function_name(def->serialfn), function_name(def->deserialfn),
				 function_name(def->finalfn));
		add_line(ex, 2, "State type: %s", format_type_be(def->transtype));
		if (ex->streaming)
			add_line(ex, 2, "Retraction: %s", retraction_text(def));
	}
}

static const char *
trigger_events(Trigger *trigger)
{
	StringInfoData buf;

	initStringInfo(&buf);
	if (TRIGGER_FOR_INSERT(trigger->tgtype))
		appendStringInfoString(&buf, "INSERT");
	if (TRIGGER_FOR_UPDATE(trigger->tgtype))
		appendStringInfo(&buf, "%sUPDATE", buf.len ? " OR " : "");
	if (TRIGGER_FOR_DELETE(trigger->tgtype))
		appendStringInfo(&buf, "%sDELETE", buf.len ? " OR " : "");
	if (TRIGGER_FOR_TRUNCATE(trigger->tgtype))
		appendStringInfo(&buf, "%sTRUNCATE", buf.len ? " OR " : "");
	return buf.data;
}

/* tgenabled in ALTER TABLE's words. */
static const char *
trigger_enabled(char tgenabled)
{
	switch (tgenabled)
	{
		case TRIGGER_FIRES_ON_ORIGIN:
			return "enabled";
		case TRIGGER_FIRES_ALWAYS:
			return "enabled always";
		case TRIGGER_FIRES_ON_REPLICA:
			return "enabled replica";
		default:
			return "DISABLED";
	}
}

static void
explain_capture(Explain *ex, FlowPlan *plan)
{
	ListCell   *lc;

	foreach(lc, ex->entry->source_relids)
	{
		Oid			relid = lfirst_oid(lc);
		Relation	rel = relation_open(relid, AccessShareLock);
		TriggerDesc *trigdesc = rel->trigdesc;

		add_line(ex, 0, "Capture triggers on %s:", relation_text(relid));
		for (int i = 0; trigdesc && i < trigdesc->numtriggers; i++)
		{
			Trigger    *trigger = &trigdesc->triggers[i];
			StringInfoData transition;

			if (!capture_is_flowpg_trigger(relid, trigger->tgname))
				continue;
			initStringInfo(&transition);
			if (trigger->tgoldtable)
				appendStringInfo(&transition, " OLD TABLE AS %s",
								 quote_identifier(trigger->tgoldtable));
			if (trigger->tgnewtable)
				appendStringInfo(&transition, " NEW TABLE AS %s",
								 quote_identifier(trigger->tgnewtable));
			add_line(ex, 1, "%s: %s %s FOR EACH %s%s%s, %s",
					 quote_identifier(trigger->tgname),
					 TRIGGER_FOR_BEFORE(trigger->tgtype) ? "BEFORE" :
					 TRIGGER_FOR_INSTEAD(trigger->tgtype) ? "INSTEAD OF" : "AFTER",
					 trigger_events(trigger),
					 TRIGGER_FOR_ROW(trigger->tgtype) ? "ROW" : "STATEMENT",
					 transition.len ? ", REFERENCING" : "", transition.data,
					 trigger_enabled(trigger->tgenabled));
		}
		if (!capture_triggers_complete(relid))
			add_line(ex, 1, "Incomplete: some of flowpg's capture triggers are missing");
		relation_close(rel, AccessShareLock);
	}
	if (ex->streaming && plan->retract_refusal)
		add_line(ex, 1, "Changes: inserted rows go through the operator graph into the state; "
				 "the windows of updated and deleted rows are recomputed (dirty log), because %s",
				 plan->retract_refusal);
	else if (ex->streaming)
		add_line(ex, 1, "Changes: inserted rows go through the operator graph into the state; "
				 "updated and deleted rows are taken back out of it (retracted)");
	else
		add_line(ex, 1, "Changes: their windows are logged as dirty and recomputed by the next run");
}

static void
explain_state(Explain *ex)
{
	static const char *const statuses[] = {"not loaded", "recovering", "active"};
	StreamStats st;

	if (!ex->streaming)
		return;
	if (!registry_available())
	{
		add_line(ex, 0, "Streaming state: none (flowpg is not in shared_preload_libraries)");
		return;
	}
	if (!registry_get_stats(ex->entry->flow_id, &st))
	{
		add_line(ex, 0, "Streaming state: not loaded");
		return;
	}
	add_line(ex, 0, "Streaming state: " INT64_FORMAT " groups, " INT64_FORMAT " bytes (%s)",
			 st.state_groups, st.state_bytes, statuses[st.status]);
	add_line(ex, 0, "Queue: " INT64_FORMAT " batches, " INT64_FORMAT " bytes",
			 st.queued_batches, st.queued_bytes);
}

/* The refresh's statements, EXPLAINed in a subtransaction rolled back. */
typedef struct RefreshExplain
{
	Explain    *ex;
	RefreshStatements *stmts;
} RefreshExplain;

static void
explain_statement(Explain *ex, int indent, const char *options, const char *sql,
				  int nargs, Oid *argtypes, Datum *args)
{
	int			rc = SPI_execute_with_args(psprintf("EXPLAIN %s%s", options, sql),
										   nargs, argtypes, args, NULL, false, 0);

	if (rc != SPI_OK_UTILITY)
		elog(ERROR, "flowpg could not explain \"%s\": %s", sql, SPI_result_code_string(rc));
	for (uint64 i = 0; i < SPI_processed; i++)
		add_line(ex, indent, "%s", SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1));
}

static void
explain_refresh_statements(void *arg)
{
	RefreshExplain *re = arg;
	Explain    *ex = re->ex;
	SinkRefreshStatements *sink = &re->stmts->sink;

	if (sink->delete_sql == NULL)
		add_line(ex, 1, "Delete: none (a recording rule keeps the rows of earlier ticks)");
	else
	{
		add_line(ex, 1, "Delete: %s", sink->delete_sql);
		for (int i = 0; i < sink->nargs; i++)
			add_line(ex, 2, "$%d = %s", i + 1,
					 quote_literal_cstr(datum_text(sink->argtypes[i], sink->args[i])));
		explain_statement(ex, 2, "", sink->delete_sql, sink->nargs, sink->argtypes, sink->args);
	}
	add_line(ex, 1, "Insert: %s", sink->insert_sql);
	explain_statement(ex, 2, "", sink->insert_sql, 0, NULL, NULL);
	if (sink->cleanup_sql)
	{
		add_line(ex, 1, "Then, the sink being shared: %s", sink->cleanup_sql);
		explain_statement(ex, 2, "", sink->cleanup_sql, sink->nargs, sink->argtypes, sink->args);
	}
	if (ex->analyze)
	{
		add_line(ex, 1, "Query, analyzed (rolled back; the sink is not written):");
		explain_statement(ex, 2, "(ANALYZE) ", re->stmts->select_sql, 0, NULL, NULL);
	}
}

/*
 * The statements a run refreshing the sample window executes (a whole
 * recompute for flows without a window or using now()); the streaming
 * engine runs the same for its dirty windows.
 */
static void
explain_refresh(Explain *ex, RefreshRun *run, FlowPlan *plan, WindowProbe *probe, int64 x)
{
	const char *title = ex->streaming ? "Recompute (dirty windows)" : "Refresh";
	bool		whole = probe == NULL || plan->uses_now;
	RefreshStatements stmts;
	RefreshExplain re = {ex, &stmts};
	ErrorData  *edata;
	bool		expired = false;

	if (!refresh_statements(run, whole, x, &stmts))
	{
		/* older than expire_after: the window of now() is maintained */
		expired = true;
		x = window_ordinal_from_timestamptz(plan->time_type, GetCurrentTransactionStartTimestamp());
		if (!refresh_statements(run, false, x, &stmts))
			elog(ERROR, "the window holding now() is not maintained");
	}
	if (plan->recording_rule)
		add_line(ex, 0, "%s: the rows of the current tick, replaced", title);
	else if (stmts.ranges == NIL)
		add_line(ex, 0, "%s: the whole flow", title);
	else
	{
		WindowRange *r = linitial(stmts.ranges);

		Assert(list_length(stmts.ranges) == 1 && !r->from_beginning);
		if (whole)
			add_line(ex, 0, "%s: the whole flow within expire_after, the times from %s on",
					 title, ordinal_text(plan, r->start));
		else
			add_line(ex, 0, "%s: the window of the times [%s, %s)", title,
					 ordinal_text(plan, r->start),
					 r->unbounded ? "infinity" : ordinal_text(plan, r->end));
	}
	if (expired)
		add_line(ex, 1, "The sample window is older than expire_after: the window of now() instead");
	edata = subxact_run_rolled_back(explain_refresh_statements, &re);
	if (edata)
		ReThrowError(edata);
}

static void
explain_in_run(Explain *ex, RefreshRun *run, FlowPlan *plan, WindowProbe *probe)
{
	FlowEntry  *entry = ex->entry;
	int64		x = 0;
	ListCell   *lc;

	add_line(ex, 0, "Flow: %s", entry->flow_name);
	add_line(ex, 1, "Owner: %s", GetUserNameFromId(entry->owner, false));
	add_line(ex, 1, "State: %s%s%s", entry->state, entry->state_reason ? ": " : "",
			 entry->state_reason ? entry->state_reason : "");
	foreach(lc, entry->source_relids)
		add_line(ex, 1, "Source: %s", relation_text(lfirst_oid(lc)));
	add_line(ex, 1, "Sink: %s", relation_text(entry->sink_relid));
	explain_mode(ex);
	explain_window(ex, run, plan, probe, &x);
	explain_schedule(ex, plan);
	explain_keys(ex, plan);
	explain_aggregates(ex, plan);
	explain_capture(ex, plan);
	explain_state(ex);
	explain_refresh(ex, run, plan, probe, x);
}

/* flowpg.explain_flow(flow_name, analyze): the flow's explanation, a line a row. */
Datum
flowpg_explain_flow(PG_FUNCTION_ARGS)
{
	char	   *flow_name = flow_required_text_arg(fcinfo, 0, "flow_name");
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Explain		ex = {0};
	RefreshRun	run;
	ListCell   *lc;

	if (PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("analyze must not be NULL")));
	ex.analyze = PG_GETARG_BOOL(1);
	ex.entry = flow_owned_by_caller(flow_name);
	ex.streaming = flow_on_streams(ex.entry);
	ex.memory = CurrentMemoryContext;
	/* as a refresh runs its statements: the owner, restricted, pinned settings, SPI */
	refresh_run_begin(&run, ex.entry, PROGRESS_EXPLAIN);
	explain_in_run(&ex, &run, run.plan, run.probe);
	refresh_run_end(&run);

	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
	foreach(lc, ex.lines)
	{
		Datum		value = CStringGetTextDatum(lfirst(lc));
		bool		isnull = false;

		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, &value, &isnull);
	}
	return (Datum) 0;
}
