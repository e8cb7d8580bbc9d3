/*-------------------------------------------------------------------------
 *
 * greptime.c
 *	  GreptimeDB's flow statements, through flowpg.execute(statement): the
 *	  executor.
 *
 * The text is parsed into statements (greptime_parse.c), run in order and
 * mapped onto the lifecycle of flows (flow_create.c, flow_drop.c, flow_flush.c): CREATE [OR REPLACE] FLOW, DROP
 * FLOW, SHOW FLOWS, SHOW CREATE FLOW, SHOW FLOW STATUS, ADMIN FLUSH_FLOW and
 * COMMENT ON FLOW; each returns rows of (flow_name, result, affected_rows).
 * A flow whose source tables do not exist yet is refused, or with
 * defer_on_missing_source kept pending (pending_flow.c) and created, as its
 * owner under the settings it was created with, when a table is created
 * (flowpg_start_pending_flows, an event trigger, and a worker's
 * pending_flow_start, in pending_flow.c, which runs its CREATE FLOW again
 * here).  flowpg._pending_flow_parts shows what a pending flow's statement
 * would create.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "parser/parser.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"
#include "utils/varlena.h"

#include "catalog.h"
#include "flow_locks.h"
#include "privileged.h"
#include "tql.h"
#include "flow_create.h"
#include "flow_drop.h"
#include "flow_flush.h"
#include "greptime.h"
#include "greptime_parse.h"
#include "pending.h"
#include "planner.h"
#include "settings.h"

PG_FUNCTION_INFO_V1(flowpg_execute);

/* The result rows: (flow_name, result, affected_rows). */
static void
put_row(ReturnSetInfo *rsinfo, const char *flow_name, const char *result,
		bool has_rows, int64 rows)
{
	Datum		values[3];
	bool		nulls[3] = {flow_name == NULL, result == NULL, !has_rows};

	values[0] = flow_name ? CStringGetTextDatum(flow_name) : (Datum) 0;
	values[1] = result ? CStringGetTextDatum(result) : (Datum) 0;
	values[2] = Int64GetDatum(rows);
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
}

/* The tables the query names that do not exist (search_path as now). */
typedef struct SourcesContext
{
	List	   *ctes;			/* WITH names in scope */
	List	   *missing;		/* names */
} SourcesContext;

static bool
sources_walker(Node *node, SourcesContext *cxt)
{
	if (node == NULL)
		return false;
	if (IsA(node, SelectStmt) && ((SelectStmt *) node)->withClause)
	{
		SelectStmt *sel = (SelectStmt *) node;
		WithClause *with = sel->withClause;
		List	   *outer = cxt->ctes;
		ListCell   *lc;
		bool		result;

		/* its names are in scope in its own queries and the rest of the SELECT */
		cxt->ctes = list_copy(outer);
		foreach(lc, with->ctes)
			cxt->ctes = lappend(cxt->ctes, ((CommonTableExpr *) lfirst(lc))->ctename);
		sel->withClause = NULL;
		result = sources_walker((Node *) with->ctes, cxt) || sources_walker(node, cxt);
		sel->withClause = with;
		cxt->ctes = outer;
		return result;
	}
	if (IsA(node, CommonTableExpr))
		return sources_walker(((CommonTableExpr *) node)->ctequery, cxt);
	if (IsA(node, RangeVar))
	{
		RangeVar   *rv = (RangeVar *) node;
		ListCell   *lc;
		Oid			relid;

		if (rv->schemaname == NULL)
			foreach(lc, cxt->ctes)
				if (strcmp(lfirst(lc), rv->relname) == 0)
					return false;
		relid = RangeVarGetRelid(rv, NoLock, true);
		if (!OidIsValid(relid))
			cxt->missing = lappend(cxt->missing,
								   rv->schemaname ? psprintf("%s.%s", rv->schemaname, rv->relname) :
								   rv->relname);
		return false;
	}
	return raw_expression_tree_walker(node, sources_walker, (void *) cxt);
}

