/*-------------------------------------------------------------------------
 *
 * dirty_log.c
 *	  The dirty log: what must be recomputed from the source, durably.
 *
 * An entry (flow, lo, hi, rows) names the time ordinals (µs for
 * timestamps, days for dates, integers as they are) of rows a committed
 * transaction changed; lo/hi NULL names the whole flow.  Entries belong to
 * the transaction that writes them: an abort or a rolled-back savepoint
 * takes them away, a commit or PREPARE makes them durable.  The batching
 * refresh consumes them; the streaming engine sends there what it cannot
 * apply incrementally.
 *
 * The batching flows of one source table share their entries: a writer
 * notes the ranges its statements changed per (table, time column) and
 * appends, when it commits or prepares, one row per range to
 * flowpg.table_dirty_log naming every batching flow it dirties (a few
 * disjoint ranges per transaction; the closest are merged beyond that),
 * with its transaction id.  The notes are kept per savepoint level: a
 * rollback takes its own away.  A flow's refresh first claims the shared
 * rows it has not seen: it moves them, merged per second of their start,
 * into its own entries and records the snapshot it read them in
 * (flowpg.table_dirty_seen) -- the rows committed later are the ones not
 * visible in it.  So a flow consumes shared rows without writing them, and
 * no refresh waits for another's; the worker deletes the rows all their
 * flows have seen (dirty_log_trim).
 *
 * Writers append with simple_heap_insert, so they need no rights on
 * flowpg's tables; there is no index, so that appending stays cheap.
 * Row-level capture (logical replication appliers, see capture.c) widens
 * one pending range per flow and transaction instead, appended once at
 * PRE_COMMIT / PRE_PREPARE.  At PRE_COMMIT the flows with new entries are
 * flagged in shared memory for the worker, which is woken at COMMIT.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/transam.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"
#include "utils/xid8.h"

#include "catalog.h"
#include "privileged.h"
#include "dirty_log.h"
#include "pool.h"

dirty_log_commit_hook_type dirty_log_commit_hook = NULL;

static bool
note_commit(int64 flow_id)
{
	return dirty_log_commit_hook != NULL && dirty_log_commit_hook(flow_id);
}

PG_FUNCTION_INFO_V1(flowpg_dirty_row_restored);

/* A flow's changes of this transaction. */
typedef struct XactFlow
{
	int64		flow_id;
	bool		logged;			/* entries appended */
	bool		in_registry;	/* a streaming flow's slot noted them */
	bool		noted;			/* rows noted, not appended yet */
	bool		whole;
	int64		lo;
	int64		hi;
	int64		nrows;
} XactFlow;

/* Disjoint ranges a transaction keeps per table before merging the closest. */
#define TABLE_RANGES_MAX 8

/* The changes of this transaction to one table's time column, for its batching flows. */
typedef struct XactTable
{
	Oid			relid;
	AttrNumber	attno;			/* 0: the flows have no time column here */
	int			level;			/* subtransaction nest level that noted it */
	int			nflows;
	int64	   *flows;
	bool		whole;
	int64		nrows;
	int			nranges;
	int64		lo[TABLE_RANGES_MAX + 1];
	int64		hi[TABLE_RANGES_MAX + 1];
} XactTable;

static List *xact_flows = NIL;	/* XactFlow, in TopTransactionContext */
static List *xact_tables = NIL; /* XactTable, in TopTransactionContext */
static bool tables_logged = false;
static bool precommit_done = false;
static bool callback_registered = false;
static Oid	dirty_log_relid = InvalidOid;
static Oid	table_dirty_log_relid = InvalidOid;

static void dirty_log_xact_callback(XactEvent event, void *arg);
static void append_tables(void);
static void dirty_log_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
									   SubTransactionId parentSubid, void *arg);

static void
relcache_callback(Datum arg, Oid relid)
{
	if (relid == InvalidOid || relid == dirty_log_relid || relid == table_dirty_log_relid)
	{
		dirty_log_relid = InvalidOid;
		table_dirty_log_relid = InvalidOid;
	}
}

