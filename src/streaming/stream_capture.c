/*-------------------------------------------------------------------------
 *
 * stream_capture.c
 *	  Where a writer computes streaming partials and ships them at commit.
 *
 * The capture trigger hands the inserted rows of each statement to every
 * streaming flow of the table.  Each row goes once through the flow's
 * operator graph (filter, group key, window, transition functions) into a
 * partial hash table of the current subtransaction level, in backend
 * memory -- or, where a flow's rows are nearly all groups of their own (a
 * thousand devices each sending a reading a second, random timestamps),
 * into a buffer of the rows' group keys and aggregate arguments (filter
 * and every expression evaluated, as the owner): a group per row would
 * cost the writer a hash insertion and the worker a combine for nothing,
 * and the worker runs the transition functions on the rows instead.
 * Which way pays is measured per flow and backend (capture_graphs.c) and
 * chosen once per transaction; a partial's rows past SHIP_ROWS_MAX go
 * into groups whatever it says.  A released savepoint hands its partials
 * to its parent, a rolled-back one throws them away.
 *
 * At XACT_EVENT_PRE_COMMIT / PRE_PREPARE the partials of released
 * savepoints are combined (combine functions) and all are serialized, in a
 * subtransaction, since both may run the flow owner's code: an error there
 * sends the flow's windows to the dirty log instead of failing the commit.
 * Then they are appended to the flows' queues in shared memory, tagged
 * with the top-level xid; the worker applies a batch once that xid has
 * committed and drops it if it aborted, so nothing uncommitted reaches a
 * sink.  When a queue has
 * no room even after a short wait, the windows the partial touched are
 * written to the dirty log instead -- in this same transaction -- and the
 * worker recomputes them: slower, never wrong, and the user's transaction
 * never fails for it.
 *
 * The flows' compiled graphs are capture_graphs.c's.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/tuplestore.h"

#include "dirty_log.h"
#include "guc.h"
#include "operator.h"
#include "queue.h"
#include "registry.h"
#include "settings.h"
#include "batch_codec.h"
#include "capture_graphs.h"
#include "stream_capture.h"
#include "subxact.h"
#include "window.h"
#include "pool.h"

/* A partial's rows past these go into groups whatever the ratio. */
#define SHIP_ROWS_MAX 1024

/* The partial result of one flow at one subtransaction level. */
typedef struct FlowPartial
{
	int64		flow_id;
	StreamGraph *graph;
	Oid			owner;
	ArrayType  *settings;		/* the flow's pinned settings */
	MemoryContext memory;		/* its level's */
	GroupTable *groups;			/* aggregate flows; made on first use */

	/*
	 * Serialized rows: sink rows of flows without aggregates; input rows of
	 * aggregate flows that ship them (ship_rows), with their time range in
	 * time_lo/time_hi and whether some have no time.
	 */
	StringInfoData rows;
	StringInfoData retractions; /* the rows taken back, shipped after rows */
	int32		nrows_out;
	bool		ship_rows;
	bool		rows_untimed;
	int64		nrows_in;		/* source rows that went in */
	int64		naccepted;		/* and passed the filter (aggregate flows) */

	/*
	 * Too big for the queue (a bulk load): the groups and rows are dropped
	 * and only the time range of the rows is kept, for the dirty log.
	 */
	bool		overflow;
	bool		overflow_whole; /* rows without a time, or no window */
	int64		time_lo;
	int64		time_hi;

	/*
	 * Partials of released savepoints, not combined into this one yet: the
	 * combine function is the flow owner's code, which must not fail the
	 * writer's RELEASE (no subtransaction can run there), so it runs at
	 * commit, guarded (ship_partials).
	 */
	List	   *unmerged;
	int64		unmerged_groups;	/* their groups, counted twice when shared */
} FlowPartial;

typedef struct PartialLevel
{
	int			nestlevel;
	MemoryContext memory;
	List	   *flows;			/* FlowPartial */
	List	   *failed;			/* int64 ids of flows whose expressions failed here */
	struct PartialLevel *parent;
} PartialLevel;

static PartialLevel *levels = NULL;
static bool callbacks_registered = false;
static bool wake_at_commit = false;	/* a queue this commit feeds was idle or is filling */
static bool shipping = false;	/* ship_partials runs (the owner's code may write) */

