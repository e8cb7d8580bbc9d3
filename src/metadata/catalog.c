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

#include "access/xact.h"

#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/xlog.h"
#include "common/hashfn.h"
#include "catalog/namespace.h"
#include "commands/extension.h"
#include "catalog/pg_class.h"
#include "catalog/pg_database.h"
#include "catalog/pg_extension.h"
#include "catalog/indexing.h"
#include "access/genam.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/fmgroids.h"
#include "utils/inval.h"
#include "utils/builtins.h"
#include "utils/numeric.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"
#include "utils/jsonb.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "catalog.h"
#include "privileged.h"
#include "trust.h"
#include "settings.h"

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

char *
catalog_planned_in(void)
{
	return psprintf(UINT64_FORMAT ":%u", GetSystemIdentifier(), MyDatabaseId);
}

bool
catalog_exists(void)
{
	Oid			nspid = get_namespace_oid("flowpg", true);

	return OidIsValid(nspid) && OidIsValid(get_relname_relid("flow", nspid));
}

/* Does flowpg's table of that name hold a row?  Read as it is, at any version. */
static bool
table_has_rows(Oid nspid, const char *name)
{
	Oid			relid = get_relname_relid(name, nspid);
	Relation	rel;
	TableScanDesc scan;
	bool		found;

	if (!OidIsValid(relid))
		return false;
	rel = table_open(relid, AccessShareLock);
	scan = table_beginscan(rel, GetActiveSnapshot(), 0, NULL);
	found = heap_getnext(scan, ForwardScanDirection) != NULL;
	table_endscan(scan);
	table_close(rel, AccessShareLock);
	return found;
}

bool
catalog_has_any_flow(void)
{
	Oid			nspid = get_namespace_oid("flowpg", true);

	return OidIsValid(nspid) &&
		(table_has_rows(nspid, "flow") || table_has_rows(nspid, "pending_flow"));
}

