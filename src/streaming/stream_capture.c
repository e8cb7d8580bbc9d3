/*-------------------------------------------------------------------------
 *
 * stream_capture.c
 *	  Where a writer copies the rows of its statements for the streaming
 *	  flows of their tables, and ships them at commit.
 *
 * The capture trigger hands each statement's rows to this file once for
 * all streaming flows of the table.  The rows are read once and copied
 * once -- the columns any of the flows reads, batch_codec.c's format --
 * into a chunk of the current subtransaction level, which notes the flows
 * the rows are for and where each one's columns are.  No flow's
 * expression, no owner's code and no subtransaction runs in the writer:
 * the worker evaluates the flows, as their owners (stream_apply.c).  So a
 * table's tenth flow costs a writer what its first does, and a flow's
 * error or its owner's functions never reach the writer's transaction.
 *
 * A released savepoint hands its chunks to its parent, a rolled-back one
 * throws them away.  At XACT_EVENT_PRE_COMMIT the chunks go to shared
 * memory as one batch, tagged with the top-level xid and queued for each
 * flow they are for; the worker applies a batch once that xid has committed
 * and drops it if it aborted, so nothing uncommitted reaches a sink.
 * Where rows cannot be queued, the windows of their times go to the
 * dirty log instead, in the same transaction, and the worker recomputes
 * them -- slower, never wrong, and the writer's transaction never fails
 * for it: a statement of more rows than a quarter of the queue holds (a
 * COPY, a bulk INSERT ... SELECT), which the trigger then scans for its
 * time range only, as for batching; a transaction whose rows outgrow that
 * (from then on); a queue without room even after a short wait; a worker
 * that is behind; a PREPARE (the transaction may commit after a restart,
 * when the queue is gone).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "miscadmin.h"
#include "utils/inval.h"
#include "utils/memutils.h"

#include "batch_codec.h"
#include "capture_graphs.h"
#include "catalog.h"
#include "dirty_log.h"
#include "guc.h"
#include "pool.h"
#include "queue.h"
#include "operator.h"
#include "registry.h"
#include "stream_capture.h"
#include "subxact.h"

/* What a flow takes of a table's rows: its columns' places in the layout. */
typedef struct PlanFlow
{
	int64		flow_id;
	uint32		version;
	bool		retracts;
	int16		nmap;
	int16	   *map;
	int16		time_pos;		/* the time column's place; -1: none */
	Oid			time_type;
} PlanFlow;

/* What a table's statements copy for a set of its flows (cached). */
typedef struct TablePlan
{
	Oid			relid;
	int			nflows;
	PlanFlow   *flows;
	ChunkLayout *layout;
} TablePlan;

/* Rows of a table at one subtransaction level, for the same flows. */
typedef struct RowChunk
{
	ChunkLayout *layout;
	int			nflows;
	PlanFlow   *flows;
	StringInfoData rows;
	int32		nrows;
} RowChunk;

typedef struct CaptureLevel
{
	int			nestlevel;
	MemoryContext memory;
	List	   *chunks;			/* RowChunk */
	Size		bytes;			/* of rows, times the flows they are for */
	List	   *overflowed;		/* relids whose rows here go to the dirty log */
	struct CaptureLevel *parent;
} CaptureLevel;

static CaptureLevel *levels = NULL;
static bool callbacks_registered = false;
static bool wake_at_commit = false; /* a queue this commit feeds was idle or is filling */

static List *plan_cache = NIL;	/* TablePlan, in plan_memory */
static MemoryContext plan_memory = NULL;
static Oid	plans_catalog_relid = InvalidOid;	/* flowpg.flow's */

static void stream_xact_callback(XactEvent event, void *arg);
static void stream_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
									SubTransactionId parentSubid, void *arg);