static void stream_xact_callback(XactEvent event, void *arg);
static void stream_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
									SubTransactionId parentSubid, void *arg);

static void
register_callbacks(void)
{
	if (callbacks_registered)
		return;
	RegisterXactCallback(stream_xact_callback, NULL);
	RegisterSubXactCallback(stream_subxact_callback, NULL);
	callbacks_registered = true;
}

/* The partial level of the current subtransaction, made on first use. */
static PartialLevel *
current_level(void)
{
	int			nestlevel = GetCurrentTransactionNestLevel();
	PartialLevel *level;

	if (levels && levels->nestlevel == nestlevel)
		return levels;
	Assert(levels == NULL || levels->nestlevel < nestlevel);
	level = MemoryContextAllocZero(TopTransactionContext, sizeof(PartialLevel));
	level->nestlevel = nestlevel;
	level->memory = AllocSetContextCreate(levels ? levels->memory : TopTransactionContext,
										  "flowpg partials", ALLOCSET_DEFAULT_SIZES);
	level->parent = levels;
	levels = level;
	return level;
}

static void start_overflow(FlowPartial *partial);

/* Groups and rows a partial holds, for its bound. */
static int64
partial_entries(FlowPartial *partial)
{
	return (partial->groups ? partial->groups->ngroups : 0) + partial->nrows_out +
		partial->unmerged_groups;
}

static int64 overflow_groups(void);

/*
 * Bytes of serialized rows a partial may hold: what its share of the queue
 * takes (overflow_groups), and never near the largest allocation.
 */
static Size
rows_bytes_limit(void)
{
	return Min((Size) overflow_groups() * 64, MaxAllocSize / 4);
}

/* Past its bounds, a partial goes to the dirty log instead (start_overflow). */
static bool
partial_too_big(FlowPartial *partial)
{
	return partial_entries(partial) > overflow_groups() ||
		(Size) partial->rows.len + partial->retractions.len > rows_bytes_limit();
}

/*
 * Whether a new partial ships rows: as the transaction's partial of the
 * flow at an outer level does, if any, so that the choice (and its
 * measure) is one per transaction.
 */
static bool
ship_rows_for(PartialLevel *level, int64 flow_id, GraphCacheEntry *entry)
{
	for (PartialLevel *l = level->parent; l != NULL; l = l->parent)
	{
		ListCell   *lc;

		foreach(lc, l->flows)
		{
			FlowPartial *outer = lfirst(lc);

			if (outer->flow_id == flow_id && outer->graph == entry->graph)
				return outer->ship_rows;
		}
	}
	return capture_graph_ship_rows(entry);
}

static FlowPartial *
level_partial(PartialLevel *level, int64 flow_id, GraphCacheEntry *entry)
{
	ListCell   *lc;
	FlowPartial *partial;
	MemoryContext old;
	StreamGraph *graph = entry->graph;

	foreach(lc, level->flows)
	{
		partial = lfirst(lc);
		if (partial->flow_id != flow_id)
			continue;
		if (partial->graph != graph)
		{
			/*
			 * The flow was replaced during this transaction: what it
			 * gathered is recomputed instead (its groups mean nothing to
			 * the new definition).
			 */
			if (!partial->overflow)
				start_overflow(partial);
			partial->overflow_whole = true;
			partial->graph = graph;
		}
		return partial;
	}
	old = MemoryContextSwitchTo(level->memory);
	partial = palloc0(sizeof(FlowPartial));
	partial->flow_id = flow_id;
	partial->graph = graph;
	partial->owner = entry->owner;
	partial->settings = entry->settings ?
		DatumGetArrayTypePCopy(PointerGetDatum(entry->settings)) : NULL;
	partial->time_lo = PG_INT64_MAX;
	partial->time_hi = PG_INT64_MIN;
	partial->memory = level->memory;
	partial->ship_rows = graph->plan->is_aggregate && ship_rows_for(level, flow_id, entry);
	initStringInfo(&partial->rows);
	initStringInfo(&partial->retractions);
	level->flows = lappend(level->flows, partial);
	MemoryContextSwitchTo(old);

	/* the worker is behind: this transaction's rows go to the recompute */
	if (registry_worker_behind(flow_id))
		start_overflow(partial);
	return partial;
}

/*
 * Groups a partial may have before it goes to the dirty log instead: about
 * what a quarter of the queue holds, so one bulk load does not fill it.
 */
