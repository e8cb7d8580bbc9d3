/*-------------------------------------------------------------------------
 *
 * catalog.c
 *	  Reading and writing the flow catalog, table flowpg.flow.
 *
 * The catalog is the source of truth for flows; shared memory and the
 * workers are rebuilt from it.  Ordinary roles have no rights on it: these
 * functions switch to the catalog's owner (the extension owner) for the
 * duration of each access, the way PostgreSQL's own DDL writes its system
 * catalogs on behalf of an unprivileged user.  Permission to act on a flow
 * is checked by the callers (catalog_check_owner).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/inval.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

#include "catalog.h"

#define FLOW_COLUMNS \
	"flow_id, flow_name, owner::oid, mode, kind, source_tables::oid[], " \
	"sink_table::oid, query, query_tree, time_table::oid, time_column, " \
	"window_expr, expire_after, eval_interval, comment, settings, " \
	"options::text, state"

typedef struct CatalogAccess
{
	Oid			save_userid;
	int			save_sec_context;
	MemoryContext caller_context;
} CatalogAccess;

Oid
catalog_relid(void)
{
	Oid			relid = get_relname_relid("flow", get_namespace_oid("flowpg", false));

	if (!OidIsValid(relid))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("flowpg's catalog is missing"),
				 errhint("Run CREATE EXTENSION flowpg in this database.")));
	return relid;
}

bool
catalog_exists(void)
{
	Oid			nspid = get_namespace_oid("flowpg", true);

	return OidIsValid(nspid) && OidIsValid(get_relname_relid("flow", nspid));
}

static Oid
catalog_owner(void)
{
	HeapTuple	tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(catalog_relid()));
	Oid			owner;

	if (!HeapTupleIsValid(tuple))
		elog(ERROR, "cache lookup failed for flowpg's catalog");
	owner = ((Form_pg_class) GETSTRUCT(tuple))->relowner;
	ReleaseSysCache(tuple);
	return owner;
}

static void
catalog_begin(CatalogAccess *access)
{
	access->caller_context = CurrentMemoryContext;
	GetUserIdAndSecContext(&access->save_userid, &access->save_sec_context);
	SetUserIdAndSecContext(catalog_owner(),
						   access->save_sec_context |
						   SECURITY_LOCAL_USERID_CHANGE |
						   SECURITY_RESTRICTED_OPERATION);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
}

static void
catalog_end(CatalogAccess *access)
{
	SPI_finish();
	SetUserIdAndSecContext(access->save_userid, access->save_sec_context);
}

/*
 * After a write: backends caching flows (capture.c) drop their caches when
 * this commits, at the latest when they next lock a source table.
 */
static void
catalog_changed(void)
{
	CacheInvalidateRelcacheByRelid(catalog_relid());
}

static CatalogAccess open_query_access;
static bool open_query = false;

void
catalog_query_privileged(const char *sql, int nargs, Oid *argtypes, Datum *args,
						 const char *nulls)
{
	int			rc;

	Assert(!open_query);
	catalog_begin(&open_query_access);
	open_query = true;
	rc = SPI_execute_with_args(sql, nargs, argtypes, args, nulls, false, 0);
	if (rc < 0)
		elog(ERROR, "flowpg could not run \"%s\": %s", sql, SPI_result_code_string(rc));
}

void
catalog_query_privileged_end(void)
{
	Assert(open_query);
	open_query = false;
	catalog_end(&open_query_access);
}

void
catalog_execute_privileged(const char *sql, int nargs, Oid *argtypes, Datum *args,
						   const char *nulls)
{
	catalog_query_privileged(sql, nargs, argtypes, args, nulls);
	catalog_query_privileged_end();
}

void
catalog_lock_for_ddl(void)
{
	LockRelationOid(catalog_relid(), ShareRowExclusiveLock);
}

static char *
text_column(HeapTuple tuple, TupleDesc desc, int column)
{
	bool		isnull;
	Datum		value = SPI_getbinval(tuple, desc, column, &isnull);

	return isnull ? NULL : TextDatumGetCString(value);
}