static void
plans_relcache_callback(Datum arg, Oid relid)
{
	bool		concerned = relid == InvalidOid || relid == plans_catalog_relid;
	ListCell   *lc;

	/*
	 * Flow DDL (an invalidation of the catalog) or ALTER TABLE of a cached
	 * table: the plans are made again; another table's (an ANALYZE, say)
	 * leaves them.
	 */
	foreach(lc, plan_cache)
		concerned |= ((TablePlan *) lfirst(lc))->relid == relid;
	if (!concerned)
		return;
	if (plan_memory)
		MemoryContextReset(plan_memory);
	plan_cache = NIL;
}

static void
register_callbacks(void)
{
	if (callbacks_registered)
		return;
	RegisterXactCallback(stream_xact_callback, NULL);
	RegisterSubXactCallback(stream_subxact_callback, NULL);
	CacheRegisterRelcacheCallback(plans_relcache_callback, (Datum) 0);
	plan_memory = AllocSetContextCreate(CacheMemoryContext, "flowpg capture plans",
										ALLOCSET_SMALL_SIZES);
	callbacks_registered = true;
}

/* The capture level of the current subtransaction, made on first use. */
static CaptureLevel *
current_level(void)
{
	int			nestlevel = GetCurrentTransactionNestLevel();
	CaptureLevel *level;

	if (levels && levels->nestlevel == nestlevel)
		return levels;
	Assert(levels == NULL || levels->nestlevel < nestlevel);
	level = MemoryContextAllocZero(TopTransactionContext, sizeof(CaptureLevel));
	level->nestlevel = nestlevel;
	level->memory = AllocSetContextCreate(levels ? levels->memory : TopTransactionContext,
										  "flowpg captured rows", ALLOCSET_DEFAULT_SIZES);
	level->parent = levels;
	levels = level;
	return level;
}

/* Rows a statement may have and be queued: about what a quarter of the queue holds. */
static int64
statement_rows_limit(void)
{
	return Max((int64) flowpg_queue_memory_kb * 1024 / 4 / 64, 1000);
}

/* Bytes of rows (times their flows) a transaction may queue. */
static Size
transaction_bytes_limit(void)
{
	return Min((Size) flowpg_queue_memory_kb * 1024 / 4, MaxAllocSize / 4);
}

/*
 * Building a plan compiles the flows' graphs, which may fail (a flow whose
 * definition no longer compiles): in a subtransaction, and the flows then
 * go to the recompute, which meets and records the error.
 */
typedef struct PlanCall
{
	Relation	rel;
	StreamTaker *takers;
	int			ntakers;
	TablePlan  *plan;
} PlanCall;

static int
compare_attnos(const ListCell *a, const ListCell *b)
{
	return lfirst_int(a) - lfirst_int(b);
}

static void
build_plan(void *arg)
{
	PlanCall   *call = arg;
	TupleDesc	desc = RelationGetDescr(call->rel);
	TablePlan  *plan = palloc0(sizeof(TablePlan));
	AttrNumber **maps = palloc(sizeof(AttrNumber *) * call->ntakers);
	List	   *attnos = NIL;
	int			live = 0;

	plan->relid = RelationGetRelid(call->rel);
	plan->nflows = call->ntakers;
	plan->flows = palloc0(sizeof(PlanFlow) * Max(call->ntakers, 1));
	for (int i = 0; i < call->ntakers; i++)
	{
		StreamGraph *graph = capture_graph_get(call->takers[i].flow_id, call->takers[i].version);
		PlanFlow   *pf = &plan->flows[i];

		maps[i] = capture_graph_map(call->takers[i].flow_id, call->rel);
		pf->flow_id = call->takers[i].flow_id;
		pf->version = call->takers[i].version;
		pf->retracts = graph->retracts;
		pf->nmap = graph->ncols;
		pf->map = palloc(sizeof(int16) * Max(graph->ncols, 1));
		pf->time_pos = graph->time_col;	/* a graph column until placed below */
		pf->time_type = graph->time_type;
		for (int c = 0; c < graph->ncols; c++)
			attnos = list_append_unique_int(attnos, maps[i][c]);
	}
	list_sort(attnos, compare_attnos);
	for (int a = 0; a < desc->natts; a++)
		live += !TupleDescAttr(desc, a)->attisdropped;
	/* every column read: the rows as stored, copied as they are */
	plan->layout = codec_layout_create(call->rel, list_length(attnos) == live ? NIL : attnos);
	for (int i = 0; i < call->ntakers; i++)
	{
		PlanFlow   *pf = &plan->flows[i];

		for (int c = 0; c < pf->nmap; c++)
			for (int p = 0; p < plan->layout->natts; p++)
				if (plan->layout->attnos[p] == maps[i][c])
					pf->map[c] = p;
		if (pf->time_pos >= 0)
			pf->time_pos = pf->map[pf->time_pos];
	}
	call->plan = plan;
}