static int64
overflow_groups(void)
{
	return Max((int64) flowpg_queue_memory_kb * 1024 / 4 / 64, 1000);
}

/* An overflowed partial only widens its time range: only the time is read. */
static void
note_overflow_row(FlowPartial *partial, StreamGraph *graph, TupleTableSlot *slot,
				  AttrNumber *map)
{
	Datum		time;
	bool		isnull = true;
	int64		t;

	if (graph->time_col >= 0)
		time = slot_getattr(slot, map[graph->time_col], &isnull);
	if (isnull)
	{
		partial->overflow_whole = true;
		return;
	}
	t = window_datum_to_ordinal(graph->time_type, time);
	partial->time_lo = Min(partial->time_lo, t);
	partial->time_hi = Max(partial->time_hi, t);
}

/* Gives up the groups of a partial, keeping the time range they cover. */
static void
start_overflow(FlowPartial *partial)
{
	StreamGraph *graph = partial->graph;
	GroupIterator iter = {0};
	FlowGroup  *group;
	ListCell   *lc;

	if (partial->overflow)
		return;
	partial->overflow = true;
	partial->overflow_whole = graph->time_col < 0 || partial->rows_untimed;
	/* shipped input rows already widened the time range */
	resetStringInfo(&partial->rows);
	resetStringInfo(&partial->retractions);
	partial->nrows_out = 0;
	if (!graph->plan->is_aggregate)
		return;
	while (!partial->overflow_whole && partial->groups &&
		   (group = group_table_next(partial->groups, &iter)) != NULL)
	{
		if (group->time_lo > group->time_hi)
			partial->overflow_whole = true;
		partial->time_lo = Min(partial->time_lo, group->time_lo);
		partial->time_hi = Max(partial->time_hi, group->time_hi);
	}
	if (partial->groups)
		group_table_free(partial->groups);
	partial->groups = NULL;
	/* released savepoints' partials not combined yet: their time ranges too */
	foreach(lc, partial->unmerged)
	{
		FlowPartial *child = lfirst(lc);

		start_overflow(child);
		partial->overflow_whole |= child->overflow_whole;
		partial->time_lo = Min(partial->time_lo, child->time_lo);
		partial->time_hi = Max(partial->time_hi, child->time_hi);
	}
	partial->unmerged = NIL;
	partial->unmerged_groups = 0;
}

/*
 * One source row in slot through the graph into the partial: added (sign
 * 1), or taken back (sign -1: an UPDATE's or DELETE's old row, always
 * shipped as a row, which the worker runs through the inverse functions
 * after the transaction's groups).
 */
static void
accumulate_row(StreamGraph *graph, FlowPartial *partial, TupleTableSlot *slot,
			   AttrNumber *map, Datum *values, bool *nulls, int sign)
{
	partial->nrows_in++;
	graph->refuse_large_keys = sign > 0;
	if (partial->overflow)
	{
		note_overflow_row(partial, graph, slot, map);
		return;
	}
	graph_load_row(graph, slot, map);
	if (graph->plan->is_aggregate &&
		(sign < 0 || (partial->ship_rows && partial->nrows_out < SHIP_ROWS_MAX)))
	{
		int64		lo;
		int64		hi;

		if (graph_eval_row(graph, &lo, &hi))
		{
			/* evaluated and written in the row's memory (detoasted copies too) */
			MemoryContext old = MemoryContextSwitchTo(graph->econtext->ecxt_per_tuple_memory);

			/*
			 * Taken-back rows go after every added one, whatever the order
			 * of the statements (a row trigger's UPDATE of a row its INSERT
			 * has not shipped yet): each then leaves a state that has it.
			 */
			StringInfo	buf = sign < 0 ? &partial->retractions : &partial->rows;

			codec_write_input_key(buf, graph, lo, hi, sign);
			for (int i = 0; i < graph->nuser_aggs; i++)
				codec_write_input_args(buf, graph, i, graph_eval_agg_args(graph, i));
			MemoryContextSwitchTo(old);
			partial->nrows_out++;
			if (sign > 0)
				partial->naccepted++;
			if (lo > hi)
				partial->rows_untimed = true;
			partial->time_lo = Min(partial->time_lo, lo);
			partial->time_hi = Max(partial->time_hi, hi);
		}
		if (partial_too_big(partial))
			start_overflow(partial);
	}
	else if (graph->plan->is_aggregate)
	{
		if (partial->groups == NULL)
			partial->groups = group_table_create(graph, partial->memory);
		if (graph_accumulate_row(graph, partial->groups))
			partial->naccepted++;
		if (partial_too_big(partial))
			start_overflow(partial);
	}
	else if (graph_project_row(graph, values, nulls))
	{
		codec_write_row(&partial->rows, graph, values, nulls);
		partial->nrows_out++;
		if (partial_too_big(partial))
			start_overflow(partial);
	}
}