/*
 * Called from _PG_init, so that the commit callback exists before any other
 * PRE_COMMIT callback appends to the log: one registered while callbacks are
 * being called would miss this commit, and its worker would learn of the
 * entry only at its next periodic look.  Also called on first use, for a
 * backend that loaded flowpg late.
 */
void
dirty_log_register_callbacks(void)
{
	if (callback_registered)
		return;
	RegisterXactCallback(dirty_log_xact_callback, NULL);
	RegisterSubXactCallback(dirty_log_subxact_callback, NULL);
	CacheRegisterRelcacheCallback(relcache_callback, (Datum) 0);
	callback_registered = true;
}

static Oid
get_dirty_log_relid(void)
{
	dirty_log_register_callbacks();
	if (!OidIsValid(dirty_log_relid))
		dirty_log_relid = get_relname_relid("dirty_log", get_namespace_oid("flowpg", false));
	if (!OidIsValid(dirty_log_relid))
		elog(ERROR, "flowpg.dirty_log is missing");
	return dirty_log_relid;
}

/*
 * InvalidOid while the database's objects predate the shared log (before
 * 0.3), or once the extension is dropped.
 */
static Oid
get_table_dirty_log_relid(void)
{
	Oid			nspid;

	dirty_log_register_callbacks();
	/* (missing-ok: a transaction may commit after dropping the extension) */
	if (!OidIsValid(table_dirty_log_relid) &&
		OidIsValid(nspid = get_namespace_oid("flowpg", true)))
		table_dirty_log_relid = get_relname_relid("table_dirty_log", nspid);
	return table_dirty_log_relid;
}

static XactFlow *
xact_flow(int64 flow_id)
{
	ListCell   *lc;
	XactFlow   *xf;
	MemoryContext old;

	foreach(lc, xact_flows)
	{
		xf = lfirst(lc);
		if (xf->flow_id == flow_id)
			return xf;
	}
	old = MemoryContextSwitchTo(TopTransactionContext);
	xf = palloc0(sizeof(XactFlow));
	xf->flow_id = flow_id;
	xf->lo = PG_INT64_MAX;
	xf->hi = PG_INT64_MIN;
	xact_flows = lappend(xact_flows, xf);
	MemoryContextSwitchTo(old);
	return xf;
}

void
dirty_log_append(int64 flow_id, bool whole, int64 lo, int64 hi, int64 nrows)
{
	Relation	rel = table_open(get_dirty_log_relid(), RowExclusiveLock);
	Datum		values[5];
	bool		nulls[5] = {false, whole, whole, false, false};
	HeapTuple	tuple;

	values[0] = Int64GetDatum(flow_id);
	values[1] = Int64GetDatum(lo);
	values[2] = Int64GetDatum(hi);
	values[3] = Int64GetDatum(nrows);
	values[4] = TimestampTzGetDatum(GetCurrentTimestamp());
	tuple = heap_form_tuple(RelationGetDescr(rel), values, nulls);
	simple_heap_insert(rel, tuple);
	heap_freetuple(tuple);
	table_close(rel, RowExclusiveLock);

	xact_flow(flow_id)->logged = true;
	/* appended by another PRE_COMMIT callback after ours: flag it now */
	if (precommit_done)
		xact_flow(flow_id)->in_registry = note_commit(flow_id);
}

void
dirty_log_note_row(int64 flow_id, bool whole, int64 t)
{
	XactFlow   *xf;

	(void) get_dirty_log_relid();	/* registers the commit callback */
	xf = xact_flow(flow_id);
	xf->noted = true;
	xf->nrows++;
	if (whole)
		xf->whole = true;
	else
	{
		xf->lo = Min(xf->lo, t);
		xf->hi = Max(xf->hi, t);
	}
}