static ChunkLayout *
layout_copy(const ChunkLayout *from)
{
	ChunkLayout *to = palloc(sizeof(ChunkLayout));
	int			n = Max(from->natts, 1);

	*to = *from;
	to->attnos = palloc(sizeof(AttrNumber) * n);
	memcpy(to->attnos, from->attnos, sizeof(AttrNumber) * n);
	to->typids = palloc(sizeof(Oid) * n);
	memcpy(to->typids, from->typids, sizeof(Oid) * n);
	to->lens = palloc(sizeof(int16) * n);
	memcpy(to->lens, from->lens, sizeof(int16) * n);
	to->byvals = palloc(sizeof(bool) * n);
	memcpy(to->byvals, from->byvals, sizeof(bool) * n);
	to->aligns = palloc(sizeof(char) * n);
	memcpy(to->aligns, from->aligns, sizeof(char) * n);
	to->desc = CreateTupleDescCopy(from->desc);
	return to;
}

/* The members of a plan: copies in the current memory context. */
static PlanFlow *
flows_copy(const PlanFlow *from, int n)
{
	PlanFlow   *to = palloc(sizeof(PlanFlow) * Max(n, 1));

	for (int i = 0; i < n; i++)
	{
		to[i] = from[i];
		to[i].map = palloc(sizeof(int16) * Max(from[i].nmap, 1));
		memcpy(to[i].map, from[i].map, sizeof(int16) * from[i].nmap);
	}
	return to;
}

/* The table's plan for these flows; NULL when their graphs cannot be built. */
static TablePlan *
table_plan(Relation rel, StreamTaker *takers, int ntakers)
{
	PlanCall	call = {rel, takers, ntakers, NULL};
	ListCell   *lc;
	ErrorData  *edata;
	MemoryContext old;
	TablePlan  *plan;

	foreach(lc, plan_cache)
	{
		plan = lfirst(lc);
		if (plan->relid != RelationGetRelid(rel) || plan->nflows != ntakers)
			continue;
		for (int i = 0; i < ntakers && plan; i++)
			if (plan->flows[i].flow_id != takers[i].flow_id ||
				plan->flows[i].version != takers[i].version)
				plan = NULL;
		if (plan)
			return plan;
	}
	plans_catalog_relid = catalog_relid();
	edata = subxact_run(build_plan, &call);
	if (edata != NULL)
	{
		FreeErrorData(edata);
		return NULL;
	}
	/* (an invalidation during the build may have reset the cache) */
	old = MemoryContextSwitchTo(plan_memory);
	plan = palloc(sizeof(TablePlan));
	*plan = *call.plan;
	plan->flows = flows_copy(call.plan->flows, ntakers);
	plan->layout = layout_copy(call.plan->layout);
	plan_cache = lappend(plan_cache, plan);
	MemoryContextSwitchTo(old);
	return plan;
}

