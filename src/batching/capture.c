/*-------------------------------------------------------------------------
 *
 * capture.c
 *	  Where rows are captured: the statement triggers on source tables.
 *
 * Each source table gets one AFTER ... FOR EACH STATEMENT trigger per event
 * (INSERT, UPDATE, DELETE with transition tables; TRUNCATE), shared by all
 * flows reading the table.  The table's streaming flows take the rows
 * themselves, copied once for all of them (stream_capture.c), old rows
 * included where they can retract them.  For
 * every other flow whose time column is in the table
 * the trigger scans the transition tables once, takes the smallest and
 * largest time value changed, and appends one row (flow, lo, hi, rows) to
 * flowpg.dirty_log.  The row belongs to the writer's transaction: an abort
 * or a rolled-back savepoint takes it away, a commit makes it durable.
 * Changes to a table that is not the flow's time table (a dimension in a
 * join, a flow without a window), TRUNCATE, and NULL time values mark the
 * whole flow dirty instead.
 *
 * The log row is written with simple_heap_insert, so a writer needs no
 * rights on flowpg's tables.  The flows of a table are cached per backend
 * and the cache is dropped by a relcache invalidation of the catalog, which
 * every flow DDL sends and which a writer receives when it locks the table.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/table.h"
#include "access/xact.h"
#include "access/genam.h"
#include "access/htup_details.h"
#include "access/stratnum.h"
#include "catalog/indexing.h"
#include "parser/parse_func.h"
#include "catalog/namespace.h"
#include "catalog/pg_trigger.h"
#include "catalog/partition.h"
#include "catalog/pg_inherits.h"
#include "executor/spi.h"
#include "commands/trigger.h"
#include "executor/executor.h"
#include "storage/lmgr.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/timestamp.h"

#include "capture.h"
#include "dirty_log.h"
#include "catalog.h"
#include "privileged.h"
#include "planner.h"
#include "window.h"

const CaptureStreamingHooks *capture_streaming_hooks = NULL;

PG_FUNCTION_INFO_V1(flowpg_capture);

/* What the trigger of one table does for one flow. */
typedef struct CaptureFlow
{
	int64		flow_id;
	AttrNumber	time_attno;		/* 0: any change dirties the whole flow */
	Oid			time_type;
	bool		streaming;		/* inserted rows go to the streaming engine */
	bool		batching;		/* a batching flow: its entries are the table's */
	uint32		version;		/* of its operator graph */

	/*
	 * FROM ONLY this table: an UPDATE or DELETE naming it also changes its
	 * inheritance children, whose rows its transition tables hold too and
	 * do not tell apart -- those changes are recomputed, not retracted.
	 */
	bool		only_this;

	/*
	 * It reads a partition or child of this table: told of statements
	 * naming this table, which may change its rows (by their windows).
	 */
	bool		via_parent;
} CaptureFlow;

typedef struct CaptureEntry
{
	Oid			relid;			/* hash key */
	int			nflows;
	CaptureFlow *flows;
} CaptureEntry;

static HTAB *capture_cache = NULL;
static MemoryContext capture_context = NULL;
static Oid	catalog_relid_seen = InvalidOid;
static bool callback_registered = false;

/*
 * The capture triggers of a table.  Statement triggers capture ordinary
 * sessions (session_replication_role origin or local); logical replication
 * appliers run as replicas and fire only row triggers, so a row trigger
 * enabled for replicas only captures them -- and every other replica-role
 * session -- exactly once.  TRUNCATE fires its statement trigger for all.
 * Partitioned tables have no rows of their own: no row trigger there.
 */
typedef struct CaptureTrigger
{
	const char *name;
	const char *definition;		/* %s: the table */
	char		enabled;		/* tgenabled it must keep */
	bool		per_row;
} CaptureTrigger;