bool
dirty_log_written_here(int64 flow_id)
{
	ListCell   *lc;

	foreach(lc, xact_flows)
	{
		XactFlow   *xf = lfirst(lc);

		if (xf->flow_id == flow_id && (xf->logged || xf->noted))
			return true;
	}
	return false;
}

/* The notes of a table's column at a nest level; NULL if none (and not create). */
static XactTable *
find_table(Oid relid, AttrNumber attno, int level, bool create)
{
	ListCell   *lc;
	XactTable  *xt;
	MemoryContext old;

	foreach(lc, xact_tables)
	{
		xt = lfirst(lc);
		if (xt->relid == relid && xt->attno == attno && xt->level == level)
			return xt;
	}
	if (!create)
		return NULL;
	xt = MemoryContextAllocZero(TopTransactionContext, sizeof(XactTable));
	xt->relid = relid;
	xt->attno = attno;
	xt->level = level;
	old = MemoryContextSwitchTo(TopTransactionContext);
	xact_tables = lappend(xact_tables, xt);
	MemoryContextSwitchTo(old);
	return xt;
}

/*
 * Adds flows to the notes.  A flow created since the last statement (the
 * capture's cache was reset) joins: it recomputes the earlier ranges too.
 */
static void
add_flows(XactTable *xt, const int64 *flows, int nflows)
{
	for (int i = 0; i < nflows; i++)
	{
		bool		known = false;

		for (int j = 0; j < xt->nflows && !known; j++)
			known = xt->flows[j] == flows[i];
		if (known)
			continue;
		xt->flows = xt->flows ? repalloc(xt->flows, sizeof(int64) * (xt->nflows + 1)) :
			MemoryContextAlloc(TopTransactionContext, sizeof(int64));
		xt->flows[xt->nflows++] = flows[i];
	}
}

/* Adds lo..hi to a table's ranges: overlapping ones merge, the closest beyond the cap. */
static void
add_range(XactTable *xt, int64 lo, int64 hi)
{
	int			n = xt->nranges;

	xt->lo[n] = lo;
	xt->hi[n] = hi;
	xt->nranges = ++n;
	for (;;)
	{
		int			best_a = -1;
		int			best_b = -1;
		uint64		best_gap = PG_UINT64_MAX;

		for (int a = 0; a < n; a++)
			for (int b = 0; b < n; b++)
			{
				uint64		gap;

				if (a == b || xt->lo[a] > xt->lo[b])
					continue;
				/* b starts at or after a: the gap between a's end and b's start */
				gap = xt->lo[b] <= xt->hi[a] ? 0 : (uint64) xt->lo[b] - (uint64) xt->hi[a];
				if (gap < best_gap)
				{
					best_gap = gap;
					best_a = a;
					best_b = b;
				}
			}
		if (best_a < 0 || (best_gap > 1 && n <= TABLE_RANGES_MAX))
			break;
		xt->hi[best_a] = Max(xt->hi[best_a], xt->hi[best_b]);
		xt->lo[best_b] = xt->lo[n - 1];
		xt->hi[best_b] = xt->hi[n - 1];
		xt->nranges = --n;
	}
}

void
dirty_log_note_table(Oid relid, AttrNumber attno, const int64 *flows, int nflows,
					 bool whole, int64 lo, int64 hi, int64 nrows)
{
	XactTable  *xt;

	if (nflows == 0)
		return;
	/* registers the commit callback */
	if (!OidIsValid(get_table_dirty_log_relid()))
	{
		/* not updated yet: each flow's own entry, as before */
		for (int i = 0; i < nflows; i++)
			dirty_log_append(flows[i], whole || attno == 0, lo, hi, nrows);
		return;
	}
	xt = find_table(relid, attno, GetCurrentTransactionNestLevel(), true);
	add_flows(xt, flows, nflows);
	xt->nrows += nrows;
	if (whole || attno == 0)
		xt->whole = true;
	else if (lo <= hi)
		add_range(xt, lo, hi);
	/* noted by another PRE_COMMIT callback after ours: appended now */
	if (precommit_done)
		append_tables();
}