static FlowEntry *
entry_from_tuple(HeapTuple tuple, TupleDesc desc)
{
	FlowEntry  *entry = palloc0(sizeof(FlowEntry));
	bool		isnull;
	Datum		value;

	entry->flow_id = DatumGetInt64(SPI_getbinval(tuple, desc, 1, &isnull));
	entry->flow_name = text_column(tuple, desc, 2);
	entry->owner = DatumGetObjectId(SPI_getbinval(tuple, desc, 3, &isnull));
	entry->mode = text_column(tuple, desc, 4);
	entry->is_aggregate = strcmp(text_column(tuple, desc, 5), "aggregate") == 0;

	value = SPI_getbinval(tuple, desc, 6, &isnull);
	{
		Datum	   *items;
		int			nitems;

		deconstruct_array(DatumGetArrayTypeP(value), OIDOID, sizeof(Oid), true,
						  TYPALIGN_INT, &items, NULL, &nitems);
		for (int i = 0; i < nitems; i++)
			entry->source_relids = lappend_oid(entry->source_relids,
											   DatumGetObjectId(items[i]));
	}
	entry->sink_relid = DatumGetObjectId(SPI_getbinval(tuple, desc, 7, &isnull));
	entry->query = text_column(tuple, desc, 8);
	entry->query_tree = text_column(tuple, desc, 9);
	value = SPI_getbinval(tuple, desc, 10, &isnull);
	entry->time_relid = isnull ? InvalidOid : DatumGetObjectId(value);
	value = SPI_getbinval(tuple, desc, 11, &isnull);
	entry->time_attno = isnull ? InvalidAttrNumber : DatumGetInt16(value);
	entry->window_expr = text_column(tuple, desc, 12);
	value = SPI_getbinval(tuple, desc, 13, &isnull);
	entry->expire_after = isnull ? NULL : DatumGetIntervalP(datumCopy(value, false, sizeof(Interval)));
	value = SPI_getbinval(tuple, desc, 14, &isnull);
	entry->eval_interval = isnull ? NULL : DatumGetIntervalP(datumCopy(value, false, sizeof(Interval)));
	entry->comment = text_column(tuple, desc, 15);
	value = SPI_getbinval(tuple, desc, 16, &isnull);
	entry->settings = DatumGetArrayTypePCopy(value);
	entry->options = text_column(tuple, desc, 17);
	entry->state = text_column(tuple, desc, 18);
	return entry;
}

/* Runs a SELECT of FLOW_COLUMNS and returns the entries, in the caller's context. */
static List *
catalog_select(const char *where, int nargs, Oid *argtypes, Datum *args)
{
	CatalogAccess access;
	List	   *entries = NIL;
	char	   *sql = psprintf("SELECT " FLOW_COLUMNS " FROM flowpg.flow %s ORDER BY flow_id", where);
	int			rc;

	catalog_begin(&access);
	/*
	 * Not read-only, so that SPI takes a new snapshot: after waiting for the
	 * DDL lock, a flow committed or dropped meanwhile must be seen.
	 */
	rc = SPI_execute_with_args(sql, nargs, argtypes, args, NULL, false, 0);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "reading flowpg.flow failed: %s", SPI_result_code_string(rc));
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		MemoryContext old = MemoryContextSwitchTo(access.caller_context);

		entries = lappend(entries, entry_from_tuple(SPI_tuptable->vals[i],
													SPI_tuptable->tupdesc));
		MemoryContextSwitchTo(old);
	}
	catalog_end(&access);
	return entries;
}

FlowEntry *
catalog_get_by_id(int64 flow_id)
{
	Oid			argtypes[1] = {INT8OID};
	Datum		args[1] = {Int64GetDatum(flow_id)};
	List	   *entries = catalog_select("WHERE flow_id = $1", 1, argtypes, args);

	return entries ? linitial(entries) : NULL;
}