/* The rows of one statement (a transition table) or one row, with a sign. */
typedef struct CapturedRows
{
	Tuplestorestate *table;
	TupleTableSlot *row;
	int			sign;
} CapturedRows;

/* Runs a transition table or a row through the flow's graph into the partial. */
static void
accumulate_rows_of(StreamGraph *graph, FlowPartial *partial, Relation rel, AttrNumber *map,
				   CapturedRows *rows, Datum *values, bool *nulls)
{
	TupleTableSlot *slot;
	int			readptr;

	if (rows->row != NULL)
	{
		accumulate_row(graph, partial, rows->row, map, values, nulls, rows->sign);
		return;
	}
	if (rows->table == NULL)
		return;
	/* our own read pointer: other triggers may read the same table */
	readptr = tuplestore_alloc_read_pointer(rows->table, EXEC_FLAG_REWIND);
	tuplestore_select_read_pointer(rows->table, readptr);
	tuplestore_rescan(rows->table);
	slot = MakeSingleTupleTableSlot(RelationGetDescr(rel), &TTSOpsMinimalTuple);
	while (tuplestore_gettupleslot(rows->table, true, false, slot))
		accumulate_row(graph, partial, slot, map, values, nulls, rows->sign);
	ExecDropSingleTupleTableSlot(slot);
}

static int64
captured_count(CapturedRows *rows)
{
	if (rows->row != NULL)
		return 1;
	return rows->table ? tuplestore_tuple_count(rows->table) : 0;
}

/*
 * Runs a statement's rows through the flow's graph into the level's
 * partial: the new rows (inserted, or an UPDATE's new versions), then the
 * old ones taken back.  New first: a row updated in place then never
 * leaves a state that has it (a max updated upwards stays exact).  False,
 * touching nothing, when there are old rows and the flow cannot retract:
 * the caller logs their windows dirty instead.
 */
static bool
accumulate_rows(int64 flow_id, uint32 version, Relation rel, CapturedRows *new_rows,
				CapturedRows *old_rows, PartialLevel *level)
{
	GraphCacheEntry *entry;
	StreamGraph *graph;
	AttrNumber *map;
	FlowPartial *partial;
	FlowIdentity identity;
	Datum	   *values = NULL;
	bool	   *nulls = NULL;

	entry = capture_graph_get(flow_id, version);
	graph = entry->graph;
	if (captured_count(old_rows) > 0 && !graph->retracts)
		return false;
	map = capture_graph_map(entry, rel);
	partial = level_partial(level, flow_id, entry);
	if (!graph->plan->is_aggregate)
	{
		values = palloc(sizeof(Datum) * graph->noutputs);
		nulls = palloc(sizeof(bool) * graph->noutputs);
	}

	/* the flow's expressions run as its owner, under its settings */
	flow_enter(&identity, entry->owner, entry->settings, false);

	/*
	 * What the owner may not read never reaches the sink: a lost privilege
	 * fails here (the flow falls back to the recompute, which fails as a
	 * batching flow does), and rows row-level security may hide from the
	 * owner go to the recompute, which applies the policies.
	 */
	if (!entry->rights_checked)
	{
		flow_plan_check_rights(graph->plan);
		entry->row_security = flow_plan_uses_row_security(graph->plan);
		entry->rights_checked = true;
	}
	if (entry->row_security && !partial->overflow)
		start_overflow(partial);

	/*
	 * A statement of more rows than a partial may have groups (a COPY, a
	 * bulk INSERT ... SELECT) would mostly overflow: it goes to the
	 * recompute at once, for no more than batching's capture costs.
	 */
	if (!partial->overflow &&
		captured_count(new_rows) + captured_count(old_rows) > overflow_groups())
		start_overflow(partial);

	accumulate_rows_of(graph, partial, rel, map, new_rows, values, nulls);
	accumulate_rows_of(graph, partial, rel, map, old_rows, values, nulls);

	flow_leave(&identity);
	return true;
}