/* The version of flowpg's SQL objects in this database; NULL: not installed. */
char *
catalog_extension_version(void)
{
	Relation	rel = table_open(ExtensionRelationId, AccessShareLock);
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tuple;
	char	   *version = NULL;

	ScanKeyInit(&key, Anum_pg_extension_extname, BTEqualStrategyNumber, F_NAMEEQ,
				CStringGetDatum("flowpg"));
	scan = systable_beginscan(rel, ExtensionNameIndexId, true, NULL, 1, &key);
	tuple = systable_getnext(scan);
	if (HeapTupleIsValid(tuple))
	{
		bool		isnull;
		Datum		d = heap_getattr(tuple, Anum_pg_extension_extversion,
									 RelationGetDescr(rel), &isnull);

		if (!isnull)
			version = text_to_cstring(DatumGetTextPP(d));
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return version;
}

/* Is version one this library updates from (an update script ships it)? */
bool
catalog_version_older(const char *version)
{
	return strcmp(version, "0.1") == 0 || strcmp(version, "0.2") == 0;
}

bool
catalog_version_current(void)
{
	char	   *version = catalog_extension_version();

	return version == NULL || strcmp(version, FLOWPG_VERSION) == 0;
}

void
catalog_require_current_version(void)
{
	char	   *version = catalog_extension_version();

	if (version != NULL && strcmp(version, FLOWPG_VERSION) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("flowpg's objects in this database are at version %s, its library at %s",
						version, FLOWPG_VERSION),
				 errdetail("Changes to the flows' sources are captured meanwhile; no flow is refreshed or changed until the versions agree."),
				 catalog_version_older(version) ?
				 errhint("Run ALTER EXTENSION flowpg UPDATE.") :
				 errhint("Install flowpg %s's library, which these objects were made by.", version)));
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

/* Columns of flowpg.flow, in the order of its CREATE TABLE. */
enum
{
	Col_flow_id = 1, Col_flow_name, Col_owner, Col_mode, Col_kind,
	Col_source_tables, Col_sink_table, Col_query, Col_query_tree,
	Col_time_table, Col_time_column, Col_window_expr, Col_expire_after,
	Col_eval_interval, Col_comment, Col_settings, Col_options, Col_state,
	Col_state_reason, Col_created_at, Col_updated_at, Col_planned_in,
	Col_deps_view, Col_window_output, Col_paused, Natts_flow
};

static char *
text_value(Datum *values, bool *nulls, int column)
{
	return nulls[column - 1] ? NULL : TextDatumGetCString(values[column - 1]);
}

/* Is key a boolean true at the top of a flow's options? */
static bool
option_is_true(Jsonb *options, const char *key)
{
	JsonbValue	buf;
	JsonbValue *v = getKeyJsonValueFromContainer(&options->root, key, strlen(key), &buf);

	return v != NULL && v->type == jbvBool && v->val.boolean;
}

/* A number at the top of a flow's options, as int64; 0 when absent. */
static int64
option_int64(Jsonb *options, const char *key)
{
	JsonbValue	buf;
	JsonbValue *v = getKeyJsonValueFromContainer(&options->root, key, strlen(key), &buf);

	if (v == NULL || v->type != jbvNumeric)
		return 0;
	return DatumGetInt64(DirectFunctionCall1(numeric_int8, NumericGetDatum(v->val.numeric)));
}

static FlowEntry *
entry_from_heap(HeapTuple tuple, TupleDesc desc)
{
	FlowEntry  *entry = palloc0(sizeof(FlowEntry));
	Datum		values[Natts_flow];
	bool		nulls[Natts_flow];
	Datum	   *items;
	int			nitems;

	/* a catalog of 0.1 (waiting for ALTER EXTENSION UPDATE) lacks the last columns */
	Assert(desc->natts <= Natts_flow - 1);
	memset(nulls, true, sizeof(nulls));
	heap_deform_tuple(tuple, desc, values, nulls);
	entry->written_here = TransactionIdIsCurrentTransactionId(HeapTupleHeaderGetRawXmin(tuple->t_data));
	entry->flow_id = DatumGetInt64(values[Col_flow_id - 1]);
	entry->flow_name = text_value(values, nulls, Col_flow_name);
	entry->owner = DatumGetObjectId(values[Col_owner - 1]);
	entry->mode = text_value(values, nulls, Col_mode);
	entry->is_aggregate = strcmp(text_value(values, nulls, Col_kind), "aggregate") == 0;
	deconstruct_array(DatumGetArrayTypeP(values[Col_source_tables - 1]), REGCLASSOID,
					  sizeof(Oid), true, TYPALIGN_INT, &items, NULL, &nitems);
	for (int i = 0; i < nitems; i++)
		entry->source_relids = lappend_oid(entry->source_relids, DatumGetObjectId(items[i]));
	entry->sink_relid = DatumGetObjectId(values[Col_sink_table - 1]);
	entry->query = text_value(values, nulls, Col_query);
	entry->query_tree = text_value(values, nulls, Col_query_tree);
	entry->time_relid = nulls[Col_time_table - 1] ? InvalidOid :
		DatumGetObjectId(values[Col_time_table - 1]);
	entry->time_attno = nulls[Col_time_column - 1] ? InvalidAttrNumber :
		DatumGetInt16(values[Col_time_column - 1]);
	entry->window_expr = text_value(values, nulls, Col_window_expr);
	entry->expire_after = nulls[Col_expire_after - 1] ? NULL :
		DatumGetIntervalP(datumCopy(values[Col_expire_after - 1], false, sizeof(Interval)));
	entry->eval_interval = nulls[Col_eval_interval - 1] ? NULL :
		DatumGetIntervalP(datumCopy(values[Col_eval_interval - 1], false, sizeof(Interval)));
	entry->comment = text_value(values, nulls, Col_comment);
	entry->settings = DatumGetArrayTypePCopy(values[Col_settings - 1]);
	entry->options = DatumGetCString(DirectFunctionCall1(jsonb_out, values[Col_options - 1]));
	entry->backfilled = option_is_true(DatumGetJsonbP(values[Col_options - 1]), "backfill");
	entry->partial_states = option_is_true(DatumGetJsonbP(values[Col_options - 1]), "partial_states");
	entry->computed_from = (TimestampTz) option_int64(DatumGetJsonbP(values[Col_options - 1]),
													  "computed_from");
	entry->state = text_value(values, nulls, Col_state);
	entry->state_reason = text_value(values, nulls, Col_state_reason);
	entry->deps_view = nulls[Col_deps_view - 1] ? InvalidOid :
		DatumGetObjectId(values[Col_deps_view - 1]);
	entry->window_output = nulls[Col_window_output - 1] ? -1 :
		DatumGetInt16(values[Col_window_output - 1]);
	entry->paused = !nulls[Col_paused - 1] && DatumGetBool(values[Col_paused - 1]);
	return entry;
}

typedef bool (*EntryFilter) (FlowEntry *entry, const void *arg);

static int
compare_flow_ids(const ListCell *a, const ListCell *b)
{
	int64		x = ((FlowEntry *) lfirst(a))->flow_id;
	int64		y = ((FlowEntry *) lfirst(b))->flow_id;

	return (x > y) - (x < y);
}

/*
 * The flows that pass filter, read under the latest snapshot: what is
 * committed now (and this transaction's own changes), whatever the caller's
 * isolation level, so that a writer in a REPEATABLE READ transaction still
 * sees a flow created after its snapshot.  No SQL runs, so nothing is looked
 * up by name.
 */
static List *
catalog_scan(EntryFilter filter, const void *arg)
{
	Relation	rel = table_open(catalog_relid(), AccessShareLock);
	Snapshot	snapshot = RegisterSnapshot(GetLatestSnapshot());
	TableScanDesc scan = table_beginscan(rel, snapshot, 0, NULL);
	List	   *entries = NIL;
	HeapTuple	tuple;

	while ((tuple = heap_getnext(scan, ForwardScanDirection)) != NULL)
	{
		FlowEntry  *entry = entry_from_heap(tuple, RelationGetDescr(rel));

		if (filter == NULL || filter(entry, arg))
			entries = lappend(entries, entry);
	}
	table_endscan(scan);
	UnregisterSnapshot(snapshot);
	table_close(rel, AccessShareLock);
	list_sort(entries, compare_flow_ids);
	return entries;
}

static bool
filter_id(FlowEntry *entry, const void *arg)
{
	return entry->flow_id == *(const int64 *) arg;
}

static bool
filter_name(FlowEntry *entry, const void *arg)
{
	return strcmp(entry->flow_name, (const char *) arg) == 0;
}

static bool
filter_sink(FlowEntry *entry, const void *arg)
{
	return entry->sink_relid == *(const Oid *) arg;
}

static bool
filter_relation(FlowEntry *entry, const void *arg)
{
	Oid			relid = *(const Oid *) arg;

	return entry->sink_relid == relid || list_member_oid(entry->source_relids, relid);
}

static bool
filter_deps_view(FlowEntry *entry, const void *arg)
{
	return entry->deps_view == *(const Oid *) arg;
}

static FlowEntry *
first_entry(List *entries)
{
	return entries ? linitial(entries) : NULL;
}

FlowEntry *
catalog_get_by_id(int64 flow_id)
{
	return first_entry(catalog_scan(filter_id, &flow_id));
}

FlowEntry *
catalog_get_by_name(const char *flow_name)
{
	return first_entry(catalog_scan(filter_name, flow_name));
}

List *
catalog_get_all(void)
{
	return catalog_scan(NULL, NULL);
}

FlowEntry *
catalog_get_by_sink(Oid sink_relid)
{
	return first_entry(catalog_scan(filter_sink, &sink_relid));
}

List *
catalog_get_all_by_sink(Oid sink_relid)
{
	return catalog_scan(filter_sink, &sink_relid);
}

List *
catalog_get_by_relation(Oid relid)
{
	return catalog_scan(filter_relation, &relid);
}

FlowEntry *
catalog_get_by_deps_view(Oid view_relid)
{
	return first_entry(catalog_scan(filter_deps_view, &view_relid));
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
	"eval_interval, comment, settings, options, planned_in, deps_view, " \
	"window_output"
#define WRITE_NARGS 19

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
	ARG(TEXTOID, CStringGetTextDatum(catalog_planned_in()), false);
	ARG(OIDOID, ObjectIdGetDatum(entry->deps_view), !OidIsValid(entry->deps_view));
	ARG(INT2OID, Int16GetDatum((int16) entry->window_output), entry->window_output < 0);
#undef ARG
	Assert(i == WRITE_NARGS);
}

/* The placeholders of WRITE_COLUMNS, casting to the catalog's types. */
#define WRITE_PLACEHOLDERS \
	"$1, $2::regrole, $3, $4, $5::regclass[], $6::regclass, $7, $8, " \
	"$9::regclass, $10, $11, $12, $13, $14, $15, $16::jsonb, $17, $18::regclass, $19"

static bool own_insert = false;

bool
catalog_own_insert(void)
{
	return own_insert;
}

int64
catalog_insert(FlowEntry *entry)
{
	PrivilegedAccess access;
	Oid			types[WRITE_NARGS];
	Datum		values[WRITE_NARGS];
	char		nulls[WRITE_NARGS];
	bool		isnull;
	int64		flow_id;
	int			rc;

	entry_to_args(entry, types, values, nulls);
	privileged_begin(&access);
	own_insert = true;
	PG_TRY();
	{
		rc = SPI_execute_with_args("INSERT INTO flowpg.flow (" WRITE_COLUMNS ") "
								   "VALUES (" WRITE_PLACEHOLDERS ") RETURNING flow_id",
								   WRITE_NARGS, types, values, nulls, false, 0);
	}
	PG_FINALLY();
	{
		own_insert = false;
	}
	PG_END_TRY();
	if (rc != SPI_OK_INSERT_RETURNING)
		elog(ERROR, "inserting into flowpg.flow failed");
	flow_id = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	privileged_end(&access);
	catalog_changed();
	entry->flow_id = flow_id;
	return flow_id;
}

void
catalog_update(FlowEntry *entry)
{
	PrivilegedAccess access;
	Oid			types[WRITE_NARGS + 1];
	Datum		values[WRITE_NARGS + 1];
	char		nulls[WRITE_NARGS + 1];

	entry_to_args(entry, types, values, nulls);
	types[WRITE_NARGS] = INT8OID;
	values[WRITE_NARGS] = Int64GetDatum(entry->flow_id);
	nulls[WRITE_NARGS] = ' ';
	privileged_begin(&access);
	if (SPI_execute_with_args("UPDATE flowpg.flow SET (" WRITE_COLUMNS ", state, state_reason, updated_at) = "
							  "(" WRITE_PLACEHOLDERS ", 'active', NULL, now()) WHERE flow_id = $20",
							  WRITE_NARGS + 1, types, values, nulls, false, 0) != SPI_OK_UPDATE)
		elog(ERROR, "updating flowpg.flow failed");
	privileged_end(&access);
	catalog_changed();
}

void
catalog_set_state(int64 flow_id, const char *state, const char *reason)
{
	PrivilegedAccess access;
	Oid			types[3] = {INT8OID, TEXTOID, TEXTOID};
	Datum		values[3] = {Int64GetDatum(flow_id), CStringGetTextDatum(state),
	reason ? CStringGetTextDatum(reason) : (Datum) 0};
	char		nulls[3] = {' ', ' ', reason ? ' ' : 'n'};

	privileged_begin(&access);
	if (SPI_execute_with_args("UPDATE flowpg.flow SET state = $2, state_reason = $3, "
							  "updated_at = now() WHERE flow_id = $1",
							  3, types, values, nulls, false, 0) != SPI_OK_UPDATE)
		elog(ERROR, "updating flowpg.flow failed");
	privileged_end(&access);
	catalog_changed();
}

void
catalog_update_query_text(int64 flow_id, const char *query)
{
	PrivilegedAccess access;
	Oid			types[2] = {INT8OID, TEXTOID};
	Datum		values[2] = {Int64GetDatum(flow_id), CStringGetTextDatum(query)};

	privileged_begin(&access);
	if (SPI_execute_with_args("UPDATE flowpg.flow SET query = $2 WHERE flow_id = $1",
							  2, types, values, NULL, false, 0) != SPI_OK_UPDATE)
		elog(ERROR, "updating flowpg.flow failed");
	privileged_end(&access);
}

/* Sets one column of a flow (the statement's $2), and its updated_at. */
static void
set_flow_column(int64 flow_id, const char *sql, Oid type, Datum value, bool isnull)
{
	PrivilegedAccess access;
	Oid			types[2] = {INT8OID, type};
	Datum		values[2] = {Int64GetDatum(flow_id), value};
	char		nulls[2] = {' ', isnull ? 'n' : ' '};

	privileged_begin(&access);
	if (SPI_execute_with_args(sql, 2, types, values, nulls, false, 0) != SPI_OK_UPDATE)
		elog(ERROR, "updating flowpg.flow failed");
	privileged_end(&access);
	catalog_changed();
}

void
catalog_set_comment(int64 flow_id, const char *comment)
{
	set_flow_column(flow_id, "UPDATE flowpg.flow SET comment = $2, updated_at = now() WHERE flow_id = $1",
					TEXTOID, comment ? CStringGetTextDatum(comment) : (Datum) 0, comment == NULL);
}

void
catalog_set_paused(int64 flow_id, bool paused)
{
	set_flow_column(flow_id, "UPDATE flowpg.flow SET paused = $2, updated_at = now() WHERE flow_id = $1",
					BOOLOID, BoolGetDatum(paused), false);
}

void
catalog_delete(int64 flow_id)
{
	PrivilegedAccess access;
	Oid			types[1] = {INT8OID};
	Datum		values[1] = {Int64GetDatum(flow_id)};

	privileged_begin(&access);
	if (SPI_execute_with_args("DELETE FROM flowpg.flow WHERE flow_id = $1",
							  1, types, values, NULL, false, 0) != SPI_OK_DELETE)
		elog(ERROR, "deleting from flowpg.flow failed");
	privileged_end(&access);
	catalog_changed();
}

int
catalog_errhint_resume(const char *flow_name)
{
	return errhint("Run flowpg.resume_flow(%s) first; it catches up with every change made meanwhile.",
				   quote_literal_cstr(quote_identifier(flow_name)));
}

void
catalog_refuse_if_paused(FlowEntry *entry, const char *action)
{
	if (entry->paused)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("flow \"%s\" is paused", entry->flow_name),
				 errdetail("A paused flow's sink is not written: %s would write it.", action),
				 catalog_errhint_resume(entry->flow_name)));
}