static const CaptureTrigger capture_triggers[] = {
	{"flowpg_capture_insert", "AFTER INSERT ON %s REFERENCING NEW TABLE AS flowpg_new FOR EACH STATEMENT",
	TRIGGER_FIRES_ON_ORIGIN, false},
	{"flowpg_capture_update", "AFTER UPDATE ON %s REFERENCING OLD TABLE AS flowpg_old NEW TABLE AS flowpg_new FOR EACH STATEMENT",
	TRIGGER_FIRES_ON_ORIGIN, false},
	{"flowpg_capture_delete", "AFTER DELETE ON %s REFERENCING OLD TABLE AS flowpg_old FOR EACH STATEMENT",
	TRIGGER_FIRES_ON_ORIGIN, false},
	{"flowpg_capture_truncate", "AFTER TRUNCATE ON %s FOR EACH STATEMENT",
	TRIGGER_FIRES_ALWAYS, false},
	{"flowpg_capture_row", "AFTER INSERT OR UPDATE OR DELETE ON %s FOR EACH ROW",
	TRIGGER_FIRES_ON_REPLICA, true},
};

static bool
trigger_applies(const CaptureTrigger *ct, Oid relid)
{
	return !ct->per_row || get_rel_relkind(relid) == RELKIND_RELATION;
}

char
capture_trigger_state(const char *tgname)
{
	for (int i = 0; i < lengthof(capture_triggers); i++)
		if (strcmp(capture_triggers[i].name, tgname) == 0)
			return capture_triggers[i].enabled;
	return '\0';
}

bool
capture_triggers_complete(Oid relid)
{
	for (int i = 0; i < lengthof(capture_triggers); i++)
		if (trigger_applies(&capture_triggers[i], relid) &&
			!OidIsValid(get_trigger_oid(relid, capture_triggers[i].name, true)))
			return false;
	return true;
}

void
capture_invalidate_catalog(void)
{
	if (capture_context)
		MemoryContextReset(capture_context);
	capture_cache = NULL;
}

static void
capture_relcache_callback(Datum arg, Oid relid)
{
	/*
	 * A change of the catalog may add or remove flows of any table; one of
	 * a cached table may have moved it to other ancestors (ATTACH, DETACH,
	 * INHERIT, NO INHERIT change its pg_class or pg_attribute rows).
	 */
	if (relid == InvalidOid || relid == catalog_relid_seen ||
		(capture_cache != NULL && hash_search(capture_cache, &relid, HASH_FIND, NULL) != NULL))
		capture_invalidate_catalog();
}

static void
register_invalidation(void)
{
	if (!callback_registered)
	{
		CacheRegisterRelcacheCallback(capture_relcache_callback, (Datum) 0);
		callback_registered = true;
	}
}

List *
capture_ancestors(Oid relid)
{
	List	   *ancestors = NIL;
	List	   *todo = list_make1_oid(relid);
	Relation	rel;

	if (get_rel_relispartition(relid))
		return get_partition_ancestors(relid);
	if (!has_superclass(relid))
		return NIL;
	/* plain inheritance, possibly multiple: pg_inherits upwards */
	rel = table_open(InheritsRelationId, AccessShareLock);
	while (todo != NIL)
	{
		Oid			child = linitial_oid(todo);
		ScanKeyData key;
		SysScanDesc scan;
		HeapTuple	tuple;

		todo = list_delete_first(todo);
		ScanKeyInit(&key, Anum_pg_inherits_inhrelid, BTEqualStrategyNumber,
					F_OIDEQ, ObjectIdGetDatum(child));
		scan = systable_beginscan(rel, InheritsRelidSeqnoIndexId, true, NULL, 1, &key);
		while ((tuple = systable_getnext(scan)) != NULL)
		{
			Oid			parent = ((Form_pg_inherits) GETSTRUCT(tuple))->inhparent;

			if (!list_member_oid(ancestors, parent))
			{
				ancestors = lappend_oid(ancestors, parent);
				todo = lappend_oid(todo, parent);
			}
		}
		systable_endscan(scan);
	}
	table_close(rel, AccessShareLock);
	return ancestors;
}

/* Is table a partition or inheritance child (at any depth) of relid? */
static bool
capture_is_descendant(Oid relid, Oid table)
{
	return table != relid && list_member_oid(capture_ancestors(table), relid);
}

/*
 * The flows reading this table, or one of its ancestors (partitioned
 * tables, inheritance parents) without ONLY, with the table each reads
 * (*tables, in step) -- and the flows reading one of its partitions or
 * children: a statement naming this table fires only this table's
 * triggers, whose transition tables hold the rows of all of them.
 */