/*
 * A savepoint's notes go with it when it is rolled back, and to its
 * parent's when it is released, as entries appended there would.
 */
static void
dirty_log_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
						   SubTransactionId parentSubid, void *arg)
{
	int			level = GetCurrentTransactionNestLevel();
	List	   *kept = NIL;
	ListCell   *lc;
	MemoryContext old;

	if (xact_tables == NIL ||
		(event != SUBXACT_EVENT_ABORT_SUB && event != SUBXACT_EVENT_COMMIT_SUB))
		return;
	foreach(lc, xact_tables)
		if (((XactTable *) lfirst(lc))->level >= level)
			break;
	if (lc == NULL)
		return;					/* nothing noted at this level */
	old = MemoryContextSwitchTo(TopTransactionContext);
	foreach(lc, xact_tables)
	{
		XactTable  *xt = lfirst(lc);
		XactTable  *parent;

		if (xt->level < level)
			kept = lappend(kept, xt);
		else if (event == SUBXACT_EVENT_COMMIT_SUB)
		{
			parent = find_table(xt->relid, xt->attno, level - 1, false);
			if (parent == NULL)
			{
				xt->level = level - 1;
				kept = lappend(kept, xt);
				continue;
			}
			/* into the parent's notes, as a note made there */
			add_flows(parent, xt->flows, xt->nflows);
			parent->nrows += xt->nrows;
			parent->whole |= xt->whole;
			for (int r = 0; r < xt->nranges; r++)
				add_range(parent, xt->lo[r], xt->hi[r]);
		}
	}
	list_free(xact_tables);
	xact_tables = kept;
	MemoryContextSwitchTo(old);
}

/* Appends one shared row per range the transaction's tables noted. */
static void
append_tables(void)
{
	ListCell   *lc;
	Relation	rel;
	TimestampTz now;

	if (xact_tables == NIL || !OidIsValid(get_table_dirty_log_relid()))
		return;
	rel = table_open(get_table_dirty_log_relid(), RowExclusiveLock);
	now = GetCurrentTimestamp();
	foreach(lc, xact_tables)
	{
		XactTable  *xt = lfirst(lc);
		Datum	   *ids = palloc(sizeof(Datum) * Max(xt->nflows, 1));
		ArrayType  *flows;
		int64		nrows_left = xt->nrows;

		for (int i = 0; i < xt->nflows; i++)
			ids[i] = Int64GetDatum(xt->flows[i]);
		if (xt->nflows == 0)
			continue;			/* its flows were dropped in this transaction */
		flows = construct_array(ids, xt->nflows, INT8OID, sizeof(int64), FLOAT8PASSBYVAL,
								TYPALIGN_DOUBLE);
		for (int r = 0; r < (xt->whole ? 1 : xt->nranges); r++)
		{
			Datum		values[6];
			bool		nulls[6] = {false, false, xt->whole, xt->whole, false, false};
			HeapTuple	tuple;

			values[0] = FullTransactionIdGetDatum(GetTopFullTransactionId());
			values[1] = PointerGetDatum(flows);
			values[2] = Int64GetDatum(xt->whole ? 0 : xt->lo[r]);
			values[3] = Int64GetDatum(xt->whole ? 0 : xt->hi[r]);
			/* the rows counted once, on the first range */
			values[4] = Int64GetDatum(nrows_left);
			values[5] = TimestampTzGetDatum(now);
			nrows_left = 0;
			tuple = heap_form_tuple(RelationGetDescr(rel), values, nulls);
			simple_heap_insert(rel, tuple);
			heap_freetuple(tuple);
			tables_logged = true;
		}
	}
	table_close(rel, RowExclusiveLock);
	xact_tables = NIL;
}

/* Appends the ranges row-level capture noted. */
static void
append_noted(void)
{
	ListCell   *lc;

	foreach(lc, xact_flows)
	{
		XactFlow   *xf = lfirst(lc);

		if (!xf->noted)
			continue;
		xf->noted = false;
		dirty_log_append(xf->flow_id, xf->whole || xf->lo > xf->hi, xf->lo, xf->hi, xf->nrows);
	}
}

