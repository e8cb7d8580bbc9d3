/*-------------------------------------------------------------------------
 *
 * sink_prepare.c
 *	  Preparing a flow's sink: creating a missing one, checking an existing
 *	  one, and installing its TRUNCATE guard (the trigger's function,
 *	  in ddl_guards.c, makes its flows recompute).
 *
 * A missing sink is created with one column per output of the flow's query,
 * an update_at timestamptz column (unless an output has that name) and a
 * unique index (NULLS NOT DISTINCT, as GROUP BY puts NULL keys into one
 * group) on the group key columns.  An existing sink is checked against
 * the flow's outputs (sink_columns.c: columns, assignment casts, keys) and
 * against the flows that write it already (sink_sharing.c).  The DDL runs
 * as the calling user, who then owns the sink, and takes every identifier
 * quoted.  sink.c writes the sink.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/ruleutils.h"
#include "utils/syscache.h"

#include "catalog.h"
#include "privileged.h"
#include "sink.h"
#include "sink_sharing.h"
#include "trust.h"

/* Runs one DDL statement; the caller is connected to SPI. */
static void
run_utility(const char *sql)
{
	int			rc = SPI_execute(sql, false, 0);

	if (rc != SPI_OK_UTILITY)
		elog(ERROR, "flowpg could not run \"%s\": %s", sql, SPI_result_code_string(rc));
}

static Oid
create_sink(RangeVar *rv, FlowPlan *plan)
{
	StringInfoData sql;
	Oid			relid;

	initStringInfo(&sql);
	appendStringInfo(&sql, "CREATE TABLE %s (",
					 rv->schemaname ? quote_qualified_identifier(rv->schemaname, rv->relname)
					 : quote_identifier(rv->relname));
	for (int i = 0; i < plan->noutputs; i++)
	{
		FlowOutput *out = &plan->outputs[i];

		appendStringInfo(&sql, "%s%s %s", i > 0 ? ", " : "", quote_identifier(out->name),
						 format_type_extended(out->type, out->typmod,
											  FORMAT_TYPE_TYPEMOD_GIVEN |
											  FORMAT_TYPE_FORCE_QUALIFY));
		if (OidIsValid(out->collation) && out->collation != get_typcollation(out->type))
			appendStringInfo(&sql, " COLLATE %s", generate_collation_name(out->collation));
	}
	/* the time of each write, unless the flow writes a column of that name */
	if (!sink_is_output(plan, "update_at"))
		appendStringInfoString(&sql, ", update_at timestamp with time zone NOT NULL DEFAULT pg_catalog.now()");
	appendStringInfoChar(&sql, ')');
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	run_utility(sql.data);
	relid = RangeVarGetRelid(rv, NoLock, false);

	if (sink_has_group_keys(plan))
	{
		resetStringInfo(&sql);
		appendStringInfo(&sql, "CREATE UNIQUE INDEX ON %s (", sink_qualified_relation_name(relid));
		sink_append_group_columns(&sql, plan);
		appendStringInfoString(&sql, ") NULLS NOT DISTINCT");
		run_utility(sql.data);
	}
	SPI_finish();
	return relid;
}

char *
sink_untrusted_code(Oid sink_relid, FlowPlan *plan, Oid owner, bool writes)
{
	char	   *untrusted = NULL;
	ListCell   *lc;

	/* a partitioned sink's rows land in its partitions, with their own code */
	foreach(lc, writes ? find_all_inheritors(sink_relid, NoLock, NULL) : NIL)
	{
		Oid			relid = lfirst_oid(lc);
		Bitmapset  *written = NULL;

		if (untrusted != NULL)
			break;
		/* the columns written: the outputs and those flowpg fills itself */
		for (int c = 0; c < plan->noutputs; c++)
			written = bms_add_member(written, get_attnum(relid, plan->outputs[c].name));
		written = bms_add_member(written, get_attnum(relid, "update_at"));
		written = bms_add_member(written, get_attnum(relid, SINK_TS_PLACEHOLDER));
		untrusted = trust_untrusted_table_code(relid, owner, true, written);
	}
	foreach(lc, plan->source_relids)
		if (untrusted == NULL)
			untrusted = trust_untrusted_table_code(lfirst_oid(lc), owner, false, NULL);
	return untrusted;
}

void
sink_check_owner(Oid sink_relid, Oid flow_owner)
{
	HeapTuple	tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(sink_relid));
	Oid			sink_owner;

	if (!HeapTupleIsValid(tuple))
		elog(ERROR, "cache lookup failed for relation %u", sink_relid);
	sink_owner = ((Form_pg_class) GETSTRUCT(tuple))->relowner;
	ReleaseSysCache(tuple);
	/* superusers count as members of every role: not for this */
	if (sink_owner != flow_owner && !is_member_of_role_nosuper(flow_owner, sink_owner))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("sink table %s is owned by role %s, not by the flow's owner %s",
						get_rel_name(sink_relid), GetUserNameFromId(sink_owner, false),
						GetUserNameFromId(flow_owner, false)),
				 errdetail("flowpg writes a sink with the rights of the flow's owner: the triggers of another role's table would run with them."),
				 errhint("Use a sink owned by the flow's owner or by a role it is a member of.")));
}