static List *
flows_reading(Oid relid, List **tables)
{
	List	   *candidates = lcons_oid(relid, capture_ancestors(relid));
	List	   *flows = NIL;
	ListCell   *lc;

	*tables = NIL;
	if (has_subclass(relid))
		candidates = list_concat(candidates,
								 list_delete_first(find_all_inheritors(relid, NoLock, NULL)));
	foreach(lc, candidates)
	{
		Oid			table = lfirst_oid(lc);
		ListCell   *lc2;

		foreach(lc2, catalog_get_by_relation(table))
		{
			FlowEntry  *flow = lfirst(lc2);

			if (!list_member_oid(flow->source_relids, table))
				continue;		/* only its sink */
			if (table != relid && !capture_is_descendant(relid, table) &&
				!flow_plan_reads_descendants(stringToNode(flow->query_tree), table))
				continue;		/* FROM ONLY the ancestor */
			flows = lappend(flows, flow);
			*tables = lappend_oid(*tables, table);
		}
	}
	return flows;
}

/* A copy of a cache entry in the current memory context. */
static CaptureEntry *
copy_entry(Oid relid, int nflows, CaptureFlow *flows)
{
	CaptureEntry *copy = palloc(sizeof(CaptureEntry));

	copy->relid = relid;
	copy->nflows = nflows;
	copy->flows = palloc(sizeof(CaptureFlow) * Max(nflows, 1));
	memcpy(copy->flows, flows, sizeof(CaptureFlow) * nflows);
	return copy;
}

/*
 * What the trigger of a table must do, as a copy the caller owns: any lock
 * taken afterwards (the dirty log's) may process an invalidation that
 * resets the cache.  Likewise, everything that reads catalogs happens before
 * the cache is touched.
 */