static void
dirty_log_xact_callback(XactEvent event, void *arg)
{
	ListCell   *lc;
	bool		wake = false;
	bool		wake_streaming = false;

	switch (event)
	{
		case XACT_EVENT_PRE_PREPARE:
			append_noted();
			append_tables();
			/* notes of another PRE_PREPARE callback after ours: appended at once */
			precommit_done = true;
			break;
		case XACT_EVENT_PRE_COMMIT:
			append_noted();
			append_tables();
			/* before the commit: nothing after it may fail */
			foreach(lc, xact_flows)
			{
				XactFlow   *xf = lfirst(lc);

				if (xf->logged)
					xf->in_registry = note_commit(xf->flow_id);
			}
			precommit_done = true;
			break;
		case XACT_EVENT_COMMIT:
			foreach(lc, xact_flows)
			{
				XactFlow   *xf = lfirst(lc);

				wake |= xf->logged;
				wake_streaming |= xf->in_registry;
			}
			wake |= tables_logged;

			/*
			 * A streaming flow's round wants its dirt now; a batching flow
			 * runs no sooner than min_refresh_interval after its last run,
			 * and the worker knows when that is.
			 */
			if (wake_streaming)
				pool_wake(MyDatabaseId);
			else if (wake)
				pool_wake_for_batching(MyDatabaseId);
			/* FALLTHROUGH */
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PREPARE:
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_PARALLEL_ABORT:
			xact_flows = NIL;	/* the memory goes with TopTransactionContext */
			xact_tables = NIL;
			tables_logged = false;
			precommit_done = false;
			break;
		default:
			break;
	}
}

/* A shared row t naming flow $1 that the flow has not claimed yet. */
#define UNCLAIMED_BY_1 \
	" $1 = ANY (t.flows) AND NOT coalesce(pg_catalog.pg_visible_in_snapshot(t.xid, " \
	"   (SELECT s.seen FROM flowpg.table_dirty_seen s WHERE s.flow_id = $1)), false) "

/*
 * A refresh in the writer's own transaction sees its changes, as it sees
 * its rows: the flow's part of the transaction's notes becomes its own
 * entries now (not from within a savepoint, whose rollback would take the
 * parent's notes with it; its changes are then claimed after the commit).
 */
static void
take_own_notes(int64 flow_id)
{
	ListCell   *lc;

	if (GetCurrentTransactionNestLevel() != 1)
		return;
	foreach(lc, xact_tables)
	{
		XactTable  *xt = lfirst(lc);
		bool		named = false;

		for (int i = 0; i < xt->nflows; i++)
			if (xt->flows[i] == flow_id)
			{
				xt->flows[i] = xt->flows[--xt->nflows];
				named = true;
				break;
			}
		if (!named)
			continue;
		if (xt->whole)
			dirty_log_append(flow_id, true, 0, 0, xt->nrows);
		for (int r = 0; !xt->whole && r < xt->nranges; r++)
			dirty_log_append(flow_id, false, xt->lo[r], xt->hi[r], r == 0 ? xt->nrows : 0);
	}
}

/*
 * Claims the shared rows of the flow committed since its last claim: moves
 * them into its own entries, merged per unit of their start (a second for
 * timestamps, two around 2000-01-01 where the ordinals change sign: the
 * windows recomputed grow by at most that), and records the snapshot of
 * this statement as seen.  One statement, so that the rows moved are
 * exactly those visible in the snapshot recorded -- but for this
 * transaction's own, which its snapshot counts as visible (PostgreSQL
 * leaves a backend's own xid out of its snapshot's running ones) although
 * it appends them only when it commits: the snapshot recorded has its xid
 * put back among the running ones.
 */
