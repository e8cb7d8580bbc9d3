/*-------------------------------------------------------------------------
 *
 * flow_names.c
 *	  The flow a caller names: flow names read by PostgreSQL's rules for
 *	  identifiers, required arguments, and the owner's check.
 *
 * Every SQL function taking a flow's name goes through flow_name_parse
 * (by way of flow_name_arg or flow_owned_by_caller), so names given as
 * text follow the rules of table names given as text (regclass).
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

#include "catalog.h"
#include "flow_names.h"
#include "guc.h"
#include "pending.h"
#include "pool.h"
#include "preload.h"
#include "restore.h"

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
bool
flow_required_bool_arg(FunctionCallInfo fcinfo, int argno, const char *argname)
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