void
catalog_check_may_drop(Oid owner, const char *flow_name)
{
	Oid			dba;

	if (has_privs_of_role(GetUserId(), owner))
		return;
	/* the database's owner may drop any flow: no role can squat a name for good */
	dba = trust_database_owner();
	if (OidIsValid(dba) && has_privs_of_role(GetUserId(), dba))
		return;
	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("must be owner of flow %s", flow_name),
			 errdetail("Flow \"%s\" is owned by role %s.", flow_name,
					   GetUserNameFromId(owner, false)),
			 errhint("The database's owner can drop any flow of the database.")));
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

/*
 * A flow's state after a run: failed with its error (reason), unless it
 * is restoring; active again after a success (reason NULL).  Backends'
 * flow caches are invalidated only when the state changed: a success of
 * a flow that had not failed writes nothing.
 */
void
catalog_set_run_state(int64 flow_id, const char *reason)
{
	PrivilegedAccess access;
	Oid			types[2] = {INT8OID, TEXTOID};
	Datum		values[2] = {Int64GetDatum(flow_id), reason ? CStringGetTextDatum(reason) : (Datum) 0};
	char		nulls[2] = {' ', reason ? ' ' : 'n'};
	int			rc;
	bool		changed;

	privileged_begin(&access);
	if (reason)
		rc = SPI_execute_with_args("UPDATE flowpg.flow SET state = 'failed', state_reason = $2 "
								   "WHERE flow_id = $1 AND state <> 'restoring'",
								   2, types, values, nulls, false, 0);
	else
		rc = SPI_execute_with_args("UPDATE flowpg.flow SET state = 'active', state_reason = NULL "
								   "WHERE flow_id = $1 AND state = 'failed'",
								   1, types, values, nulls, false, 0);
	if (rc != SPI_OK_UPDATE)
		elog(ERROR, "updating flowpg.flow failed");
	changed = SPI_processed > 0;
	privileged_end(&access);
	if (changed)
		catalog_changed();
}