static void
claim_shared(int64 flow_id, int64 unit)
{
	Oid			argtypes[2] = {INT8OID, INT8OID};
	Datum		args[2] = {Int64GetDatum(flow_id), Int64GetDatum(unit)};
	bool		any;

	if (unit <= 0)
		return;					/* not a batching flow: no shared rows */

	take_own_notes(flow_id);
	/* nothing to claim: no write (a flush in a read-only transaction works) */
	privileged_query("SELECT FROM flowpg.table_dirty_log t WHERE " UNCLAIMED_BY_1 " LIMIT 1",
					 1, argtypes, args, NULL);
	any = SPI_processed > 0;
	privileged_query_end();
	if (!any)
		return;
	privileged_execute("WITH claimed AS ("
					   "  SELECT min(t.lo) AS lo, max(t.hi) AS hi, sum(t.nrows) AS nrows, "
					   "         min(t.logged_at) AS logged_at "
					   "    FROM flowpg.table_dirty_log t WHERE " UNCLAIMED_BY_1
					   "   GROUP BY t.lo IS NULL, pg_catalog.div(t.lo, $2)), "
					   "moved AS (INSERT INTO flowpg.dirty_log (flow_id, lo, hi, nrows, logged_at) "
					   "  SELECT $1, lo, hi, nrows, logged_at FROM claimed) "
					   "INSERT INTO flowpg.table_dirty_seen (flow_id, seen) "
					   "SELECT $1, CASE WHEN m.me IS NULL OR NOT pg_catalog.pg_visible_in_snapshot(m.me, m.s) "
					   "  THEN m.s "
					   "  ELSE (LEAST(pg_catalog.pg_snapshot_xmin(m.s), m.me)::text || ':' || "
					   "        pg_catalog.pg_snapshot_xmax(m.s)::text || ':' || "
					   "        coalesce((SELECT pg_catalog.string_agg(u.x::text, ',' ORDER BY u.x) "
					   "                    FROM (SELECT pg_catalog.pg_snapshot_xip(m.s) AS x "
					   "                          UNION SELECT m.me) u), ''))::pg_catalog.pg_snapshot END "
					   "  FROM (SELECT pg_catalog.pg_current_snapshot() AS s, "
					   "               pg_catalog.pg_current_xact_id_if_assigned() AS me) m "
					   " WHERE EXISTS (SELECT FROM flowpg.flow WHERE flow_id = $1) "
					   "ON CONFLICT (flow_id) DO UPDATE SET seen = excluded.seen",
					   2, argtypes, args, NULL);
}

List *
dirty_log_read(int64 flow_id, int64 unit, int limit)
{
	Oid			argtypes[1] = {INT8OID};
	Datum		args[1] = {Int64GetDatum(flow_id)};
	List	   *entries = NIL;
	MemoryContext caller = CurrentMemoryContext;
	char	   *sql;

	claim_shared(flow_id, unit);
	sql = psprintf("SELECT ctid, lo, hi, nrows FROM flowpg.dirty_log WHERE flow_id = $1 "
				   "ORDER BY lo NULLS FIRST, hi LIMIT %d", limit);
	privileged_query(sql, 1, argtypes, args, NULL);
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		HeapTuple	tuple = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		MemoryContext old = MemoryContextSwitchTo(caller);
		DirtyEntry *e = palloc(sizeof(DirtyEntry));
		bool		isnull;

		e->tid = *(ItemPointer) DatumGetPointer(SPI_getbinval(tuple, desc, 1, &isnull));
		e->lo = DatumGetInt64(SPI_getbinval(tuple, desc, 2, &e->whole));
		e->hi = e->whole ? 0 : DatumGetInt64(SPI_getbinval(tuple, desc, 3, &isnull));
		e->nrows = DatumGetInt64(SPI_getbinval(tuple, desc, 4, &isnull));
		entries = lappend(entries, e);
		MemoryContextSwitchTo(old);
	}
	privileged_query_end();
	return entries;
}

