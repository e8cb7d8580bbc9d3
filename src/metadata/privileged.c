/*-------------------------------------------------------------------------
 *
 * privileged.c
 *	  Statements run as the extension's owner (the owner of flowpg.flow):
 *	  reads and writes of flowpg's tables for any caller, and the capture
 *	  triggers and dependency views flowpg creates for a flow's owner, who
 *	  may not own the extension.
 *
 * The caller's identity is switched with SetUserIdAndSecContext in a
 * restricted security context under a search_path of only pg_catalog, so
 * no object of the caller's is found by name and no function of the
 * caller's can run with the owner's rights.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

#include "privileged.h"
#include "settings.h"

/* The owner of flowpg.flow (looked up here: catalog.c calls this file). */
static Oid
extension_owner(void)
{
	Oid			relid = get_relname_relid("flow", get_namespace_oid("flowpg", false));
	HeapTuple	tuple;
	Oid			owner;

	tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	if (!HeapTupleIsValid(tuple))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("flowpg's catalog is missing"),
				 errhint("Run CREATE EXTENSION flowpg in this database.")));
	owner = ((Form_pg_class) GETSTRUCT(tuple))->relowner;
	ReleaseSysCache(tuple);
	return owner;
}

void
privileged_begin(PrivilegedAccess *access)
{
	access->caller_context = CurrentMemoryContext;
	GetUserIdAndSecContext(&access->save_userid, &access->save_sec_context);
	SetUserIdAndSecContext(extension_owner(),
						   access->save_sec_context |
						   SECURITY_LOCAL_USERID_CHANGE |
						   SECURITY_RESTRICTED_OPERATION);
	/* no object of the caller's may be found by name while privileged */
	access->nestlevel = settings_push_safe_search_path();
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
}

void
privileged_end(PrivilegedAccess *access)
{
	SPI_finish();
	flow_settings_pop(access->nestlevel);
	SetUserIdAndSecContext(access->save_userid, access->save_sec_context);
}

static PrivilegedAccess open_query_access;
static bool open_query = false;

void
privileged_query(const char *sql, int nargs, Oid *argtypes, Datum *args,
						 const char *nulls)
{
	int			rc;

	/*
	 * Still set when an error struck between a query and its _end: the
	 * abort has unwound its SPI connection, user and settings since.
	 */
	open_query = false;
	privileged_begin(&open_query_access);
	open_query = true;
	rc = SPI_execute_with_args(sql, nargs, argtypes, args, nulls, false, 0);
	if (rc < 0)
		elog(ERROR, "flowpg could not run \"%s\": %s", sql, SPI_result_code_string(rc));
}

void
privileged_query_end(void)
{
	Assert(open_query);
	open_query = false;
	privileged_end(&open_query_access);
}

bool		privileged_own_ddl = false;

void
privileged_execute(const char *sql, int nargs, Oid *argtypes, Datum *args,
						   const char *nulls)
{
	bool		was_own_ddl = privileged_own_ddl;

	/* flowpg's own DDL (dependency views, capture triggers) is not policed */
	privileged_own_ddl = true;
	PG_TRY();
	{
		privileged_query(sql, nargs, argtypes, args, nulls);
		privileged_query_end();
	}
	PG_FINALLY();
	{
		privileged_own_ddl = was_own_ddl;
	}
	PG_END_TRY();
}

void
privileged_execute_for_flow(const char *sql, int64 flow_id)
{
	Oid			types[1] = {INT8OID};
	Datum		values[1] = {Int64GetDatum(flow_id)};

	privileged_execute(sql, 1, types, values, NULL);
}