/* The missing tables as a list for messages, NULL when none. */
static char *
find_missing_sources(Parser *p, const char *query, int query_start)
{
	SourcesContext cxt = {NIL, NIL};
	List	   *raw;
	StringInfoData buf;
	ListCell   *lc;

	/* raw_parser's positions are the query's */
	p->query_offset = pg_mbstrlen_with_len(p->statement, query_start);
	greptime_positions_push(p);
	raw = raw_parser(query, RAW_PARSE_DEFAULT);
	greptime_positions_pop(p);
	p->query_offset = 0;
	/* anything but one SELECT: the planner says what is wrong */
	if (list_length(raw) == 1 && IsA(linitial_node(RawStmt, raw)->stmt, SelectStmt))
		(void) sources_walker(linitial_node(RawStmt, raw)->stmt, &cxt);
	if (cxt.missing == NIL)
		return NULL;
	initStringInfo(&buf);
	foreach(lc, cxt.missing)
		appendStringInfo(&buf, "%s%s", foreach_current_index(lc) ? ", " : "",
						 (char *) lfirst(lc));
	return buf.data;
}

static void
check_pending_owner(PendingFlow *pending)
{
	if (!has_privs_of_role(GetUserId(), pending->owner))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("must be owner of flow \"%s\"", pending->flow_name)));
}