static CaptureEntry *
capture_entry(Oid relid)
{
	CaptureEntry *entry;
	CaptureFlow *local;
	CaptureFlow *cached;
	bool		found;
	List	   *flows;
	List	   *flow_tables;
	ListCell   *lc;
	ListCell   *lc3;
	int			n = 0;

	register_invalidation();
	if (capture_cache != NULL &&
		(entry = hash_search(capture_cache, &relid, HASH_FIND, NULL)) != NULL)
		return copy_entry(relid, entry->nflows, entry->flows);

	catalog_relid_seen = catalog_relid();

	/*
	 * A partition's own trigger fires only for statements naming it;
	 * statements on the parent fire the parent's, so no row counts twice.
	 */
	flows = flows_reading(relid, &flow_tables);
	local = palloc0(sizeof(CaptureFlow) * Max(list_length(flows), 1));
	forboth(lc, flows, lc3, flow_tables)
	{
		FlowEntry  *flow = lfirst(lc);
		Oid			table = lfirst_oid(lc3);
		CaptureFlow *cf = &local[n++];

		cf->flow_id = flow->flow_id;
		/*
		 * Without shared memory (not preloaded) streaming flows go batching,
		 * and so do restored ones not maintained yet: their queue would be
		 * forgotten, their dirty log is recomputed when they start.
		 */
		cf->streaming = flow_on_streams(flow) && capture_streaming_hooks != NULL &&
			capture_streaming_hooks->available() &&
			strcmp(flow->state, "restoring") != 0;

		/*
		 * A flow reading a partition or child of this table: which of the
		 * statement's rows are its own the transition tables do not say,
		 * so the windows of all of them are recomputed (a superset).
		 */
		cf->batching = !flow_on_streams(flow);
		cf->via_parent = table != relid && capture_is_descendant(relid, table);
		if (cf->via_parent)
			cf->streaming = false;
		cf->version = cf->streaming ? capture_streaming_hooks->version_of(flow) : 0;
		cf->only_this = table == relid &&
			!flow_plan_reads_descendants(stringToNode(flow->query_tree), table);

		/*
		 * A changed row dirties only its own windows when the table is read
		 * once; a self-join or a subquery over it can carry the change into
		 * other windows.  A partition may number its columns differently.
		 */
		if (flow->time_relid == table &&
			flow_plan_count_relation(stringToNode(flow->query_tree), table) == 1)
		{
			cf->time_attno = get_attnum(relid, get_attname(table, flow->time_attno, false));
			cf->time_type = get_atttype(relid, cf->time_attno);
		}
	}

	/* no catalog access from here on: the cache cannot be reset meanwhile */
	if (capture_cache == NULL)
	{
		HASHCTL		ctl;

		if (capture_context == NULL)
			capture_context = AllocSetContextCreate(CacheMemoryContext,
													"flowpg capture cache",
													ALLOCSET_SMALL_SIZES);
		ctl.keysize = sizeof(Oid);
		ctl.entrysize = sizeof(CaptureEntry);
		ctl.hcxt = capture_context;
		capture_cache = hash_create("flowpg capture cache", 16, &ctl,
									HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	}
	cached = MemoryContextAlloc(capture_context, sizeof(CaptureFlow) * Max(n, 1));
	memcpy(cached, local, sizeof(CaptureFlow) * n);
	entry = hash_search(capture_cache, &relid, HASH_ENTER, &found);
	entry->flows = cached;
	entry->nflows = n;
	return copy_entry(relid, n, local);
}

/* The changed range of one time column of the statement's rows. */
typedef struct ColumnRange
{
	AttrNumber	attno;
	Oid			type;
	int64		lo;
	int64		hi;
	bool		has_null;
} ColumnRange;

static int64
scan_transition_table(Tuplestorestate *table, TupleDesc desc,
					  ColumnRange *ranges, int nranges)
{
	TupleTableSlot *slot;
	int			readptr;
	int64		nrows = 0;

	if (table == NULL)
		return 0;
	/* our own read pointer: other triggers may read the same table */
	readptr = tuplestore_alloc_read_pointer(table, EXEC_FLAG_REWIND);
	tuplestore_select_read_pointer(table, readptr);
	tuplestore_rescan(table);
	slot = MakeSingleTupleTableSlot(desc, &TTSOpsMinimalTuple);
	while (tuplestore_gettupleslot(table, true, false, slot))
	{
		for (int i = 0; i < nranges; i++)
		{
			bool		isnull;
			Datum		value = slot_getattr(slot, ranges[i].attno, &isnull);
			int64		x;

			if (isnull)
			{
				ranges[i].has_null = true;
				continue;
			}
			x = window_datum_to_ordinal(ranges[i].type, value);
			if (x < ranges[i].lo)
				ranges[i].lo = x;
			if (x > ranges[i].hi)
				ranges[i].hi = x;
		}
		nrows++;
	}
	ExecDropSingleTupleTableSlot(slot);
	return nrows;
}

/* The time of a row for a flow: false when it has none to place it by. */
static bool
row_time(CaptureFlow *cf, TupleTableSlot *slot, int64 *t)
{
	bool		isnull;
	Datum		value;

	if (cf->time_attno == 0)
		return false;
	value = slot_getattr(slot, cf->time_attno, &isnull);
	if (isnull)
		return false;
	*t = window_datum_to_ordinal(cf->time_type, value);
	return true;
}

static void
note_row(Oid relid, CaptureFlow *cf, TupleTableSlot *slot)
{
	int64		t = 0;
	bool		placed = row_time(cf, slot, &t);

	if (cf->batching)
		dirty_log_note_table(relid, cf->time_attno, &cf->flow_id, 1, !placed, t, t, 1);
	else
		dirty_log_note_row(cf->flow_id, !placed, t);
}

/*
 * One row changed by a session in the replica role, a logical replication
 * applier above all: streaming flows take it (an update's or delete's old
 * row taken back, where they can), every other change widens the
 * transaction's dirty range of the flow.
 */
static void
capture_row(TriggerData *trigdata, CaptureEntry *entry)
{
	bool		insert = TRIGGER_FIRED_BY_INSERT(trigdata->tg_event);
	bool		update = TRIGGER_FIRED_BY_UPDATE(trigdata->tg_event);
	/* the trigger slot holds the new row of an INSERT, the old of the rest */
	TupleTableSlot *new_row = insert ? trigdata->tg_trigslot :
		update ? trigdata->tg_newslot : NULL;
	TupleTableSlot *old_row = insert ? NULL : trigdata->tg_trigslot;
	StreamTaker *takers = palloc0(sizeof(StreamTaker) * entry->nflows);
	int			ntakers = 0;

	/* a row trigger fires for the table's own rows, not its children's */
	for (int i = 0; i < entry->nflows; i++)
		if (entry->flows[i].streaming && !entry->flows[i].via_parent)
		{
			takers[ntakers].flow_id = entry->flows[i].flow_id;
			takers[ntakers++].version = entry->flows[i].version;
		}
	if (ntakers > 0)
		capture_streaming_hooks->capture_row(trigdata->tg_relation, takers, ntakers,
											 new_row, old_row);
	for (int i = 0, t = 0; i < entry->nflows; i++)
	{
		CaptureFlow *cf = &entry->flows[i];

		if (cf->via_parent)
			continue;
		if (cf->streaming && takers[t++].taken)
			continue;
		note_row(RelationGetRelid(trigdata->tg_relation), cf, trigdata->tg_trigslot);
		if (update)
			note_row(RelationGetRelid(trigdata->tg_relation), cf, trigdata->tg_newslot);
	}
}

Datum
flowpg_capture(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;
	Relation	rel;
	CaptureEntry *entry;
	ColumnRange *ranges;
	int			nranges = 0;
	int64		nrows;
	bool	   *taken;
	bool		all_taken = true;
	StreamTaker *takers;
	int		   *taker_of;
	int			ntakers = 0;
	int64	   *shared;

	if (!CALLED_AS_TRIGGER(fcinfo) || !TRIGGER_FIRED_AFTER(trigdata->tg_event))
		elog(ERROR, "flowpg_capture must be an AFTER trigger");
	rel = trigdata->tg_relation;
	entry = capture_entry(RelationGetRelid(rel));
	if (entry->nflows == 0)
		return PointerGetDatum(NULL);
	if (TRIGGER_FIRED_FOR_ROW(trigdata->tg_event))
	{
		capture_row(trigdata, entry);
		return PointerGetDatum(NULL);
	}

	if (TRIGGER_FIRED_BY_TRUNCATE(trigdata->tg_event))
	{
		for (int i = 0; i < entry->nflows; i++)
			dirty_log_append(entry->flows[i].flow_id, true, 0, 0, 0);
		return PointerGetDatum(NULL);
	}

	/*
	 * Streaming flows take the statement's rows into their partials: the
	 * new ones added, the old ones (UPDATE, DELETE, MERGE's) taken back --
	 * unless the flow cannot retract, when the changed windows are
	 * recomputed from the source, like for batching flows.
	 */
	taken = palloc0(sizeof(bool) * entry->nflows);
	takers = palloc0(sizeof(StreamTaker) * entry->nflows);
	taker_of = palloc(sizeof(int) * entry->nflows);
	for (int i = 0; i < entry->nflows; i++)
	{
		taker_of[i] = -1;
		/* an INSERT into an inheritance parent adds no row to its children */
		if (entry->flows[i].via_parent && trigdata->tg_oldtable == NULL &&
			rel->rd_rel->relkind != RELKIND_PARTITIONED_TABLE)
			taken[i] = true;
		else if (entry->flows[i].streaming &&
				 !(entry->flows[i].only_this && trigdata->tg_oldtable != NULL &&
				   has_subclass(RelationGetRelid(rel))))
		{
			taker_of[i] = ntakers;
			takers[ntakers].flow_id = entry->flows[i].flow_id;
			takers[ntakers++].version = entry->flows[i].version;
		}
	}
	/* the rows are copied once for all the streaming flows that take them */
	if (ntakers > 0)
		capture_streaming_hooks->capture_statement(rel, takers, ntakers,
												   trigdata->tg_newtable,
												   trigdata->tg_oldtable);
	for (int i = 0; i < entry->nflows; i++)
	{
		if (taker_of[i] >= 0)
			taken[i] = takers[taker_of[i]].taken;
		all_taken &= taken[i];
	}
	if (all_taken)
		return PointerGetDatum(NULL);

	/* one range per distinct time column among the table's flows */
	ranges = palloc(sizeof(ColumnRange) * entry->nflows);
	for (int i = 0; i < entry->nflows; i++)
	{
		CaptureFlow *cf = &entry->flows[i];
		bool		seen = false;

		if (cf->time_attno == 0)
			continue;
		for (int j = 0; j < nranges; j++)
			seen |= ranges[j].attno == cf->time_attno;
		if (seen)
			continue;
		ranges[nranges].attno = cf->time_attno;
		ranges[nranges].type = cf->time_type;
		ranges[nranges].lo = PG_INT64_MAX;
		ranges[nranges].hi = PG_INT64_MIN;
		ranges[nranges].has_null = false;
		nranges++;
	}
	nrows = scan_transition_table(trigdata->tg_oldtable, RelationGetDescr(rel), ranges, nranges) +
		scan_transition_table(trigdata->tg_newtable, RelationGetDescr(rel), ranges, nranges);
	if (nrows == 0)
		return PointerGetDatum(NULL);

	/* the batching flows share one entry per time column, the others have their own */
	shared = palloc(sizeof(int64) * entry->nflows);
	for (int j = -1; j < nranges; j++)
	{
		AttrNumber	attno = j < 0 ? 0 : ranges[j].attno;
		int			nshared = 0;

		for (int i = 0; i < entry->nflows; i++)
			if (!taken[i] && entry->flows[i].batching && entry->flows[i].time_attno == attno)
				shared[nshared++] = entry->flows[i].flow_id;
		dirty_log_note_table(RelationGetRelid(rel), attno, shared, nshared,
							 j < 0 || ranges[j].has_null,
							 j < 0 ? 0 : ranges[j].lo, j < 0 ? 0 : ranges[j].hi, nrows);
	}
	for (int i = 0; i < entry->nflows; i++)
	{
		CaptureFlow *cf = &entry->flows[i];
		ColumnRange *range = NULL;

		if (taken[i] || cf->batching)
			continue;			/* captured above */
		for (int j = 0; j < nranges; j++)
			if (ranges[j].attno == cf->time_attno)
				range = &ranges[j];
		if (range == NULL || range->has_null)
			dirty_log_append(cf->flow_id, true, 0, 0, nrows);
		else
			dirty_log_append(cf->flow_id, false, range->lo, range->hi, nrows);
	}
	return PointerGetDatum(NULL);
}

/*
 * The function the table's trigger of this name runs (InvalidOid: none),
 * and (enabled) when it fires.
 */
static Oid
trigger_function(Oid relid, const char *tgname, char *enabled)
{
	Relation	rel = table_open(TriggerRelationId, AccessShareLock);
	ScanKeyData keys[2];
	SysScanDesc scan;
	HeapTuple	tuple;
	Oid			funcid = InvalidOid;

	ScanKeyInit(&keys[0], Anum_pg_trigger_tgrelid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(relid));
	ScanKeyInit(&keys[1], Anum_pg_trigger_tgname, BTEqualStrategyNumber, F_NAMEEQ,
				CStringGetDatum(tgname));
	scan = systable_beginscan(rel, TriggerRelidNameIndexId, true, NULL, 2, keys);
	if ((tuple = systable_getnext(scan)) != NULL)
	{
		funcid = ((Form_pg_trigger) GETSTRUCT(tuple))->tgfoid;
		if (enabled)
			*enabled = ((Form_pg_trigger) GETSTRUCT(tuple))->tgenabled;
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return funcid;
}

static Oid
flowpg_function(const char *name)
{
	return LookupFuncName(list_make2(makeString("flowpg"), makeString(pstrdup(name))),
						  0, NULL, true);
}

bool
capture_is_flowpg_trigger(Oid relid, const char *tgname)
{
	Oid			funcid = trigger_function(relid, tgname, NULL);

	return OidIsValid(funcid) &&
		(funcid == flowpg_function("_capture") || funcid == flowpg_function("_sink_truncated"));
}

bool
capture_has_triggers(Oid relid)
{
	return OidIsValid(get_trigger_oid(relid, capture_triggers[0].name, true));
}

static void
set_trigger_state(const char *table, const CaptureTrigger *ct)
{
	privileged_execute(psprintf("ALTER TABLE %s ENABLE %s TRIGGER %s", table,
										ct->enabled == TRIGGER_FIRES_ALWAYS ? "ALWAYS" :
										ct->enabled == TRIGGER_FIRES_ON_REPLICA ? "REPLICA" : "",
										quote_identifier(ct->name)),
							   0, NULL, NULL, NULL);
}

/*
 * Installs the capture triggers a table lacks.  repair: also brings those
 * it has to the state this version gives them (an extension update; a
 * trigger in another state stays as it is otherwise, since only flowpg
 * sets them).
 */
static void
install_on(Oid relid, bool repair)
{
	char	   *table = quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)),
												   get_rel_name(relid));

	for (int i = 0; i < lengthof(capture_triggers); i++)
	{
		const CaptureTrigger *ct = &capture_triggers[i];
		char		enabled = '\0';

		if (!trigger_applies(ct, relid))
			continue;
		if (OidIsValid(get_trigger_oid(relid, ct->name, true)))
		{
			Oid			funcid = trigger_function(relid, ct->name, &enabled);

			/* flowpg finds its triggers by name: that one must be its own */
			if (!OidIsValid(funcid) || funcid != flowpg_function("_capture"))
				ereport(ERROR,
						(errcode(ERRCODE_DUPLICATE_OBJECT),
						 errmsg("table %s already has a trigger named %s that flowpg did not create",
								get_rel_name(relid), ct->name),
						 errhint("Rename or drop that trigger; flowpg needs the name for its capture trigger.")));
			if (repair && enabled != ct->enabled)
				set_trigger_state(table, ct);
			continue;
		}
		privileged_execute(psprintf("CREATE TRIGGER %s %s EXECUTE FUNCTION flowpg._capture()",
											quote_identifier(ct->name),
											psprintf(ct->definition, table)),
								   0, NULL, NULL, NULL);
		if (ct->enabled != TRIGGER_FIRES_ON_ORIGIN)
			set_trigger_state(table, ct);
	}
}