/* The level's chunk the rows for these members go to: its last, or a new one. */
static RowChunk *
level_chunk(CaptureLevel *level, TablePlan *plan, PlanFlow *members, int nmembers)
{
	RowChunk   *chunk = level->chunks ? llast(level->chunks) : NULL;
	MemoryContext old;

	if (chunk && chunk->nflows == nmembers && codec_layout_equal(chunk->layout, plan->layout))
	{
		bool		same = true;

		for (int i = 0; i < nmembers && same; i++)
			same = chunk->flows[i].flow_id == members[i].flow_id &&
				chunk->flows[i].version == members[i].version;
		if (same)
			return chunk;
	}
	old = MemoryContextSwitchTo(level->memory);
	chunk = palloc0(sizeof(RowChunk));
	chunk->layout = layout_copy(plan->layout);
	chunk->nflows = nmembers;
	chunk->flows = flows_copy(members, nmembers);
	initStringInfo(&chunk->rows);
	level->chunks = lappend(level->chunks, chunk);
	MemoryContextSwitchTo(old);
	return chunk;
}

/* The flow ids of chunks' members (only_flow: just that one), each once. */
static List *
chunk_flow_ids(List *chunks, int64 only_flow)
{
	List	   *ids = NIL;
	ListCell   *lc;

	foreach(lc, chunks)
	{
		RowChunk   *chunk = lfirst(lc);

		for (int i = 0; i < chunk->nflows; i++)
		{
			int64		id = chunk->flows[i].flow_id;
			bool		seen = false;
			ListCell   *lc2;

			foreach(lc2, ids)
				seen |= *(int64 *) lfirst(lc2) == id;
			if (!seen && (only_flow == 0 || id == only_flow))
				ids = lappend(ids, &chunk->flows[i].flow_id);
		}
	}
	return ids;
}

/* The time range of a member's rows in a chunk; false when some have no time. */
static bool
chunk_time_range(RowChunk *chunk, PlanFlow *pf, int64 *lo, int64 *hi)
{
	ChunkReader reader;
	bool		timed = pf->time_pos >= 0;

	if (!timed || chunk->nrows == 0)
		return timed;
	/* read in place */
	codec_reader_rows(&reader, chunk->layout->desc, chunk->rows.data, chunk->nrows,
					  CurrentMemoryContext);
	timed = codec_rows_time_range(&reader, pf->time_pos, pf->time_type, lo, hi);
	codec_reader_end(&reader);
	return timed;
}

/*
 * The windows of chunks' rows go to the dirty log, for one flow (or every
 * flow of the chunks: 0), in the current (sub)transaction.
 */
static void
log_chunks_dirty(List *chunks, int64 only_flow, bool whole_anyway)
{
	ListCell   *lc;

	foreach(lc, chunk_flow_ids(chunks, only_flow))
	{
		int64		flow_id = *(int64 *) lfirst(lc);
		int64		lo = PG_INT64_MAX;
		int64		hi = PG_INT64_MIN;
		int64		nrows = 0;
		bool		whole = whole_anyway;
		ListCell   *lc2;

		foreach(lc2, chunks)
		{
			RowChunk   *chunk = lfirst(lc2);

			for (int i = 0; i < chunk->nflows; i++)
				if (chunk->flows[i].flow_id == flow_id)
				{
					nrows += chunk->nrows;
					if (!whole && !chunk_time_range(chunk, &chunk->flows[i], &lo, &hi))
						whole = true;
				}
		}
		if (whole)
			dirty_log_append(flow_id, true, 0, 0, nrows);
		else if (lo <= hi)
			dirty_log_append(flow_id, false, lo, hi, nrows);
		registry_count_fallback(flow_id, 1);
	}
}

/*
 * The level's rows of a table outgrew what the queue should take: they go
 * to the dirty log (in this subtransaction, whose rows they are), and so
 * do the level's further rows of the table.
 */