void
dirty_log_delete(List *entries)
{
	Datum	   *tids;
	ListCell   *lc;
	ArrayType  *array;
	Oid			argtypes[1] = {TIDARRAYOID};
	Datum		args[1];
	int			n = 0;

	if (entries == NIL)
		return;
	tids = palloc(sizeof(Datum) * list_length(entries));
	foreach(lc, entries)
		tids[n++] = PointerGetDatum(&((DirtyEntry *) lfirst(lc))->tid);
	array = construct_array(tids, n, TIDOID, sizeof(ItemPointerData), false, TYPALIGN_SHORT);
	args[0] = PointerGetDatum(array);
	privileged_execute("DELETE FROM flowpg.dirty_log WHERE ctid = ANY ($1)",
					   1, argtypes, args, NULL);
}

int
dirty_log_delete_all(int64 flow_id, int64 *nrows)
{
	Oid			argtypes[1] = {INT8OID};
	Datum		args[1] = {Int64GetDatum(flow_id)};
	int			n;

	claim_shared(flow_id, PG_INT64_MAX);	/* (a streaming flow's claims nothing) */
	privileged_query("DELETE FROM flowpg.dirty_log WHERE flow_id = $1 RETURNING nrows",
					 1, argtypes, args, NULL);
	n = SPI_processed;
	*nrows = 0;
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		bool		isnull;

		*nrows += DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[i],
											  SPI_tuptable->tupdesc, 1, &isnull));
	}
	privileged_query_end();
	return n;
}

void
dirty_log_trim(void)
{
	static TimestampTz last_trim = 0;
	TimestampTz now = GetCurrentTimestamp();
	Oid			relid;

	/* now and then, not at every poll: it reads the whole shared log */
	if (now - last_trim < USECS_PER_SEC)
		return;
	last_trim = now;
	relid = get_table_dirty_log_relid();
	/* the worker waits for no one: a table someone locks is trimmed later */
	if (!OidIsValid(relid) || !ConditionalLockRelationOid(relid, RowExclusiveLock))
		return;
	/*
	 * A committed row whose xid this cluster has not reached came from
	 * another one without its restore trigger (pg_restore
	 * --disable-triggers): it takes this transaction's, to be claimed once
	 * more by every flow and then trimmed, instead of being claimed forever.
	 */
	privileged_execute("UPDATE flowpg.table_dirty_log SET xid = pg_catalog.pg_current_xact_id() "
					   " WHERE xid >= pg_catalog.pg_snapshot_xmax(pg_catalog.pg_current_snapshot())",
					   0, NULL, NULL, NULL);

	/*
	 * Per distinct list of flows: a row goes once every living flow of it
	 * has seen it (its transaction is older than the oldest transaction
	 * any of their snapshots still saw running); a living flow that never
	 * claimed keeps them all; rows of dropped flows only go at once.
	 * Locked rows are left for next time: the worker waits for no one.
	 */
	privileged_execute("WITH cut AS ("
					   "  SELECT a.flows, CASE WHEN bool_or(f.flow_id IS NOT NULL AND s.seen IS NULL) "
					   "                       THEN '0'::xid8 "
					   "                       ELSE min(pg_catalog.pg_snapshot_xmin(s.seen)) "
					   "                              FILTER (WHERE f.flow_id IS NOT NULL) END AS before "
					   "    FROM (SELECT DISTINCT flows FROM flowpg.table_dirty_log) a "
					   "    CROSS JOIN LATERAL pg_catalog.unnest(a.flows) AS o(id) "
					   "    LEFT JOIN flowpg.flow f ON f.flow_id = o.id AND NOT flowpg._on_streams(f.mode, f.options) "
					   "    LEFT JOIN flowpg.table_dirty_seen s ON s.flow_id = f.flow_id "
					   "   GROUP BY a.flows) "
					   "DELETE FROM flowpg.table_dirty_log WHERE ctid IN ("
					   "  SELECT t.ctid FROM flowpg.table_dirty_log t JOIN cut c ON c.flows = t.flows "
					   "   WHERE c.before IS NULL OR t.xid < c.before "
					   "     FOR UPDATE OF t SKIP LOCKED)",
					   0, NULL, NULL, NULL);
}