/*
 * The table and, when partitioned, all its partitions (direct DML on them),
 * and its ancestors (DML naming a parent fires only the parent's
 * triggers), each locked as the caller locked the table: a drop_flow
 * deciding that no flow reads one of them waits for this transaction
 * (capture_remove_if_unused).
 */
void
capture_install(Oid relid)
{
	ListCell   *lc;

	foreach(lc, find_all_inheritors(relid, ShareRowExclusiveLock, NULL))
		install_on(lfirst_oid(lc), false);
	foreach(lc, capture_ancestors(relid))
	{
		LockRelationOid(lfirst_oid(lc), ShareRowExclusiveLock);
		install_on(lfirst_oid(lc), false);
	}
}

PG_FUNCTION_INFO_V1(flowpg_repair_capture);

/*
 * flowpg._repair_capture(), run by the extension's update scripts: every
 * flow's sources get the capture triggers of this version, in the states
 * it gives them, so that flows made by an older release capture as new
 * ones do without being re-created.  Returns the tables it looked at.
 */
Datum
flowpg_repair_capture(PG_FUNCTION_ARGS)
{
	List	   *tables = NIL;
	ListCell   *lc;
	ListCell   *lc2;

	foreach(lc, catalog_get_all())
		foreach(lc2, ((FlowEntry *) lfirst(lc))->source_relids)
			tables = list_append_unique_oid(tables, lfirst_oid(lc2));
	foreach(lc, tables)
	{
		LockRelationOid(lfirst_oid(lc), ShareRowExclusiveLock);
		foreach(lc2, find_all_inheritors(lfirst_oid(lc), ShareRowExclusiveLock, NULL))
			install_on(lfirst_oid(lc2), true);
		foreach(lc2, capture_ancestors(lfirst_oid(lc)))
		{
			LockRelationOid(lfirst_oid(lc2), ShareRowExclusiveLock);
			install_on(lfirst_oid(lc2), true);
		}
	}
	PG_RETURN_INT32(list_length(tables));
}