static void
overflow_level(CaptureLevel *level, Oid relid)
{
	List	   *gone = NIL;
	List	   *kept = NIL;
	ListCell   *lc;
	MemoryContext old;

	foreach(lc, level->chunks)
	{
		RowChunk   *chunk = lfirst(lc);

		if (chunk->layout->relid == relid)
			gone = lappend(gone, chunk);
		else
			kept = lappend(kept, chunk);
	}
	log_chunks_dirty(gone, 0, false);
	foreach(lc, gone)
		pfree(((RowChunk *) lfirst(lc))->rows.data);
	old = MemoryContextSwitchTo(level->memory);
	level->chunks = list_copy(kept);
	level->overflowed = lappend_oid(level->overflowed, relid);
	MemoryContextSwitchTo(old);
	level->bytes = 0;
	foreach(lc, level->chunks)
	{
		RowChunk   *chunk = lfirst(lc);

		level->bytes += (Size) chunk->rows.len * chunk->nflows;
	}
}

/* The level's rows past the transaction's share of the queue go to the dirty log. */
static void
overflow_level_if_big(CaptureLevel *level)
{
	while (level->bytes > transaction_bytes_limit() && level->chunks != NIL)
		overflow_level(level, ((RowChunk *) linitial(level->chunks))->layout->relid);
}

/* The rows of one statement (a transition table) or one row, with a sign. */
typedef struct CapturedRows
{
	Tuplestorestate *table;
	TupleTableSlot *row;
	int			sign;
} CapturedRows;

static int64
captured_count(CapturedRows *rows)
{
	if (rows->row != NULL)
		return 1;
	return rows->table ? tuplestore_tuple_count(rows->table) : 0;
}

/*
 * Copies the rows into the chunk; false when they outgrow room (bytes of
 * rows, times the flows they are for), which stops the copy.
 */
static bool
copy_rows(RowChunk *chunk, Relation rel, CapturedRows *rows, Size room)
{
	TupleTableSlot *slot;
	int			readptr;
	Size		start = chunk->rows.len;
	bool		fits = true;

	if (rows->row != NULL)
	{
		codec_append_row(&chunk->rows, chunk->layout, rows->row, rows->sign);
		chunk->nrows++;
		return (chunk->rows.len - start) * chunk->nflows <= room;
	}
	if (rows->table == NULL)
		return true;
	/* our own read pointer: other triggers may read the same table */
	readptr = tuplestore_alloc_read_pointer(rows->table, EXEC_FLAG_REWIND);
	tuplestore_select_read_pointer(rows->table, readptr);
	tuplestore_rescan(rows->table);
	slot = MakeSingleTupleTableSlot(RelationGetDescr(rel), &TTSOpsMinimalTuple);
	while (fits && tuplestore_gettupleslot(rows->table, true, false, slot))
	{
		codec_append_row(&chunk->rows, chunk->layout, slot, rows->sign);
		chunk->nrows++;
		fits = (chunk->rows.len - start) * chunk->nflows <= room;
	}
	ExecDropSingleTupleTableSlot(slot);
	return fits;
}

static void
capture_rows(Relation rel, StreamTaker *takers, int ntakers, CapturedRows *new_rows,
			 CapturedRows *old_rows)
{
	CaptureLevel *level;
	TablePlan  *plan;
	PlanFlow   *members;
	int			nmembers = 0;
	RowChunk   *chunk;
	Size		before;
	Size		room;
	bool		fits;
	int64		nrows = captured_count(new_rows) + captured_count(old_rows);

	if (nrows == 0)
	{
		for (int i = 0; i < ntakers; i++)
			takers[i].taken = true;
		return;
	}
	register_callbacks();
	level = current_level();
	plan = NULL;
	if (!list_member_oid(level->overflowed, RelationGetRelid(rel)) &&
		nrows <= statement_rows_limit())
		plan = table_plan(rel, takers, ntakers);
	members = palloc(sizeof(PlanFlow) * ntakers);
	for (int i = 0; i < ntakers; i++)
	{
		PlanFlow   *pf = plan ? &plan->flows[i] : NULL;

		/* old rows of a flow that cannot take them back: by design */
		if (pf && captured_count(old_rows) > 0 && !pf->retracts)
			continue;
		/* too many rows, no plan, a worker behind: a fallback */
		if (pf == NULL || registry_worker_behind(pf->flow_id))
		{
			registry_count_fallback(takers[i].flow_id, 1);
			continue;
		}
		members[nmembers++] = *pf;
		takers[i].taken = true;
	}
	if (nmembers == 0)
		return;

	/*
	 * New rows first, then the old ones taken back: the worker applies a
	 * transaction's added rows before its taken-back ones anyway
	 * (stream_apply.c), so that a row updated in place never leaves a
	 * state that has it.
	 */
	chunk = level_chunk(level, plan, members, nmembers);
	before = chunk->rows.len;
	room = transaction_bytes_limit() - Min(level->bytes, transaction_bytes_limit());
	fits = copy_rows(chunk, rel, new_rows, room) &&
		copy_rows(chunk, rel, old_rows, room - (chunk->rows.len - before) * nmembers);
	level->bytes += (chunk->rows.len - before) * nmembers;
	if (!fits)
	{
		/*
		 * Past the transaction's share of the queue (wide rows, say): what
		 * the level has of the table goes to the dirty log, and so does
		 * this statement, by the caller (the rows copied of it count twice
		 * in the dirty log, which is harmless).
		 */
		overflow_level(level, RelationGetRelid(rel));
		for (int i = 0; i < ntakers; i++)
			takers[i].taken = false;
	}
}