static void
check_existing_sink(Oid relid, const char *flow_name, FlowPlan *plan, int64 own_flow_id)
{
	char		relkind = get_rel_relkind(relid);
	const char *relname = get_rel_name(relid);
	ListCell   *lc;

	if (relkind != RELKIND_RELATION && relkind != RELKIND_PARTITIONED_TABLE)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("sink \"%s\" is not a table", relname),
				 errdetail("%s", relkind == RELKIND_VIEW ? "It is a view." :
						   relkind == RELKIND_MATVIEW ? "It is a materialized view." :
						   relkind == RELKIND_FOREIGN_TABLE ? "It is a foreign table." :
						   "A sink must be an ordinary or partitioned table."),
				 errhint("Name a table, or a name that does not exist yet to have flowpg create the sink.")));
	if (get_rel_persistence(relid) == RELPERSISTENCE_TEMP)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("sink \"%s\" is a temporary table", relname),
				 errdetail("Temporary tables are invisible to flowpg's background worker.")));
	foreach(lc, plan->source_relids)
		if (lfirst_oid(lc) == relid)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("flow \"%s\" cannot write into its own source table \"%s\"",
							flow_name, relname)));
	sink_check_sharing(relid, flow_name, plan, own_flow_id);
	if (pg_class_aclcheck(relid, GetUserId(),
						  ACL_SELECT | ACL_INSERT | ACL_UPDATE | ACL_DELETE) != ACLCHECK_OK ||
		pg_class_aclmask(relid, GetUserId(),
						 ACL_SELECT | ACL_INSERT | ACL_UPDATE | ACL_DELETE, ACLMASK_ALL) !=
		(ACL_SELECT | ACL_INSERT | ACL_UPDATE | ACL_DELETE))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for sink table %s", relname),
				 errdetail("A flow runs as its owner, who needs SELECT, INSERT, UPDATE and DELETE on the sink.")));
	sink_check_owner(relid, GetUserId());
	sink_check_columns(relid, plan);
}

Oid
sink_prepare(RangeVar *rv, const char *flow_name, FlowPlan *plan,
			 int64 own_flow_id, bool *created)
{
	Oid			relid = RangeVarGetRelid(rv, ShareRowExclusiveLock, true);

	*created = !OidIsValid(relid);
	if (*created)
	{
		if (rv->relpersistence == RELPERSISTENCE_TEMP ||
			(rv->schemaname && strcmp(rv->schemaname, "pg_temp") == 0))
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("a sink cannot be a temporary table")));
		relid = create_sink(rv, plan);
		if (get_rel_persistence(relid) == RELPERSISTENCE_TEMP)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("a sink cannot be a temporary table"),
					 errdetail("The first schema of search_path is pg_temp."),
					 errhint("Qualify the sink's name with a schema.")));
	}
	else
		check_existing_sink(relid, flow_name, plan, own_flow_id);
	return relid;
}

/*
 * The sink's guard: an AFTER TRUNCATE trigger.  A truncated sink no longer
 * equals the flow's query, so the flow is recomputed as a whole.  It is
 * also what tells a restore that the sink's rows are in (pg_restore
 * creates triggers after a table's data).
 */
#define SINK_GUARD "flowpg_sink_truncate"

bool
sink_is_guard(const char *tgname)
{
	return strcmp(tgname, SINK_GUARD) == 0;
}

bool
sink_has_guard(Oid sink_relid)
{
	return OidIsValid(get_trigger_oid(sink_relid, SINK_GUARD, true));
}

void
sink_install_guard(Oid sink_relid)
{
	char	   *sink = sink_qualified_relation_name(sink_relid);

	if (sink_has_guard(sink_relid))
		return;
	privileged_execute(psprintf("CREATE TRIGGER %s AFTER TRUNCATE ON %s "
										"FOR EACH STATEMENT EXECUTE FUNCTION flowpg._sink_truncated()",
										SINK_GUARD, sink),
							   0, NULL, NULL, NULL);
	/* a sink truncated by a replica-role session is no less stale */
	privileged_execute(psprintf("ALTER TABLE %s ENABLE ALWAYS TRIGGER %s", sink, SINK_GUARD),
							   0, NULL, NULL, NULL);
}

void
sink_remove_guard(Oid sink_relid)
{
	if (get_rel_name(sink_relid) == NULL || !sink_has_guard(sink_relid) ||
		catalog_get_by_sink(sink_relid) != NULL)
		return;
	privileged_execute(psprintf("DROP TRIGGER %s ON %s", SINK_GUARD,
										sink_qualified_relation_name(sink_relid)),
							   0, NULL, NULL, NULL);
}