/*
 * Streaming must not fail the writer's statement for an error of the
 * flow's own making (its owner lost a privilege, an aggregate argument
 * divides by zero): the rows are evaluated in a subtransaction, and on an
 * error the flow's windows go to the dirty log instead -- the worker's
 * recompute then meets the same error and records it, as for a batching
 * flow.  What was gathered into the partial is recomputed too.
 */
typedef struct CaptureCall
{
	int64		flow_id;
	uint32		version;
	Relation	rel;
	CapturedRows new_rows;
	CapturedRows old_rows;
	PartialLevel *level;
	bool		taken;			/* false: old rows the flow cannot retract */
} CaptureCall;

static void
capture_call(void *arg)
{
	CaptureCall *call = (CaptureCall *) arg;

	call->taken = accumulate_rows(call->flow_id, call->version, call->rel, &call->new_rows,
								  &call->old_rows, call->level);
}

/* The writer's warning that a flow's own code failed on its rows. */
static void
report_flow_error(int64 flow_id, ErrorData *edata)
{
	FlowEntry  *flow = catalog_get_by_id(flow_id);

	/* the error may quote data or names the writer may not see: only to its owner */
	if (flow && has_privs_of_role(GetUserId(), flow->owner))
		ereport(WARNING,
				(errcode(edata->sqlerrcode),
				 errmsg("streaming flow \"%s\" could not take the new rows: %s",
						flow->flow_name, edata->message),
				 errdetail("The flow is recomputed from its source instead.")));
	else
		ereport(WARNING,
				(errcode(ERRCODE_WARNING),
				 errmsg("streaming flow \"%s\" could not take the new rows",
						flow ? flow->flow_name : "?"),
				 errdetail("The flow is recomputed from its source instead; its owner finds the error in flowpg.flow_errors.")));
}

/*
 * True when the flow took the rows (or will be recomputed: its code
 * failed); false when it declined old rows it cannot retract.
 */
static bool
capture_guarded(CaptureCall *callp)
{
	CaptureCall call = *callp;
	int64		flow_id = call.flow_id;
	ErrorData  *edata;
	ListCell   *lc;
	MemoryContext old;
	int64	   *id;

	register_callbacks();

	/*
	 * Rows written by a flow owner's combine or serial function while the
	 * partials are shipped at commit: the level list is being walked, so
	 * the flow is recomputed instead.
	 */
	if (shipping)
	{
		dirty_log_append(flow_id, true, 0, 0, 0);
		return true;
	}
	/* old rows of a flow known not to retract: no subtransaction to say so */
	if (captured_count(&call.old_rows) > 0)
	{
		StreamGraph *graph = capture_graph_cached(flow_id, call.version);

		if (graph != NULL && !graph->retracts)
			return false;
	}
	/* the writer's own level: the subtransaction below is ours only */
	call.level = current_level();

	/*
	 * Once the flow's own expressions failed in this (sub)transaction, the
	 * whole flow is recomputed: further rows need not go through it (one
	 * warning, one dirty log entry, not one per row of a replicated load).
	 */
	for (PartialLevel *l = call.level; l != NULL; l = l->parent)
		foreach(lc, l->failed)
			if (*(int64 *) lfirst(lc) == flow_id)
				return true;

	edata = subxact_run(capture_call, &call);
	if (edata == NULL)
		return call.taken;
	/* the writer's row, not the flow, is at fault: its statement fails */
	{
		StreamGraph *graph = capture_graph_cached(flow_id, call.version);

		if (graph != NULL && graph->key_too_large)
		{
			graph->key_too_large = false;
			ReThrowError(edata);
		}
	}

	foreach(lc, call.level->flows)
	{
		FlowPartial *partial = lfirst(lc);

		if (partial->flow_id == flow_id && !partial->overflow)
			start_overflow(partial);
		if (partial->flow_id == flow_id)
			partial->overflow_whole = true;
	}
	dirty_log_append(flow_id, true, 0, 0, 0);
	old = MemoryContextSwitchTo(call.level->memory);
	id = palloc(sizeof(int64));
	*id = flow_id;
	call.level->failed = lappend(call.level->failed, id);
	MemoryContextSwitchTo(old);
	/*
	 * Rows only taken back (a DELETE) failed as they did when they came
	 * in, which was reported then; deleting them is how a user fixes it.
	 */
	if (captured_count(&call.new_rows) > 0)
		report_flow_error(flow_id, edata);
	FreeErrorData(edata);
	return true;
}