void
stream_capture_statement(Relation rel, StreamTaker *takers, int ntakers,
						 Tuplestorestate *new_rows, Tuplestorestate *old_rows)
{
	CapturedRows added = {new_rows, NULL, 1};
	CapturedRows taken_back = {old_rows, NULL, -1};

	capture_rows(rel, takers, ntakers, &added, &taken_back);
}

void
stream_capture_row(Relation rel, StreamTaker *takers, int ntakers, TupleTableSlot *new_row,
				   TupleTableSlot *old_row)
{
	CapturedRows added = {NULL, new_row, 1};
	CapturedRows taken_back = {NULL, old_row, -1};

	capture_rows(rel, takers, ntakers, &added, &taken_back);
}

static void
stream_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
						SubTransactionId parentSubid, void *arg)
{
	CaptureLevel *level = levels;
	int			nestlevel = GetCurrentTransactionNestLevel();

	if (level == NULL || level->nestlevel != nestlevel)
		return;
	if (event == SUBXACT_EVENT_PRE_COMMIT_SUB)
	{
		CaptureLevel *parent = level->parent;

		if (parent && parent->nestlevel == nestlevel - 1)
		{
			/* the child's memory lives on under the parent's */
			MemoryContext old = MemoryContextSwitchTo(parent->memory);

			parent->chunks = list_concat(parent->chunks, level->chunks);
			parent->bytes += level->bytes;
			MemoryContextSwitchTo(old);
			levels = parent;

			/*
			 * Released savepoints add up (a PL/pgSQL loop with an
			 * exception block per row): past the share, to the dirty log,
			 * written in the subtransaction that commits into the parent.
			 */
			overflow_level_if_big(parent);
		}
		else
			level->nestlevel = nestlevel - 1;	/* becomes the parent's */
	}
	else if (event == SUBXACT_EVENT_ABORT_SUB)
	{
		levels = level->parent;
		MemoryContextDelete(level->memory);
	}
}

/*
 * Every chunk's rows in one batch, in shared memory once, queued for
 * each flow they are for.
 */
