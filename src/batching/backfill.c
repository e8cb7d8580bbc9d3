/*-------------------------------------------------------------------------
 *
 * backfill.c
 *	  Online backfill: a new or replaced flow's sink is computed from the
 *	  rows already in its source after create_flow committed, in pieces,
 *	  by the worker, while writers write.
 *
 * create_flow installs the capture under a SHARE ROW EXCLUSIVE lock of the
 * sources (it waits for writers in progress and keeps new ones out until
 * it commits, which is quick now) and records the flow here
 * (flowpg.flow_backfill).  Every change committed after create_flow is
 * captured; every change committed before is visible to any snapshot
 * taken after it.  The worker then recomputes the flow's windows in pieces
 * of its time range, each in a transaction of its own with a fresh
 * snapshot.  A recompute replaces whole windows with the query's result
 * under its snapshot, so a piece is exact whenever it runs, and changes
 * committed after its snapshot are in the dirty log or the stream, applied
 * after it (the flow's lock keeps pieces, rounds and refreshes apart):
 * nothing counts twice, nothing is missed at the seam.
 *
 * A streaming flow is backfilled by its state's first load instead, which
 * reads the source once and writes every group (stream_refill.c's
 * stream_refill_load).  Recomputing the sink in pieces beside the state
 * would not be exact: a batch that a piece's snapshot saw but the state had
 * not applied yet would be written as a new group into a sink that holds
 * it.  But a state that holds only the recent windows (flowpg.state_keep,
 * expire_after) loads from its floor on: the load records that floor
 * (end_before), and the rounds that follow (stream_round.c) recompute the
 * older windows in pieces, as a batching flow's -- exact there, since the
 * state holds none of them and sends their changes to the recompute.
 *
 * The time range is read once, at the first piece: rows committed later
 * are captured, whatever their time.  The first piece starts at the first
 * window and the last one ends after the last, so rows a replaced flow left
 * in its sink outside the range go too.  With expire_after the range is
 * the flow's history: from the source's oldest row (or backfill_from) on,
 * unclipped by the horizon, and sink rows of older windows stay.  A flow
 * without a time window is recomputed whole, in one piece.  flush_flow does
 * the rest of a backfill in the caller (backfill_complete).
 *
 * This file owns flowpg.flow_backfill.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/namespace.h"
#include "catalog/pg_index.h"
#include "common/int.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/partcache.h"
#include "utils/rel.h"
#include "utils/relcache.h"
#include "utils/syscache.h"

#include "backfill.h"
#include "refresh.h"
#include "catalog.h"
#include "flow_locks.h"
#include "privileged.h"
#include "planner.h"
#include "progress.h"

/* About this many source rows per piece, and at most this many pieces. */
#define PIECE_ROWS 500000
#define MAX_PIECES 1000

typedef struct Backfill
{
	bool		has_range;
	int64		time_lo;
	int64		time_hi;
	int64		done_until;		/* ordinals below it are done */
	int32		pieces_done;
	int32		pieces_total;
	bool		has_start;		/* backfill_from */
	TimestampTz start_at;
	bool		has_end;		/* a streaming flow's state holds the rest */
	int64		end_before;
	int64		rows_written;	/* by the pieces done */
} Backfill;

/* Does the sink hold rows (of this transaction's snapshot)? */
static bool
sink_has_rows(Oid sink_relid)
{
	bool		isnull;
	bool		found;

	privileged_query(psprintf("SELECT EXISTS (SELECT FROM %s)",
							  quote_qualified_identifier(get_namespace_name(get_rel_namespace(sink_relid)),
														 get_rel_name(sink_relid))),
					 0, NULL, NULL, NULL);
	found = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	privileged_query_end();
	return found;
}

void
backfill_begin(FlowEntry *entry, bool has_start, TimestampTz start_at)
{
	Oid			types[2] = {INT8OID, TIMESTAMPTZOID};
	Datum		values[2];
	char		nulls[2] = {' ', ' '};

	/*
	 * With expire_after, a sink that holds rows already (a replaced flow's,
	 * an existing table's) keeps those of the windows before the horizon:
	 * they may be all that is left of rows the source no longer has.  Only
	 * the maintained windows are computed, unless backfill_from says from
	 * where on.  (An ordinal of 'infinity' starts at the horizon.)
	 */
	if (!has_start && entry->expire_after && sink_has_rows(entry->sink_relid))
	{
		has_start = true;
		start_at = DT_NOEND;
	}
	values[0] = Int64GetDatum(entry->flow_id);
	values[1] = TimestampTzGetDatum(start_at);
	nulls[1] = has_start ? ' ' : 'n';

	privileged_execute("INSERT INTO flowpg.flow_backfill AS b (flow_id, start_at) VALUES ($1, $2) "
					   "ON CONFLICT (flow_id) DO UPDATE SET started_at = now(), "
					   "time_lo = NULL, time_hi = NULL, done_until = NULL, "
					   "pieces_done = 0, pieces_total = NULL, rows_written = 0, "
					   "start_at = excluded.start_at, end_before = NULL",
					   2, types, values, nulls);
}