bool
stream_capture_statement(int64 flow_id, uint32 version, Relation rel,
						 Tuplestorestate *new_rows, Tuplestorestate *old_rows)
{
	CaptureCall call = {flow_id, version, rel, {new_rows, NULL, 1}, {old_rows, NULL, -1}};

	if (new_rows == NULL && old_rows == NULL)
		return true;
	return capture_guarded(&call);
}

bool
stream_capture_row(int64 flow_id, uint32 version, Relation rel, TupleTableSlot *new_row,
				   TupleTableSlot *old_row)
{
	CaptureCall call = {flow_id, version, rel, {NULL, new_row, 1}, {NULL, old_row, -1}};

	return capture_guarded(&call);
}

/* Merges a committed subtransaction's partial into its parent's. */
static void
merge_partial(PartialLevel *parent, FlowPartial *child)
{
	FlowPartial *into = NULL;
	ListCell   *lc;
	StreamGraph *graph = child->graph;

	foreach(lc, parent->flows)
		if (((FlowPartial *) lfirst(lc))->flow_id == child->flow_id)
			into = lfirst(lc);
	if (into && into->graph != graph)
	{
		/* the flow was replaced meanwhile: recompute what both gathered */
		if (!into->overflow)
			start_overflow(into);
		into->overflow_whole = true;
		into->graph = graph;
		into->nrows_in += child->nrows_in;
		return;
	}
	if (into == NULL)
	{
		/* the child's memory lives on under the parent's: just adopt it */
		MemoryContext old = MemoryContextSwitchTo(parent->memory);

		parent->flows = lappend(parent->flows, child);
		MemoryContextSwitchTo(old);
		return;
	}
	into->nrows_in += child->nrows_in;
	/* rows past the bound are not even appended */
	if (!child->overflow && !into->overflow &&
		(Size) into->rows.len + into->retractions.len + child->rows.len +
		child->retractions.len > rows_bytes_limit())
		start_overflow(into);
	if (child->overflow || into->overflow)
	{
		if (!into->overflow)
			start_overflow(into);
		if (!child->overflow)
			start_overflow(child);
		into->overflow_whole |= child->overflow_whole;
		into->time_lo = Min(into->time_lo, child->time_lo);
		into->time_hi = Max(into->time_hi, child->time_hi);
		return;
	}
	/* rows are only appended: no user code runs at RELEASE */
	appendBinaryStringInfo(&into->rows, child->rows.data, child->rows.len);
	appendBinaryStringInfo(&into->retractions, child->retractions.data, child->retractions.len);
	into->nrows_out += child->nrows_out;
	into->naccepted += child->naccepted;
	into->rows_untimed |= child->rows_untimed;
	into->time_lo = Min(into->time_lo, child->time_lo);
	into->time_hi = Max(into->time_hi, child->time_hi);
	if (!graph->plan->is_aggregate)
		return;
	/* groups are combined at commit (combine_unmerged); the child's memory lives on */
	if (child->groups != NULL || child->unmerged != NIL)
	{
		MemoryContext old = MemoryContextSwitchTo(parent->memory);

		if (child->groups != NULL)
			into->unmerged = lappend(into->unmerged, child);
		into->unmerged = list_concat(into->unmerged, child->unmerged);
		into->unmerged_groups += (child->groups ? child->groups->ngroups : 0) +
			child->unmerged_groups;
		child->unmerged = NIL;
		MemoryContextSwitchTo(old);
	}
	/* bounded as one partial is (accumulate_row) */
	if (partial_too_big(into))
		start_overflow(into);
}