static void
ship_chunks(bool prepare)
{
	TransactionId xid = GetTopTransactionIdIfAny();
	List	   *flow_ids;
	QueueTarget *targets;
	int			ntargets = 0;
	StringInfoData buf;
	bool		wake = false;
	ListCell   *lc;

	if (levels == NULL)
		return;
	/* every subtransaction has ended: only the top level is left */
	Assert(levels->parent == NULL);

	/*
	 * A prepared transaction may commit after a restart, when the queue is
	 * gone, and a database waiting for ALTER EXTENSION UPDATE has no worker
	 * draining it: their windows go to the dirty log, which commits or
	 * rolls back with them.
	 */
	if (prepare || !TransactionIdIsValid(xid) || !flowpg_enabled || !registry_available() ||
		pool_database_outdated(MyDatabaseId))
	{
		log_chunks_dirty(levels->chunks, 0, false);
		return;
	}
	/* (bounded at every statement and release; the last check before the copy) */
	overflow_level_if_big(levels);
	flow_ids = chunk_flow_ids(levels->chunks, 0);
	targets = palloc0(sizeof(QueueTarget) * Max(list_length(flow_ids), 1));
	foreach(lc, flow_ids)
	{
		QueueTarget *target = &targets[ntargets];
		bool		versions_differ = false;
		ListCell   *lc2;

		target->flow_id = *(int64 *) lfirst(lc);
		foreach(lc2, levels->chunks)
		{
			RowChunk   *chunk = lfirst(lc2);

			for (int i = 0; i < chunk->nflows; i++)
			{
				if (chunk->flows[i].flow_id != target->flow_id)
					continue;
				versions_differ |= target->nrows > 0 &&
					chunk->flows[i].version != target->version;
				target->version = chunk->flows[i].version;
				target->nrows += chunk->nrows;
			}
		}

		/*
		 * The flow was replaced during this transaction: its rows are
		 * recomputed (the worker reads a batch with one definition).
		 */
		if (versions_differ)
			log_chunks_dirty(levels->chunks, target->flow_id, true);
		else
			ntargets++;
	}
	if (ntargets == 0)
		return;

	initStringInfo(&buf);
	foreach(lc, levels->chunks)
	{
		RowChunk   *chunk = lfirst(lc);
		ChunkMember *members = palloc(sizeof(ChunkMember) * Max(chunk->nflows, 1));

		for (int i = 0; i < chunk->nflows; i++)
		{
			members[i].flow_id = chunk->flows[i].flow_id;
			members[i].nmap = chunk->flows[i].nmap;
			members[i].map = chunk->flows[i].map;
		}
		codec_append_chunk(&buf, chunk->layout, members, chunk->nflows, chunk->nrows,
						   chunk->rows.data, chunk->rows.len);
		pfree(members);
	}
	queue_append(targets, ntargets, xid, &buf, &wake);
	for (int i = 0; i < ntargets; i++)
		if (!targets[i].queued)
			log_chunks_dirty(levels->chunks, targets[i].flow_id, false);
	wake_at_commit |= wake;
	pfree(buf.data);
}

static void
stream_xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_PRE_COMMIT:
			ship_chunks(false);
			break;
		case XACT_EVENT_PRE_PREPARE:
			ship_chunks(true);
			break;
		case XACT_EVENT_COMMIT:

			/*
			 * The worker applies what this commit made visible.  It is
			 * woken only when the queue was idle (or filling fast): batches
			 * behind others wait for the flow's next sink write anyway, and
			 * a signal at every commit costs writers more than it gains.
			 */
			if (levels != NULL && wake_at_commit)
				pool_wake(MyDatabaseId);
			/* FALLTHROUGH */
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PREPARE:
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_PARALLEL_ABORT:
			levels = NULL;		/* the memory goes with TopTransactionContext */
			wake_at_commit = false;
			break;
		default:
			break;
	}
}

bool
stream_capture_changed(int64 flow_id)
{
	CaptureLevel *level;
	ListCell   *lc;

	for (level = levels; level != NULL; level = level->parent)
		foreach(lc, level->chunks)
		{
			RowChunk   *chunk = lfirst(lc);

			for (int i = 0; i < chunk->nflows; i++)
				if (chunk->flows[i].flow_id == flow_id)
					return true;
		}
	return dirty_log_written_here(flow_id);
}

static const CaptureStreamingHooks streaming_capture = {
	.available = registry_available,
	.version_of = graph_version,
	.capture_statement = stream_capture_statement,
	.capture_row = stream_capture_row,
};

void
stream_capture_install_hooks(void)
{
	capture_streaming_hooks = &streaming_capture;
}