List *
dirty_log_flows(List *schedules)
{
	List	   *flows = NIL;
	MemoryContext caller = CurrentMemoryContext;
	int			n = list_length(schedules);
	Datum	   *ids = palloc(sizeof(Datum) * Max(n, 1));
	Datum	   *exact = palloc(sizeof(Datum) * Max(n, 1));
	Oid			argtypes[2] = {INT8ARRAYOID, BOOLARRAYOID};
	Datum		args[2];
	ListCell   *lc;
	int			i = 0;

	/* only a flow on ticks needs its oldest change: the others, any */
	foreach(lc, schedules)
	{
		ids[i] = Int64GetDatum(((FlowSchedule *) lfirst(lc))->flow_id);
		exact[i++] = BoolGetDatum(((FlowSchedule *) lfirst(lc))->eval_interval != NULL);
	}
	args[0] = PointerGetDatum(construct_array(ids, n, INT8OID, sizeof(int64),
											  FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
	args[1] = PointerGetDatum(construct_array(exact, n, BOOLOID, 1, true, TYPALIGN_CHAR));

	/*
	 * Called at every poll while a flow may be due: the first entry found
	 * will do, unless the oldest is needed (a flow on ticks), which reads
	 * all of the flow's.
	 */
	privileged_query("SELECT f.id, CASE WHEN f.exact "
					 "  THEN (SELECT min(d.logged_at) FROM flowpg.dirty_entries d WHERE d.flow_id = f.id) "
					 "  ELSE (SELECT d.logged_at FROM flowpg.dirty_entries d WHERE d.flow_id = f.id LIMIT 1) "
					 "  END AS oldest "
					 "FROM ROWS FROM (pg_catalog.unnest($1), pg_catalog.unnest($2)) AS f(id, exact)",
					 2, argtypes, args, NULL);
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		bool		isnull;
		MemoryContext old = MemoryContextSwitchTo(caller);
		DirtyFlow  *flow = palloc(sizeof(DirtyFlow));

		flow->flow_id = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull));
		flow->oldest = DatumGetTimestampTz(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2, &isnull));
		if (isnull)
		{
			MemoryContextSwitchTo(old);
			continue;			/* no entry */
		}
		flows = lappend(flows, flow);
		MemoryContextSwitchTo(old);
	}
	privileged_query_end();
	return flows;
}

void
dirty_log_forget(int64 flow_id)
{
	/*
	 * Its shared rows -- those this transaction's notes will append too:
	 * the drop may yet be rolled back -- go with dirty_log_trim once no
	 * living flow needs them, its seen snapshot with the flow.
	 */
	privileged_execute_for_flow("DELETE FROM flowpg.dirty_log WHERE flow_id = $1", flow_id);
}

/*
 * Rows of flowpg.table_dirty_log that arrive through SQL are restored ones
 * (writers use simple_heap_insert, which fires no trigger): their
 * transaction ids are another cluster's, so they take the restoring
 * transaction's -- every flow of theirs claims them once it has committed.
 */
Datum
flowpg_dirty_row_restored(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;
	TupleDesc	desc;
	int			column = 1;		/* xid */
	Datum		value = FullTransactionIdGetDatum(GetTopFullTransactionId());
	bool		isnull = false;

	if (!CALLED_AS_TRIGGER(fcinfo) || !TRIGGER_FIRED_BEFORE(trigdata->tg_event) ||
		!TRIGGER_FIRED_FOR_ROW(trigdata->tg_event) || !TRIGGER_FIRED_BY_INSERT(trigdata->tg_event))
		elog(ERROR, "flowpg_dirty_row_restored must be a BEFORE INSERT row trigger");
	desc = RelationGetDescr(trigdata->tg_relation);
	return PointerGetDatum(heap_modify_tuple_by_cols(trigdata->tg_trigtuple, desc, 1, &column,
													 &value, &isnull));
}