static bool
execute_create(Parser *p, FlowStatement *s, ReturnSetInfo *rsinfo, bool starting_pending)
{
	const char *query = pnstrdup(p->text + s->query_start, s->query_end - s->query_start);
	int			offset = pg_mbstrlen_with_len(p->statement, s->query_start);
	FlowQuerySource source = {p->statement, offset, true, false};
	/* as written, before the scanner's fixes (SHOW CREATE FLOW shows it) */
	const char *written = pnstrdup(p->statement + s->query_start, s->query_end - s->query_start);
	FlowDefinition def = {0};
	PendingFlow *pending;
	FlowEntry  *existing;
	FlowCreated outcome;
	char	   *missing;

	/* TQL: its SQL, whose errors point into that SQL */
	if (s->tql)
	{
		char	   *value_name;

		if (s->eval_interval == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
					 errmsg("a TQL flow needs EVAL INTERVAL"),
					 errdetail("It evaluates its PromQL expression at the steps of its range at every tick."),
					 errhint("Add EVAL INTERVAL '1m' (for example) before AS.")));
		query = tql_translate(query, s->tql_columns, &value_name);
		source.statement = query;
		source.offset = 0;
	}

	flow_lock_name(s->flow_name);
	/* another session may have started it while we waited for the lock */
	if (starting_pending && !pending_exists(s->flow_name))
		return false;
	existing = catalog_get_by_name(s->flow_name);
	pending = starting_pending ? NULL : pending_get(s->flow_name);
	missing = find_missing_sources(p, query, s->query_start);

	if (missing)
	{
		PendingFlow flow;

		if (!s->defer_on_missing_source)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_TABLE),
					 errmsg("missing source tables for flow \"%s\": %s", s->flow_name, missing),
					 errhint("Create the tables first, or use WITH (defer_on_missing_source = true) to create a pending flow that starts when they appear.")));
		if (starting_pending)
			return false;		/* still waiting */
		if (existing || (pending && !s->or_replace))
		{
			if (s->if_not_exists)
			{
				ereport(NOTICE,
						(errcode(ERRCODE_DUPLICATE_OBJECT),
						 errmsg("flow \"%s\" already exists, skipping", s->flow_name)));
				put_row(rsinfo, s->flow_name, "exists", true, 0);
				return false;
			}
			if (existing && s->or_replace)
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("cannot replace flow \"%s\" by a pending flow", s->flow_name),
						 errdetail("Its new source tables do not exist: %s.", missing),
						 errhint("Drop the flow first, or create the tables.")));
			ereport(ERROR,
					(errcode(ERRCODE_DUPLICATE_OBJECT),
					 errmsg("flow \"%s\" already exists", s->flow_name),
					 errhint("Use CREATE OR REPLACE FLOW to replace it, or IF NOT EXISTS to keep it.")));
		}
		if (pending)
			check_pending_owner(pending);
		else
			flow_check_limits();
		flow.flow_name = s->flow_name;
		flow.owner = GetUserId();
		flow.statement = pnstrdup(p->statement + s->stmt_start, s->stmt_end - s->stmt_start);
		/* it is kept, listed and parsed again at every start attempt */
		if (strlen(flow.statement) > PENDING_STATEMENT_MAX)
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("the statement of pending flow \"%s\" is too long", s->flow_name),
					 errdetail("A pending flow's statement may have at most %d bytes; this one has %zu.",
							   PENDING_STATEMENT_MAX, strlen(flow.statement)),
					 errhint("Create the tables first, then the flow.")));
		flow.settings = flow_settings_capture();
		settings_warn_unsafe_search_path(GetUserId());
		flow.sink_name = s->sink_name;
		flow.comment = s->comment;
		flow.options = s->with_json;
		flow.expire_after = s->expire_after;
		pending_add(&flow, missing);
		ereport(NOTICE,
				(errmsg("flow \"%s\" is pending: it starts when %s exists", s->flow_name, missing)));
		put_row(rsinfo, s->flow_name, "pending", true, 0);
		return false;
	}

	if (pending)
	{
		if (s->if_not_exists)
		{
			ereport(NOTICE,
					(errcode(ERRCODE_DUPLICATE_OBJECT),
					 errmsg("flow \"%s\" already exists, skipping", s->flow_name)));
			put_row(rsinfo, s->flow_name, "exists", true, 0);
			return false;
		}
		if (!s->or_replace)
			ereport(ERROR,
					(errcode(ERRCODE_DUPLICATE_OBJECT),
					 errmsg("flow \"%s\" already exists", s->flow_name),
					 errdetail("It is pending: it waits for its source tables."),
					 errhint("Use CREATE OR REPLACE FLOW to replace it.")));
		check_pending_owner(pending);
		pending_remove(s->flow_name);
	}

	if (starting_pending)
		pending_remove(s->flow_name);	/* it is no longer pending */

	source.sink_exists =
		OidIsValid(RangeVarGetRelid(makeRangeVarFromNameList(stringToQualifiedNameList(s->sink_name)),
									NoLock, true));
	def.flow_name = s->flow_name;
	def.sink_name = s->sink_name;
	def.query_text = query;
	def.mode_name = s->mode;
	def.expire_after = s->expire_after;
	def.eval_interval = s->eval_interval;
	def.comment = s->comment;
	def.or_replace = s->or_replace;
	def.if_not_exists = s->if_not_exists;
	def.backfill = s->backfill;
	def.source = &source;
	def.written_query = pstrdup(written);
	def.greptime_options = s->with_json;
	def.settings = s->pinned_settings;
	def.vet_objects = starting_pending;
	/* GreptimeDB matches an existing sink's columns by position where names differ */
	def.match_by_position = true;
	def.append_only_sources = s->incremental_read;
	def.last_non_null = s->last_non_null;
	(void) flow_create(&def, &outcome);
	if (rsinfo)
		put_row(rsinfo, s->flow_name,
				outcome == FLOW_CREATED ? "created" :
				outcome == FLOW_REPLACED ? "replaced" : "exists", true, 0);
	return outcome != FLOW_KEPT;
}

/* Runs a query on flowpg's views as the caller, one result row per row. */
static void
show_rows(ReturnSetInfo *rsinfo, const char *sql, const char *pattern)
{
	Oid			types[1] = {TEXTOID};
	Datum		values[1] = {pattern ? CStringGetTextDatum(pattern) : (Datum) 0};
	char		nulls[1] = {pattern ? ' ' : 'n'};

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	/* not read-only: a fresh snapshot sees what earlier statements of the call did */
	if (SPI_execute_with_args(sql, 1, types, values, nulls, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "flowpg could not run \"%s\"", sql);
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		HeapTuple	tuple = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;

		put_row(rsinfo, SPI_getvalue(tuple, desc, 1), SPI_getvalue(tuple, desc, 2), false, 0);
	}
	SPI_finish();
}