/* Combines the partials of released savepoints into the flow's partial. */
static void
combine_unmerged(FlowPartial *partial)
{
	StreamGraph *graph = partial->graph;
	ListCell   *lc;

	foreach(lc, partial->unmerged)
	{
		FlowPartial *child = lfirst(lc);
		GroupIterator iter = {0};
		FlowGroup  *group;

		if (partial->groups == NULL)
			partial->groups = group_table_create(graph, partial->memory);
		while ((group = group_table_next(child->groups, &iter)) != NULL)
		{
			FlowGroup  *target;

			if (graph->nkeys > 0)
				group_load_key(graph, group);
			target = group_lookup(graph, partial->groups, true);
			target->time_lo = Min(target->time_lo, group->time_lo);
			target->time_hi = Max(target->time_hi, group->time_hi);
			for (int i = 0; i < graph->naggs; i++)
			{
				AggTrans	from = group_get_trans(group, graph->naggs, i);
				AggTrans	to = group_get_trans(target, graph->naggs, i);

				/* no input for the aggregate: nothing to combine (not a NULL state) */
				if (from.noinit)
					continue;
				agg_combine(partial->groups->aggcxt, &graph->aggs[i], &to,
							from.value, from.isnull, false);
				group_put_trans(target, graph->naggs, i, &to);
			}
			ResetExprContext(graph->econtext);
		}
	}
	partial->unmerged = NIL;
	partial->unmerged_groups = 0;
}

