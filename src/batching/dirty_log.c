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
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "catalog.h"
#include "privileged.h"
#include "dirty_log.h"
#include "registry.h"
#include "pool.h"

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

static List *xact_flows = NIL;	/* XactFlow, in TopTransactionContext */
static bool precommit_done = false;
static bool callback_registered = false;
static Oid	dirty_log_relid = InvalidOid;

static void dirty_log_xact_callback(XactEvent event, void *arg);

static void
relcache_callback(Datum arg, Oid relid)
{
	if (relid == InvalidOid || relid == dirty_log_relid)
		dirty_log_relid = InvalidOid;
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
		xact_flow(flow_id)->in_registry = registry_note_dirty(flow_id);
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
			break;
		case XACT_EVENT_PRE_COMMIT:
			append_noted();
			/* before the commit: nothing after it may fail */
			foreach(lc, xact_flows)
			{
				XactFlow   *xf = lfirst(lc);

				if (xf->logged)
					xf->in_registry = registry_note_dirty(xf->flow_id);
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
			precommit_done = false;
			break;
		default:
			break;
	}
}

List *
dirty_log_read(int64 flow_id, int limit)
{
	Oid			argtypes[1] = {INT8OID};
	Datum		args[1] = {Int64GetDatum(flow_id)};
	List	   *entries = NIL;
	MemoryContext caller = CurrentMemoryContext;
	char	   *sql = psprintf("SELECT ctid, lo, hi, nrows FROM flowpg.dirty_log WHERE flow_id = $1 "
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

List *
dirty_log_flows(void)
{
	List	   *flows = NIL;
	MemoryContext caller = CurrentMemoryContext;

	privileged_query("SELECT flow_id, min(logged_at) FROM flowpg.dirty_log GROUP BY flow_id",
							 0, NULL, NULL, NULL);
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		bool		isnull;
		MemoryContext old = MemoryContextSwitchTo(caller);
		DirtyFlow  *flow = palloc(sizeof(DirtyFlow));

		flow->flow_id = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull));
		flow->oldest = DatumGetTimestampTz(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2, &isnull));
		flows = lappend(flows, flow);
		MemoryContextSwitchTo(old);
	}
	privileged_query_end();
	return flows;
}

void
dirty_log_forget(int64 flow_id)
{
	privileged_execute_for_flow("DELETE FROM flowpg.dirty_log WHERE flow_id = $1", flow_id);
}