static void
execute_statement(Parser *p, FlowStatement *s, ReturnSetInfo *rsinfo)
{
	PendingFlow *pending;
	int64		rows_before;

	switch (s->kind)
	{
		case STMT_CREATE:
			execute_create(p, s, rsinfo, false);
			break;
		case STMT_DROP:
			flow_lock_name(s->flow_name);
			pending = pending_get(s->flow_name);
			if (pending)
			{
				catalog_check_may_drop(pending->owner, s->flow_name);
				pending_remove(s->flow_name);
				put_row(rsinfo, s->flow_name, "dropped", true, 0);
			}
			else if (flow_drop(s->flow_name, s->if_exists))
				put_row(rsinfo, s->flow_name, "dropped", true, 0);
			else
				put_row(rsinfo, s->flow_name, "does not exist", true, 0);
			break;
		case STMT_SHOW_FLOWS:
			show_rows(rsinfo,
					  "SELECT flow_name, state FROM flowpg.information_schema_flows "
					  "WHERE $1 IS NULL OR flow_name LIKE $1 ORDER BY flow_name", s->pattern);
			break;
		case STMT_SHOW_CREATE:
			rows_before = tuplestore_tuple_count(rsinfo->setResult);
			show_rows(rsinfo,
					  "SELECT flow_name, flow_definition FROM flowpg.information_schema_flows "
					  "WHERE flow_name = $1", s->flow_name);
			if (tuplestore_tuple_count(rsinfo->setResult) == rows_before)
				ereport(ERROR,
						(errcode(ERRCODE_UNDEFINED_OBJECT),
						 errmsg("flow \"%s\" does not exist", s->flow_name)));
			break;
		case STMT_SHOW_STATUS:
			show_rows(rsinfo,
					  "SELECT flow_name, pg_catalog.row_to_json(s)::text "
					  "FROM flowpg.information_schema_flow_statistics s "
					  "WHERE $1 IS NULL OR flow_name LIKE $1 ORDER BY flow_name", s->pattern);
			break;
		case STMT_FLUSH:
			/* a pending flow: flow_flush waits for a worker's attempt to start it */
			put_row(rsinfo, s->flow_name, "flushed", true, flow_flush(s->flow_name));
			break;
		case STMT_COMMENT:
			if (pending_exists(s->flow_name))
				ereport(ERROR,
						(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
						 errmsg("flow \"%s\" is pending: comment it once it exists, or give COMMENT in CREATE FLOW",
								s->flow_name)));
			flow_set_comment(s->flow_name, s->comment);
			put_row(rsinfo, s->flow_name, "commented", true, 0);
			break;
	}
}

/*
 * Parses and runs the statements of the text, in order; with
 * pending_settings, the one CREATE FLOW of a pending flow starting (its
 * result rows go nowhere): true when it was created.
 */
bool
greptime_run_statement(const char *statement, ReturnSetInfo *rsinfo, ArrayType *pending_settings)
{
	Parser		p;
	List	   *statements;
	FlowStatement *s;
	ListCell   *lc;

	memset(&p, 0, sizeof(p));
	p.error_at = -1;
	p.statement = statement;
	greptime_positions_push(&p);
	statements = greptime_parse(&p, statement);
	greptime_positions_pop(&p);
	if (pending_settings == NULL)
	{
		foreach(lc, statements)
			execute_statement(&p, lfirst(lc), rsinfo);
		return false;
	}
	/* a pending flow's statement: its CREATE FLOW alone */
	s = linitial(statements);
	if (list_length(statements) != 1 || s->kind != STMT_CREATE)
		return false;
	/* it is created once: no OR REPLACE, no IF NOT EXISTS */
	s->if_not_exists = false;
	s->or_replace = false;
	s->pinned_settings = pending_settings;
	return execute_create(&p, s, NULL, true);
}

Datum
flowpg_execute(PG_FUNCTION_ARGS)
{
	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("statement must not be NULL")));
	InitMaterializedSRF(fcinfo, 0);
	(void) greptime_run_statement(text_to_cstring(PG_GETARG_TEXT_PP(0)),
						 (ReturnSetInfo *) fcinfo->resultinfo, NULL);
	return (Datum) 0;
}