FlowEntry *
catalog_get_by_name(const char *flow_name)
{
	Oid			argtypes[1] = {TEXTOID};
	Datum		args[1] = {CStringGetTextDatum(flow_name)};
	List	   *entries = catalog_select("WHERE flow_name = $1", 1, argtypes, args);

	return entries ? linitial(entries) : NULL;
}

List *
catalog_get_all(void)
{
	return catalog_select("", 0, NULL, NULL);
}

FlowEntry *
catalog_get_by_sink(Oid sink_relid)
{
	Oid			argtypes[1] = {OIDOID};
	Datum		args[1] = {ObjectIdGetDatum(sink_relid)};
	List	   *entries = catalog_select("WHERE sink_table = $1::regclass", 1, argtypes, args);

	return entries ? linitial(entries) : NULL;
}

List *
catalog_get_by_relation(Oid relid)
{
	Oid			argtypes[1] = {OIDOID};
	Datum		args[1] = {ObjectIdGetDatum(relid)};

	return catalog_select("WHERE sink_table = $1::regclass OR $1::regclass = ANY (source_tables)",
						  1, argtypes, args);
}

static Datum
oid_list_to_array(List *oids)
{
	Datum	   *items = palloc(sizeof(Datum) * list_length(oids));
	ListCell   *lc;
	int			n = 0;

	foreach(lc, oids)
		items[n++] = ObjectIdGetDatum(lfirst_oid(lc));
	return PointerGetDatum(construct_array(items, n, OIDOID, sizeof(Oid), true,
										   TYPALIGN_INT));
}

/* The values of the written columns, in the order of WRITE_COLUMNS. */
#define WRITE_COLUMNS \
	"flow_name, owner, mode, kind, source_tables, sink_table, query, " \
	"query_tree, time_table, time_column, window_expr, expire_after, " \
	"eval_interval, comment, settings, options"
#define WRITE_NARGS 16

static void
entry_to_args(FlowEntry *entry, Oid *types, Datum *values, char *nulls)
{
	int			i = 0;

#define ARG(type, value, isnull) \
	(types[i] = (type), values[i] = (isnull) ? (Datum) 0 : (value), \
	 nulls[i] = (isnull) ? 'n' : ' ', i++)

	ARG(TEXTOID, CStringGetTextDatum(entry->flow_name), false);
	ARG(OIDOID, ObjectIdGetDatum(entry->owner), false);
	ARG(TEXTOID, CStringGetTextDatum(entry->mode), false);
	ARG(TEXTOID, CStringGetTextDatum(entry->is_aggregate ? "aggregate" : "projection"), false);
	ARG(OIDARRAYOID, oid_list_to_array(entry->source_relids), false);
	ARG(OIDOID, ObjectIdGetDatum(entry->sink_relid), false);
	ARG(TEXTOID, CStringGetTextDatum(entry->query), false);
	ARG(TEXTOID, CStringGetTextDatum(entry->query_tree), false);
	ARG(OIDOID, ObjectIdGetDatum(entry->time_relid), !OidIsValid(entry->time_relid));
	ARG(INT2OID, Int16GetDatum(entry->time_attno), !OidIsValid(entry->time_relid));
	ARG(TEXTOID, entry->window_expr ? CStringGetTextDatum(entry->window_expr) : 0,
		entry->window_expr == NULL);
	ARG(INTERVALOID, IntervalPGetDatum(entry->expire_after), entry->expire_after == NULL);
	ARG(INTERVALOID, IntervalPGetDatum(entry->eval_interval), entry->eval_interval == NULL);
	ARG(TEXTOID, entry->comment ? CStringGetTextDatum(entry->comment) : 0,
		entry->comment == NULL);
	ARG(TEXTARRAYOID, PointerGetDatum(entry->settings), false);
	ARG(TEXTOID, CStringGetTextDatum(entry->options ? entry->options : "{}"), false);
#undef ARG
	Assert(i == WRITE_NARGS);
}

/* The placeholders of WRITE_COLUMNS, casting to the catalog's types. */
#define WRITE_PLACEHOLDERS \
	"$1, $2::regrole, $3, $4, $5::regclass[], $6::regclass, $7, $8, " \
	"$9::regclass, $10, $11, $12, $13, $14, $15, $16::jsonb"