/*
 * The table exists from 0.2 on; a database still at 0.1 under this library
 * (before ALTER EXTENSION UPDATE) has none: nothing is backfilling there,
 * and dropping a flow (DROP TABLE ... CASCADE) must still work.
 */
static bool
backfill_table_exists(void)
{
	Oid			nspid = get_namespace_oid("flowpg", true);

	return OidIsValid(nspid) && OidIsValid(get_relname_relid("flow_backfill", nspid));
}

void
backfill_forget(int64 flow_id)
{
	if (backfill_table_exists())
		privileged_execute_for_flow("DELETE FROM flowpg.flow_backfill WHERE flow_id = $1", flow_id);
}

static bool
read_backfill(int64 flow_id, Backfill *b)
{
	Oid			types[1] = {INT8OID};
	Datum		values[1] = {Int64GetDatum(flow_id)};
	bool		found;

	if (!backfill_table_exists())
		return false;
	privileged_query("SELECT time_lo, time_hi, done_until, pieces_done, pieces_total, "
					 "start_at, end_before, rows_written FROM flowpg.flow_backfill WHERE flow_id = $1",
					 1, types, values, NULL);
	found = SPI_processed == 1;
	if (found)
	{
		HeapTuple	tuple = SPI_tuptable->vals[0];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull;

		b->time_lo = DatumGetInt64(SPI_getbinval(tuple, desc, 1, &isnull));
		b->has_range = !isnull;
		b->time_hi = DatumGetInt64(SPI_getbinval(tuple, desc, 2, &isnull));
		b->done_until = DatumGetInt64(SPI_getbinval(tuple, desc, 3, &isnull));
		b->pieces_done = DatumGetInt32(SPI_getbinval(tuple, desc, 4, &isnull));
		b->pieces_total = DatumGetInt32(SPI_getbinval(tuple, desc, 5, &isnull));
		b->start_at = DatumGetTimestampTz(SPI_getbinval(tuple, desc, 6, &isnull));
		b->has_start = !isnull;
		b->end_before = DatumGetInt64(SPI_getbinval(tuple, desc, 7, &isnull));
		b->has_end = !isnull;
		b->rows_written = DatumGetInt64(SPI_getbinval(tuple, desc, 8, &isnull));
	}
	privileged_query_end();
	return found;
}

bool
backfill_pending(int64 flow_id)
{
	Backfill	b;

	return read_backfill(flow_id, &b);
}

static void
record_piece(int64 flow_id, const Backfill *b, uint64 rows)
{
	Oid			types[6] = {INT8OID, INT8OID, INT8OID, INT8OID, INT4OID, INT8OID};
	Datum		values[6];

	values[0] = Int64GetDatum(flow_id);
	values[1] = Int64GetDatum(b->time_lo);
	values[2] = Int64GetDatum(b->time_hi);
	values[3] = Int64GetDatum(b->done_until);
	values[4] = Int32GetDatum(b->pieces_total);
	values[5] = Int64GetDatum((int64) rows);
	privileged_execute("UPDATE flowpg.flow_backfill SET time_lo = $2, time_hi = $3, "
							   "done_until = $4, pieces_total = $5, pieces_done = pieces_done + 1, "
							   "rows_written = rows_written + $6 WHERE flow_id = $1",
							   6, types, values, NULL);
}

/*
 * Can a piece find the rows of its time range without reading all of the
 * source: an index (btree, BRIN, ...) led by the time column, or a
 * partitioning by it?  Otherwise the backfill is one piece: more would
 * each read the whole table.
 */
static bool
time_is_indexed(FlowEntry *entry)
{
	Relation	rel = table_open(entry->time_relid, AccessShareLock);
	List	   *indexes = RelationGetIndexList(rel);
	bool		found = false;
	ListCell   *lc;

	if (rel->rd_rel->relkind == RELKIND_PARTITIONED_TABLE &&
		get_partition_col_attnum(RelationGetPartitionKey(rel), 0) == entry->time_attno)
		found = true;
	foreach(lc, indexes)
	{
		HeapTuple	tuple = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(lfirst_oid(lc)));

		if (HeapTupleIsValid(tuple))
		{
			Form_pg_index index = (Form_pg_index) GETSTRUCT(tuple);

			if (index->indnatts > 0 && index->indkey.values[0] == entry->time_attno &&
				heap_attisnull(tuple, Anum_pg_index_indpred, NULL))
				found = true;
			ReleaseSysCache(tuple);
		}
	}
	list_free(indexes);
	table_close(rel, AccessShareLock);
	return found;
}

/*
 * With expire_after the backfill computes the flow's history: every window
 * from the source's oldest row (or backfill_from) on, those before the
 * horizon too, which nothing recomputes afterwards.  Sink rows of older
 * windows stay: a replaced flow's history whose rows the source no longer
 * has.  A recording rule's expire_after is about its ticks: not this.
 */
static bool
backfills_history(FlowEntry *entry)
{
	return entry->expire_after != NULL && !flow_plan_for_entry(entry)->recording_rule;
}