static void remove_from(Oid relid);

/*
 * The time ordinals the rows of table relid span in the flow's time
 * column, which the flow reads from its ancestor table: lo > hi when it
 * has no rows.  False when its rows cannot be placed by time: the flow's
 * time column is another table's, or some rows have no time.
 */
static bool
rows_time_span(FlowEntry *flow, Oid ancestor, Oid relid, int64 *lo, int64 *hi)
{
	AttrNumber	attno;
	Oid			type;
	bool		isnull;
	bool		placed;
	Datum		d;

	if (flow->time_relid != ancestor)
		return false;
	attno = get_attnum(relid, get_attname(ancestor, flow->time_attno, false));
	if (attno == InvalidAttrNumber)
		return false;
	type = get_atttype(relid, attno);
	privileged_query(psprintf("SELECT min(%1$s), max(%1$s), count(*) - count(%1$s) FROM %2$s",
							  quote_identifier(get_attname(relid, attno, false)),
							  quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)),
														 get_rel_name(relid))),
					 0, NULL, NULL, NULL);
	placed = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 3, &isnull)) == 0;
	*lo = 1;
	*hi = 0;
	d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	if (placed && !isnull)
	{
		*lo = window_datum_to_ordinal(type, d);
		*hi = window_datum_to_ordinal(type, SPI_getbinval(SPI_tuptable->vals[0],
														  SPI_tuptable->tupdesc, 2, &isnull));
	}
	privileged_query_end();
	return placed;
}