int64
catalog_insert(FlowEntry *entry)
{
	CatalogAccess access;
	Oid			types[WRITE_NARGS];
	Datum		values[WRITE_NARGS];
	char		nulls[WRITE_NARGS];
	bool		isnull;
	int64		flow_id;

	entry_to_args(entry, types, values, nulls);
	catalog_begin(&access);
	if (SPI_execute_with_args("INSERT INTO flowpg.flow (" WRITE_COLUMNS ") "
							  "VALUES (" WRITE_PLACEHOLDERS ") RETURNING flow_id",
							  WRITE_NARGS, types, values, nulls, false, 0) != SPI_OK_INSERT_RETURNING)
		elog(ERROR, "inserting into flowpg.flow failed");
	flow_id = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	catalog_end(&access);
	catalog_changed();
	entry->flow_id = flow_id;
	return flow_id;
}

void
catalog_update(FlowEntry *entry)
{
	CatalogAccess access;
	Oid			types[WRITE_NARGS + 1];
	Datum		values[WRITE_NARGS + 1];
	char		nulls[WRITE_NARGS + 1];

	entry_to_args(entry, types, values, nulls);
	types[WRITE_NARGS] = INT8OID;
	values[WRITE_NARGS] = Int64GetDatum(entry->flow_id);
	nulls[WRITE_NARGS] = ' ';
	catalog_begin(&access);
	if (SPI_execute_with_args("UPDATE flowpg.flow SET (" WRITE_COLUMNS ", state, state_reason, updated_at) = "
							  "(" WRITE_PLACEHOLDERS ", 'active', NULL, now()) WHERE flow_id = $17",
							  WRITE_NARGS + 1, types, values, nulls, false, 0) != SPI_OK_UPDATE)
		elog(ERROR, "updating flowpg.flow failed");
	catalog_end(&access);
	catalog_changed();
}

void
catalog_update_query_text(int64 flow_id, const char *query)
{
	CatalogAccess access;
	Oid			types[2] = {INT8OID, TEXTOID};
	Datum		values[2] = {Int64GetDatum(flow_id), CStringGetTextDatum(query)};

	catalog_begin(&access);
	if (SPI_execute_with_args("UPDATE flowpg.flow SET query = $2 WHERE flow_id = $1",
							  2, types, values, NULL, false, 0) != SPI_OK_UPDATE)
		elog(ERROR, "updating flowpg.flow failed");
	catalog_end(&access);
}

void
catalog_delete(int64 flow_id)
{
	CatalogAccess access;
	Oid			types[1] = {INT8OID};
	Datum		values[1] = {Int64GetDatum(flow_id)};

	catalog_begin(&access);
	if (SPI_execute_with_args("DELETE FROM flowpg.flow WHERE flow_id = $1",
							  1, types, values, NULL, false, 0) != SPI_OK_DELETE)
		elog(ERROR, "deleting from flowpg.flow failed");
	if (SPI_execute_with_args("DELETE FROM flowpg.dirty_log WHERE flow_id = $1",
							  1, types, values, NULL, false, 0) != SPI_OK_DELETE ||
		SPI_execute_with_args("DELETE FROM flowpg.flow_run WHERE flow_id = $1",
							  1, types, values, NULL, false, 0) != SPI_OK_DELETE ||
		SPI_execute_with_args("DELETE FROM flowpg.flow_error WHERE flow_id = $1",
							  1, types, values, NULL, false, 0) != SPI_OK_DELETE)
		elog(ERROR, "deleting the state of flow " INT64_FORMAT " failed", flow_id);
	catalog_end(&access);
	catalog_changed();
}

void
catalog_check_owner(FlowEntry *entry)
{
	if (!has_privs_of_role(GetUserId(), entry->owner))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("must be owner of flow %s", entry->flow_name),
				 errdetail("Flow \"%s\" is owned by role %s.", entry->flow_name,
						   GetUserNameFromId(entry->owner, false))));
}