/*
 * The backfill's time range, read under the first piece's snapshot (after
 * create_flow committed: rows committed later are captured, whatever their
 * time).  False when the flow is computed whole at once: no window, no
 * rows from backfill_from on, rows without a time (no range holds their
 * group; with expire_after that group is not maintained), or a query using
 * now() (one instant for all of it).
 */
static bool
establish_range(FlowEntry *entry, Backfill *b)
{
	int64		rows;
	bool		null_times;
	int64		span;

	if (b->has_range)
		return true;
	if (!refresh_time_bounds(entry, b->has_start, b->start_at, &b->time_lo, &b->time_hi, &rows,
						   &null_times) ||
		(null_times && !backfills_history(entry)) || flow_plan_for_entry(entry)->uses_now)
		return false;

	/*
	 * A piece reads its range through an index, or all of the source; a
	 * range too wide for int64 arithmetic ('infinity') is one piece.
	 */
	b->pieces_total = !time_is_indexed(entry) ||
		pg_sub_s64_overflow(b->time_hi, b->time_lo, &span) ? 1 :
		(int32) Min(Max((rows + PIECE_ROWS - 1) / PIECE_ROWS, 1), MAX_PIECES);
	b->done_until = b->time_lo;
	b->has_range = true;
	return true;
}

/*
 * Recomputes the windows from b->done_until (the first piece: from the
 * first window, or from the oldest row's with expire_after) to the window
 * holding hi, or to the last window.
 */
static uint64
refresh_from(FlowEntry *entry, const Backfill *b, bool has_hi, int64 hi)
{
	bool		history = backfills_history(entry);
	bool		first = b->pieces_done == 0;

	/*
	 * The first piece deletes the rows of no window, and the last goes on
	 * after the last window: a replaced flow's old rows go (within the
	 * horizon, with expire_after).  The source had no rows without a time
	 * at the first piece's snapshot, and any written since are captured.
	 */
	return refresh_ordinals(entry, !first || history, b->done_until, has_hi, hi,
								  first && !history, history);
}

static bool
backfill_piece(FlowEntry *entry, uint64 *rows_out)
{
	Backfill	b;
	int64		time_hi;
	int64		piece_hi;
	bool		last;

	*rows_out = 0;
	flow_lock(entry->flow_id);	/* pieces, rounds and refreshes one at a time */
	if (!read_backfill(entry->flow_id, &b))
		return false;
	/* a streaming flow's load did it all, or leaves the windows before end_before */
	if (flow_on_streams(entry) && !b.has_end)
	{
		backfill_forget(entry->flow_id);
		return false;
	}
	if (!establish_range(entry, &b))
	{
		*rows_out = refresh_ordinals(entry, false, 0, false, 0, false, false);
		backfill_forget(entry->flow_id);
		return false;
	}
	/*
	 * A streaming flow's pieces stop where its state's load began (which a
	 * reload may move: the range read at the first piece is kept whole).
	 */
	time_hi = b.has_end ? Min(b.time_hi, b.end_before - 1) : b.time_hi;
	if (b.done_until > time_hi)
	{
		backfill_forget(entry->flow_id);
		return false;
	}
	progress_counts(b.pieces_done, b.pieces_total, -1, -1);
	last = b.pieces_total <= 1 || b.pieces_done + 1 >= b.pieces_total;
	piece_hi = time_hi;
	if (!last)
	{
		int64		width = (b.time_hi - b.time_lo) / b.pieces_total + 1;

		if (pg_add_s64_overflow(b.done_until, width - 1, &piece_hi) || piece_hi >= time_hi)
			last = true;
	}
	if (last)
		piece_hi = time_hi;
	*rows_out = refresh_from(entry, &b, !last || b.has_end, piece_hi);
	if (last)
	{
		backfill_forget(entry->flow_id);
		return false;
	}
	b.done_until = piece_hi + 1;
	record_piece(entry->flow_id, &b, *rows_out);
	return true;
}

/* flowpg.flow_progress counts a backfill's pieces as its windows. */
bool
backfill_step(FlowEntry *entry, uint64 *rows_out)
{
	bool		more;

	progress_begin(entry->flow_id, PROGRESS_BACKFILL);
	more = backfill_piece(entry, rows_out);
	progress_end();
	return more;
}

uint64
backfill_complete(FlowEntry *entry)
{
	Backfill	b;
	uint64		rows;

	flow_lock(entry->flow_id);
	if (!read_backfill(entry->flow_id, &b))
		return 0;
	/* what the worker has not done yet, to the last window */
	if (establish_range(entry, &b))
		rows = refresh_from(entry, &b, false, 0);
	else
		rows = refresh_ordinals(entry, false, 0, false, 0, false, false);
	backfill_forget(entry->flow_id);
	/* and what its pieces wrote: the backfill's rows */
	return rows + (uint64) Max(b.rows_written, 0);
}

void
backfill_set_end(int64 flow_id, int64 end_before)
{
	Oid			types[2] = {INT8OID, INT8OID};
	Datum		values[2] = {Int64GetDatum(flow_id), Int64GetDatum(end_before)};

	privileged_execute("UPDATE flowpg.flow_backfill SET end_before = $2 WHERE flow_id = $1",
					   2, types, values, NULL);
}