void
capture_log_inherited(Oid relid)
{
	List	   *tables;
	List	   *flows = flows_reading(relid, &tables);
	ListCell   *lc;
	ListCell   *lc2;

	forboth(lc, flows, lc2, tables)
	{
		FlowEntry  *flow = lfirst(lc);
		int64		lo;
		int64		hi;

		if (lfirst_oid(lc2) == relid)
			continue;
		/*
		 * The windows of its rows, when its times say which: a partition
		 * dropped by retention then recomputes nothing before a flow's
		 * horizon.
		 */
		if (rows_time_span(flow, lfirst_oid(lc2), relid, &lo, &hi))
		{
			if (lo <= hi)
				dirty_log_append(flow->flow_id, false, lo, hi, 0);
		}
		else
			dirty_log_append(flow->flow_id, true, 0, 0, 0);
	}
}

/* Does a flow read this table, an ancestor or a descendant of it? */
bool
capture_table_has_flows(Oid relid)
{
	List	   *tables;

	return flows_reading(relid, &tables) != NIL;
}

/* Removes the capture triggers of relid and its descendants that serve no flow. */
static void
remove_unused_tree(Oid relid)
{
	ListCell   *lc;

	/*
	 * The lock first, the decision after: a create_flow in progress on the
	 * table holds this lock (self-conflicting) from before it found our
	 * triggers and skipped installing them until it commits, and the
	 * catalog is read with the latest snapshot -- so its flow is seen.
	 */
	if (get_rel_name(relid) == NULL)
		return;
	LockRelationOid(relid, ShareRowExclusiveLock);
	if (get_rel_name(relid) == NULL || capture_table_has_flows(relid))
		return;
	/* its partitions and children too: a flow may be being made on one */
	foreach(lc, find_all_inheritors(relid, ShareRowExclusiveLock, NULL))
		if (!capture_table_has_flows(lfirst_oid(lc)))
			remove_from(lfirst_oid(lc));
}