static void
stream_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
						SubTransactionId parentSubid, void *arg)
{
	PartialLevel *level = levels;
	int			nestlevel = GetCurrentTransactionNestLevel();

	if (level == NULL || level->nestlevel != nestlevel)
		return;
	/* before the subcommit, while an error can still abort it cleanly */
	if (event == SUBXACT_EVENT_PRE_COMMIT_SUB)
	{
		if (level->parent && level->parent->nestlevel == nestlevel - 1)
		{
			ListCell   *lc;

			/* no user code here: combining waits for the commit */
			foreach(lc, level->flows)
				merge_partial(level->parent, lfirst(lc));
			/* the child's memory lives on under the parent's */
			{
				MemoryContext old = MemoryContextSwitchTo(level->parent->memory);

				level->parent->failed = list_concat(level->parent->failed, level->failed);
				MemoryContextSwitchTo(old);
			}
			levels = level->parent;
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

/* Serializes a flow's partial for its queue. */
static void
serialize_partial(FlowPartial *partial, StringInfo buf, int32 *count)
{
	StreamGraph *graph = partial->graph;
	GroupIterator iter = {0};
	FlowGroup  *group;
	int			groups_at;
	int32		ngroups = 0;

	if (!graph->plan->is_aggregate)
	{
		appendBinaryStringInfo(buf, partial->rows.data, partial->rows.len);
		*count = partial->nrows_out;
		return;
	}
	groups_at = codec_reserve_groups(buf);
	while (partial->groups && (group = group_table_next(partial->groups, &iter)) != NULL)
	{
		codec_write_group(buf, graph, partial->groups, group);
		ngroups++;
	}
	codec_set_groups(buf, groups_at, ngroups);
	/* then the input rows, added ones first */
	appendBinaryStringInfo(buf, partial->rows.data, partial->rows.len);
	appendBinaryStringInfo(buf, partial->retractions.data, partial->retractions.len);
	*count = ngroups + partial->nrows_out;
}

/*
 * The queue had no room: the partial's windows go to the dirty log, in the
 * committing transaction, for the worker to recompute.
 */
static void
fall_back_to_dirty_log(FlowPartial *partial)
{
	StreamGraph *graph = partial->graph;
	GroupIterator iter = {0};
	FlowGroup *group;
	/* the input rows' range, or an overflowed partial's */
	int64		lo = partial->time_lo;
	int64		hi = partial->time_hi;
	bool		whole = !graph->plan->is_aggregate || graph->time_col < 0 ||
		partial->rows_untimed;

	if (partial->overflow)
		whole = partial->overflow_whole;
	while (!whole && !partial->overflow && partial->groups &&
		   (group = group_table_next(partial->groups, &iter)) != NULL)
	{
		if (group->time_lo > group->time_hi)
			whole = true;		/* NULL times: no window to name */
		lo = Min(lo, group->time_lo);
		hi = Max(hi, group->time_hi);
	}
	if (whole)
		dirty_log_append(partial->flow_id, true, 0, 0, 0);
	else if (lo <= hi)
		dirty_log_append(partial->flow_id, false, lo, hi, partial->nrows_in);
	registry_count_fallback(partial->flow_id, 1);
}

typedef struct SerializeCall
{
	FlowPartial *partial;
	StringInfo	buf;
	int32	   *count;
} SerializeCall;

static void
serialize_call(void *arg)
{
	SerializeCall *call = arg;
	FlowIdentity identity;
	bool		snapshot = !ActiveSnapshotSet();

	/* SQL functions need a snapshot; none is active at commit */
	if (snapshot)
		PushActiveSnapshot(GetTransactionSnapshot());
	flow_enter(&identity, call->partial->owner, call->partial->settings, false);
	combine_unmerged(call->partial);
	serialize_partial(call->partial, call->buf, call->count);
	flow_leave(&identity);
	if (snapshot)
		PopActiveSnapshot();
}

/*
 * Combines released savepoints' partials and serializes the result.  Both
 * may run the flow owner's code (combine and serial functions), whose
 * error must not fail the writer's commit: it runs in a subtransaction of
 * its own, and on an error the partial's windows go to the recompute
 * (false).  Partials that run no user code skip the subtransaction.
 */
static bool
serialize_guarded(FlowPartial *partial, StringInfo buf, int32 *count)
{
	SerializeCall call = {partial, buf, count};
	ErrorData  *edata;

	if (partial->unmerged == NIL && !partial->graph->internal_states)
	{
		serialize_partial(partial, buf, count);
		return true;
	}
	edata = subxact_run(serialize_call, &call);
	if (edata == NULL)
	{
		/* combined past what the queue should take: the recompute instead */
		if (partial->graph->plan->is_aggregate && partial_too_big(partial))
		{
			start_overflow(partial);
			return false;
		}
		return true;
	}
	report_flow_error(partial->flow_id, edata);
	FreeErrorData(edata);
	/*
	 * The groups may be half combined (not even walked safely): the whole
	 * flow is recomputed; their memory goes with the transaction.
	 */
	partial->unmerged = NIL;
	partial->unmerged_groups = 0;
	partial->groups = NULL;
	partial->overflow = true;
	partial->overflow_whole = true;
	return false;
}

static void
ship_partials(bool prepare)
{
	TransactionId xid = GetTopTransactionIdIfAny();
	ListCell   *lc;

	if (levels == NULL)
		return;
	/* every subtransaction has ended: only the top level is left */
	Assert(levels->parent == NULL);
	shipping = true;
	foreach(lc, levels->flows)
	{
		FlowPartial *partial = lfirst(lc);
		StringInfoData buf;
		int32		count;
		bool		wake = false;

		if (partial->nrows_in == 0)
			continue;
		/*
		 * A prepared transaction may commit after a restart, when the queue
		 * is gone, and a database waiting for ALTER EXTENSION UPDATE has no
		 * worker draining it: their windows go to the dirty log, which
		 * commits or rolls back with them -- without running the owner's
		 * combine or serial functions at all.
		 */
		if (partial->overflow || prepare || !TransactionIdIsValid(xid) || !flowpg_enabled ||
			!registry_available() || pool_database_outdated(MyDatabaseId))
		{
			if (!partial->overflow)
				start_overflow(partial);
			fall_back_to_dirty_log(partial);
			continue;
		}
		initStringInfo(&buf);
		if (!serialize_guarded(partial, &buf, &count))
		{
			fall_back_to_dirty_log(partial);
			continue;
		}
		/* a transaction in groups measures how many rows each took */
		if (!partial->ship_rows && partial->groups != NULL)
			capture_graph_measure(partial->flow_id, partial->graph,
								  partial->groups->ngroups, partial->naccepted);
		if (count == 0)
			continue;			/* every row was filtered out */
		if (!queue_append(partial->flow_id, xid, partial->graph->version, count,
						  partial->nrows_in, &buf, &wake))
			fall_back_to_dirty_log(partial);
		wake_at_commit |= wake;
		pfree(buf.data);
	}
	shipping = false;
}

static void
stream_xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_PRE_COMMIT:
			ship_partials(false);
			break;
		case XACT_EVENT_PRE_PREPARE:
			ship_partials(true);
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
			shipping = false;
			capture_graphs_free_retired();
			break;
		default:
			break;
	}
}

bool
stream_capture_changed(int64 flow_id)
{
	PartialLevel *level;
	ListCell   *lc;

	for (level = levels; level != NULL; level = level->parent)
		foreach(lc, level->flows)
			if (((FlowPartial *) lfirst(lc))->flow_id == flow_id)
				return true;
	return dirty_log_written_here(flow_id);
}