/*
 * flowpg._pending_flow_parts(statement, settings): what a pending flow's
 * flow_definition shows in GreptimeDB's layout, as an active flow's: the
 * sink schema-qualified (the schema it is, or would be created, in under
 * the flow's search_path), EVAL INTERVAL, and the query as written.  NULLs
 * when the statement no longer parses.
 */
PG_FUNCTION_INFO_V1(flowpg_pending_flow_parts);

static char *
qualified_sink(const char *sink_name, ArrayType *settings)
{
	char	   *copy = pstrdup(sink_name);
	List	   *parts;
	RangeVar   *rv;
	Oid			nspid = InvalidOid;
	Oid			relid;
	int			nestlevel;
	Datum	   *elems;
	int			nelems;

	if (!SplitIdentifierString(copy, '.', &parts) || list_length(parts) != 1)
		return pstrdup(sink_name);	/* qualified as written */
	rv = makeRangeVar(NULL, linitial(parts), -1);

	/* under the search_path the flow starts with */
	nestlevel = NewGUCNestLevel();
	deconstruct_array(settings, TEXTOID, -1, false, TYPALIGN_INT, &elems, NULL, &nelems);
	for (int i = 0; i < nelems; i++)
	{
		char	   *setting = TextDatumGetCString(elems[i]);

		if (strncmp(setting, "search_path=", 12) == 0)
			(void) set_config_option("search_path", setting + 12, PGC_USERSET, PGC_S_SESSION,
									 GUC_ACTION_SAVE, true, 0, false);
	}
	relid = RangeVarGetRelid(rv, NoLock, true);
	if (OidIsValid(relid))
		nspid = get_rel_namespace(relid);
	else
	{
		List	   *path = fetch_search_path(false);

		if (path != NIL && !isAnyTempNamespace(linitial_oid(path)))
			nspid = linitial_oid(path);
	}
	AtEOXact_GUC(true, nestlevel);
	if (!OidIsValid(nspid) || get_namespace_name(nspid) == NULL)
		return pstrdup(sink_name);
	return psprintf("%s.%s", quote_identifier(get_namespace_name(nspid)),
					quote_identifier(rv->relname));
}

Datum
flowpg_pending_flow_parts(PG_FUNCTION_ARGS)
{
	char	   *statement = text_to_cstring(PG_GETARG_TEXT_PP(0));
	ArrayType  *settings = PG_GETARG_ARRAYTYPE_P(1);
	MemoryContext oldcontext = CurrentMemoryContext;
	TupleDesc	desc;
	Datum		values[3];
	bool		nulls[3] = {true, true, true};
	Parser		p;
	FlowStatement *s = NULL;

	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	memset(&p, 0, sizeof(p));
	p.error_at = -1;
	PG_TRY();
	{
		List	   *statements = greptime_parse(&p, statement);

		s = linitial(statements);
		if (list_length(statements) != 1 || s->kind != STMT_CREATE)
			s = NULL;
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		/* a statement this version no longer reads: shown as written */
		MemoryContextSwitchTo(oldcontext);
		edata = CopyErrorData();
		if (edata->sqlerrcode != ERRCODE_SYNTAX_ERROR &&
			edata->sqlerrcode != ERRCODE_INVALID_PARAMETER_VALUE &&
			edata->sqlerrcode != ERRCODE_FEATURE_NOT_SUPPORTED)
			PG_RE_THROW();
		FlushErrorState();
		s = NULL;
	}
	PG_END_TRY();
	if (s)
	{
		values[0] = CStringGetTextDatum(qualified_sink(s->sink_name, settings));
		nulls[0] = false;
		if (s->eval_interval)
		{
			values[1] = IntervalPGetDatum(s->eval_interval);
			nulls[1] = false;
		}
		values[2] = CStringGetTextDatum(pnstrdup(p.statement + s->query_start,
												 s->query_end - s->query_start));
		nulls[2] = false;
	}
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(desc, values, nulls)));
}