/* Every flow with its mode and next due run, for the workers' schedule. */
List *
catalog_schedule(void)
{
	List	   *flows = NIL;
	MemoryContext caller = CurrentMemoryContext;

	privileged_query("SELECT f.flow_id, r.next_run_at, NOT flowpg._on_streams(f.mode, f.options), "
							 "f.state = 'restoring', f.eval_interval, "
							 "coalesce((f.options->>'uses_now')::bool, false), f.owner::oid, "
							 "b.flow_id IS NOT NULL AND NOT flowpg._on_streams(f.mode, f.options) "
							 "FROM flowpg.flow f LEFT JOIN flowpg.flow_run r USING (flow_id) "
							 "LEFT JOIN flowpg.flow_backfill b USING (flow_id) "
							 "WHERE NOT f.paused",	/* pause_flow: nothing runs it */
							 0, NULL, NULL, NULL);
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		HeapTuple	tuple = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		MemoryContext old = MemoryContextSwitchTo(caller);
		FlowSchedule *f = palloc(sizeof(FlowSchedule));
		bool		isnull;
		bool		next_null;

		MemoryContextSwitchTo(old);
		f->flow_id = DatumGetInt64(SPI_getbinval(tuple, desc, 1, &isnull));
		f->next_run_at = DatumGetTimestampTz(SPI_getbinval(tuple, desc, 2, &next_null));
		f->has_next_run = !next_null;
		f->batching = DatumGetBool(SPI_getbinval(tuple, desc, 3, &isnull));
		f->restoring = DatumGetBool(SPI_getbinval(tuple, desc, 4, &isnull));
		f->uses_now = DatumGetBool(SPI_getbinval(tuple, desc, 6, &isnull));
		f->owner = DatumGetObjectId(SPI_getbinval(tuple, desc, 7, &isnull));
		f->backfilling = DatumGetBool(SPI_getbinval(tuple, desc, 8, &isnull));
		old = MemoryContextSwitchTo(caller);
		{
			Datum		iv = SPI_getbinval(tuple, desc, 5, &isnull);

			f->eval_interval = isnull ? NULL :
				DatumGetIntervalP(datumCopy(iv, false, sizeof(Interval)));
		}
		flows = lappend(flows, f);
		MemoryContextSwitchTo(old);
	}
	privileged_query_end();
	return flows;
}