void
capture_remove_if_unused(Oid relid)
{
	ListCell   *lc;

	/*
	 * And its ancestors', installed for flows on it: the last of a
	 * partition's flows may go after a flow on its parent did, whatever
	 * the order of the drops.
	 */
	List	   *ancestors = capture_ancestors(relid);

	remove_unused_tree(relid);
	foreach(lc, ancestors)
		remove_unused_tree(lfirst_oid(lc));
}

static void
remove_from(Oid relid)
{
	char	   *table = quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)),
												   get_rel_name(relid));

	for (int i = 0; i < lengthof(capture_triggers); i++)
		if (OidIsValid(get_trigger_oid(relid, capture_triggers[i].name, true)))
			privileged_execute(psprintf("DROP TRIGGER %s ON %s",
												quote_identifier(capture_triggers[i].name),
												table),
									   0, NULL, NULL, NULL);
}

/*
 * Removes capture triggers that serve no flow any more, anywhere in the
 * database (a partition detached from a source keeps them otherwise).
 */
void
capture_sweep(void)
{
	Relation	rel = table_open(TriggerRelationId, AccessShareLock);
	SysScanDesc scan = systable_beginscan(rel, InvalidOid, false, NULL, 0, NULL);
	HeapTuple	tuple;
	List	   *tables = NIL;
	ListCell   *lc;

	while ((tuple = systable_getnext(scan)) != NULL)
	{
		Form_pg_trigger trigger = (Form_pg_trigger) GETSTRUCT(tuple);

		if (capture_trigger_state(NameStr(trigger->tgname)) != '\0')
			tables = list_append_unique_oid(tables, trigger->tgrelid);
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	foreach(lc, tables)
	{
		/*
		 * Tables that serve flows are left alone without a lock (their
		 * writers must not wait for this DDL); the others are locked
		 * before deciding again, as in capture_remove_if_unused.
		 */
		if (capture_table_has_flows(lfirst_oid(lc)))
			continue;
		LockRelationOid(lfirst_oid(lc), ShareRowExclusiveLock);
		if (get_rel_name(lfirst_oid(lc)) != NULL && !capture_table_has_flows(lfirst_oid(lc)))
			remove_from(lfirst_oid(lc));
	}
}
