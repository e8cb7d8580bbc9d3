/*-------------------------------------------------------------------------
 *
 * stream_state.c
 *	  Owner of a streaming flow's shared part (FlowShared, in the state
 *	  area) and of the worker's handles on flows (StreamFlow): making,
 *	  resetting and freeing them, opening and dropping the flow's store,
 *	  recording what a round touched, the state's floor, and the merge of
 *	  a group into the store that the apply, refill and evict stages share
 *	  (with the windows and skip ranges they compare).
 *
 * Every other file of the round reads and writes a flow's state through
 * these functions or through the fields a claimed flow's round owns
 * (stream_flow.h).  Only the worker that has claimed the flow (pool.c)
 * touches its shared part, so no lock guards it; the registry slot that
 * points at it is registry.c's.
 *
 * The handles follow the catalog (stream_sync, which runs sync_flows): new
 * streaming flows get one, changed ones a new graph, dropped ones are
 * forgotten with their queues and state by whichever worker claims them.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/xact.h"
#include "catalog/pg_attribute.h"
#include "commands/extension.h"
#include "miscadmin.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#include "catalog.h"
#include "flow_locks.h"
#include "pool.h"
#include "state_memory.h"
#include "stream_flow.h"
#include "stream_state.h"

#define FLOW_SHARED_MAGIC 0x73747266
#define SYNC_USECS (250 * 1000)

static List *stream_flows = NIL;	/* StreamFlow of this worker */
static MemoryContext stream_memory = NULL;
static TimestampTz last_sync = 0;

static void sync_flows(void);

static StreamFlow *
find_flow(int64 flow_id)
{
	ListCell   *lc;

	foreach(lc, stream_flows)
		if (((StreamFlow *) lfirst(lc))->flow_id == flow_id)
			return lfirst(lc);
	return NULL;
}

static void
free_handle(StreamFlow *flow)
{
	stream_flows = list_delete_ptr(stream_flows, flow);
	MemoryContextDelete(flow->memory);
}

static StreamFlow *
new_handle(FlowEntry *entry)
{
	MemoryContext memory = AllocSetContextCreate(stream_memory, "flowpg streaming flow",
												 ALLOCSET_DEFAULT_SIZES);
	MemoryContext old = MemoryContextSwitchTo(memory);
	StreamFlow *flow = palloc0(sizeof(StreamFlow));

	flow->flow_id = entry->flow_id;
	flow->version = graph_version(entry);
	flow->memory = memory;
	flow->round_memory = AllocSetContextCreate(memory, "flowpg round", ALLOCSET_DEFAULT_SIZES);
	flow->batch_memory = AllocSetContextCreate(memory, "flowpg batch", ALLOCSET_DEFAULT_SIZES);
	flow->flush_memory = AllocSetContextCreate(memory, "flowpg flush", ALLOCSET_DEFAULT_SIZES);
	flow->batch_cxt = agg_context_create_in(memory, flow->batch_memory);
	MemoryContextSwitchTo(stream_memory);
	stream_flows = lappend(stream_flows, flow);
	MemoryContextSwitchTo(old);
	return flow;
}

/* The flow's shared bookkeeping: found, or made (NULL when no slot is free). */
FlowShared *
stream_state_shared(int64 flow_id, bool create)
{
	dsa_area   *area = state_memory_area();
	dsa_pointer dp = registry_get_flow_state(flow_id);
	FlowShared *sh;

	if (DsaPointerIsValid(dp))
		return dsa_get_address(area, dp);
	if (!create)
		return NULL;
	dp = dsa_allocate_extended(area, sizeof(FlowShared), DSA_ALLOC_NO_OOM | DSA_ALLOC_ZERO);
	if (!DsaPointerIsValid(dp))
	{
		state_memory_note_refusal();
		return NULL;
	}
	sh = dsa_get_address(area, dp);
	sh->magic = FLOW_SHARED_MAGIC;
	sh->store = InvalidDsaPointer;
	sh->stats.freshness_us = -1;
	sh->stats.status = STREAM_STATUS_RECOVERING;
	if (!registry_set_flow_state(flow_id, dp))
	{
		dsa_free(area, dp);
		return NULL;
	}
	return sh;
}

static bool
column_not_null(Oid relid, AttrNumber attno)
{
	HeapTuple	tuple = SearchSysCache2(ATTNUM, ObjectIdGetDatum(relid), Int16GetDatum(attno));
	bool		not_null = false;

	if (HeapTupleIsValid(tuple))
	{
		not_null = ((Form_pg_attribute) GETSTRUCT(tuple))->attnotnull;
		ReleaseSysCache(tuple);
	}
	return not_null;
}

/* Forgets the flow's state: the next round reloads it from the source. */
void
stream_state_reset(StreamFlow *flow)
{
	FlowShared *sh = flow->sh;

	stream_state_drop_store(flow);
	flow->append_rows = NULL;
	MemoryContextReset(flow->flush_memory);
	sh->loaded = false;
	sh->degraded = false;
	sh->has_watermark = false;
	sh->has_expiry = false;		/* expire_after may have changed */
	sh->has_cold = false;		/* and state_keep */
	sh->has_newest = false;
	sh->nwarm = 0;
	sh->touched = sh->touched_whole = false;
	sh->stats.status = STREAM_STATUS_RECOVERING;
	flow->backfill_checked = false; /* a reload may be a new backfill's */
}

/*
 * Attaches the handle to the flow's shared part and compiles its graph;
 * a state of another version of the flow is dropped.  In a transaction,
 * as the owner.
 */
void
stream_state_open(StreamFlow *flow)
{
	if (flow->graph == NULL)
	{
		MemoryContext old = MemoryContextSwitchTo(flow->memory);
		StreamGraph *graph;

		flow->entry = catalog_get_by_id(flow->flow_id);
		graph = graph_build(flow->entry, flow->memory);
		flow->backfill_checked = false;
		flow->probe = NULL;
		if (graph->plan->window_expr && graph->window_key >= 0)
			flow->probe = flow_plan_window_probe(graph->plan);
		/* (a NULL time is a NULL window, which a state with a floor cannot hold) */
		flow->may_go_cold = flow->probe != NULL &&
			(flow->entry->expire_after != NULL ||
			 column_not_null(flow->entry->time_relid, flow->entry->time_attno));
		flow->trans = palloc(sizeof(AggTrans) * Max(graph->naggs, 1));
		flow->partials = palloc(sizeof(AggTrans) * Max(graph->naggs, 1));
		flow->inputs = graph_inputs_create(graph);
		flow->graph = graph;	/* last: an error above leaves no half-open flow */
		MemoryContextSwitchTo(old);
	}
	flow->sh = stream_state_shared(flow->flow_id, true);
	if (flow->sh == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("flowpg has no shared memory left for streaming flow %lld",
						(long long) flow->flow_id),
				 errhint("Raise flowpg.state_memory or flowpg.max_flows.")));
	if (flow->sh->version != flow->version)
	{
		/* a new definition: start over; its batches stay, the refill sorts them out */
		stream_state_reset(flow);
		flow->sh->version = flow->version;
	}
	/* another worker may have made a new store since this one last looked */
	if (!DsaPointerIsValid(flow->sh->store))
		flow->store = NULL;
	else if (flow->store == NULL || flow->store_dp != flow->sh->store)
		stream_state_open_store(flow);
}

/* Drops the worker's compiled graph (the flow changed). */
static void
close_flow(StreamFlow *flow)
{
	if (flow->graph)
		graph_free(flow->graph);
	flow->graph = NULL;
	flow->probe = NULL;
	flow->store = NULL;
	flow->sh = NULL;
	MemoryContextReset(flow->round_memory);
	flow->pending = NIL;
}

/* Frees a flow's shared part and its groups. */
static void
free_stream_state_shared(dsa_pointer state)
{
	dsa_area   *area = state_memory_area();
	FlowShared *sh = dsa_get_address(area, state);

	if (DsaPointerIsValid(sh->store))
		store_destroy(sh->store);
	sh->magic = 0;
	dsa_free(area, state);
}

/* A flow that is gone: its queue and state are freed by whoever claims it. */
static void
forget_flow(int64 flow_id)
{
	dsa_pointer state;

	if (!pool_claim(flow_id, false))
		return;
	state = queue_forget(flow_id);
	if (DsaPointerIsValid(state))
		free_stream_state_shared(state);
	pool_release();
}

void
stream_forget_database(Oid dboid)
{
	ListCell   *lc;

	foreach(lc, queue_forget_database(dboid))
		free_stream_state_shared(*(dsa_pointer *) lfirst(lc));
}

/*
 * Follows the catalog: new streaming flows get a handle, changed ones a
 * new graph, dropped ones are forgotten with their queues and state.
 */
static void
sync_flows(void)
{
	List	   *slots;
	List	   *entries;
	List	   *seen = NIL;
	ListCell   *lc;

	if (stream_memory == NULL)
		stream_memory = AllocSetContextCreate(TopMemoryContext, "flowpg streaming",
											  ALLOCSET_DEFAULT_SIZES);
	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	if (OidIsValid(get_extension_oid("flowpg", true)) && catalog_exists() &&
		!flow_locks_try_tables(AccessShareLock))
	{
		/* someone changes flowpg's tables (DROP EXTENSION, say): later */
		PopActiveSnapshot();
		CommitTransactionCommand();
		return;
	}
	slots = registry_flows(MyDatabaseId);		/* before the catalog: see below */
	entries = OidIsValid(get_extension_oid("flowpg", true)) && catalog_exists() ?
		catalog_get_all() : NIL;
	foreach(lc, entries)
	{
		FlowEntry  *entry = lfirst(lc);
		StreamFlow *flow;

		/* a restored flow is the batching side's until its tables are in */
		if (!flow_on_streams(entry) || strcmp(entry->state, "restoring") == 0)
			continue;
		flow = find_flow(entry->flow_id);
		if (flow && flow->version != graph_version(entry))
		{
			close_flow(flow);
			flow->version = graph_version(entry);
		}
		if (flow == NULL)
			flow = new_handle(entry);
		/* its slot, also after a restart: the count create_flow checks is of slots taken */
		(void) registry_claim(flow->flow_id, entry->owner);
		registry_set_paused(flow->flow_id, entry->paused);	/* after a restart too */
		flow->paused = entry->paused;
		seen = lappend(seen, flow);
	}
	foreach(lc, list_copy(stream_flows))
	{
		StreamFlow *flow = lfirst(lc);

		if (!list_member_ptr(seen, flow))
			free_handle(flow);
	}

	/*
	 * Queues of flows that are gone.  A writer takes a slot only for a flow
	 * it saw committed, so a slot listed before the catalog was read belongs
	 * to a flow the catalog shows, unless that flow was dropped (or is not
	 * streaming any more).
	 */
	foreach(lc, slots)
	{
		int64		flow_id = *(int64 *) lfirst(lc);

		if (find_flow(flow_id) == NULL)
			forget_flow(flow_id);
	}
	PopActiveSnapshot();
	CommitTransactionCommand();
	last_sync = GetCurrentTimestamp();
}

/* Opens the flow's store in the state area, creating it if needed. */
void
stream_state_open_store(StreamFlow *flow)
{
	FlowShared *sh = flow->sh;

	if (!DsaPointerIsValid(sh->store))
	{
		sh->store = store_create(flow->graph);
		if (!DsaPointerIsValid(sh->store))
			ereport(ERROR,
					(errcode(ERRCODE_OUT_OF_MEMORY),
					 errmsg("flowpg.state_memory is exhausted")));
	}
	if (flow->store)
		store_detach(flow->store);
	flow->store = store_attach(sh->store, flow->graph, flow->memory);
	flow->store_dp = sh->store;
}

/* Frees the flow's store: its groups are gone. */
void
stream_state_drop_store(StreamFlow *flow)
{
	FlowShared *sh = flow->sh;

	if (DsaPointerIsValid(sh->store))
		store_destroy(sh->store);
	sh->store = InvalidDsaPointer;
	if (flow->store)
		store_detach(flow->store);
	flow->store = NULL;
}

/* Records, before a change, what the round may change (see FlowShared). */
void
stream_state_touch(StreamFlow *flow, bool whole, int64 lo, int64 hi)
{
	FlowShared *sh = flow->sh;

	if (whole || lo > hi)
	{
		sh->touched_whole = true;
		sh->touched = true;
		return;
	}
	if (!sh->touched)
	{
		sh->touched_lo = lo;
		sh->touched_hi = hi;
		sh->touched = true;
		return;
	}
	sh->touched_lo = Min(sh->touched_lo, lo);
	sh->touched_hi = Max(sh->touched_hi, hi);
}

/* The lowest time the state holds windows from; false when all. */
bool
stream_state_floor(StreamFlow *flow, int64 *time, int64 *window)
{
	FlowShared *sh = flow->sh;
	bool		has = false;

	if (sh->has_expiry)
	{
		*time = sh->expiry_time;
		*window = sh->expiry_window;
		has = true;
	}
	if (sh->has_watermark && (!has || sh->watermark_time > *time))
	{
		*time = sh->watermark_time;
		*window = sh->watermark_window;
		has = true;
	}
	if (sh->has_cold && (!has || sh->cold_time > *time))
	{
		*time = sh->cold_time;
		*window = sh->cold_window;
		has = true;
	}
	return has;
}

/* Follows the catalog when its last look is older than SYNC_USECS. */
List *
stream_state_handles(void)
{
	if (stream_memory == NULL || GetCurrentTimestamp() - last_sync >= SYNC_USECS)
		sync_flows();
	return stream_flows;
}

void
stream_sync(void)
{
	sync_flows();
}

/* Window-value ordinal of the window starting at a time ordinal. */
int64
stream_state_window_of(StreamFlow *flow, int64 time)
{
	Oid			type = TupleDescAttr(flow->graph->key_desc, flow->graph->window_key)->atttypid;

	return window_datum_to_ordinal(type, window_probe_eval(flow->probe, time));
}

bool
stream_state_in_skips(List *skips, bool window_null, int64 w)
{
	ListCell   *lc;

	foreach(lc, skips)
	{
		SkipRange  *r = lfirst(lc);

		if (r->all)
			return true;
		if (window_null)
			continue;
		if ((!r->has_lo || w >= r->lo) && (!r->has_hi || w < r->hi))
			return true;
	}
	return false;
}

/* Converts recomputed time ranges to window ranges (NIL ranges: all). */
List *
stream_state_skips_for(StreamFlow *flow, List *ranges, bool whole)
{
	List	   *skips = NIL;
	ListCell   *lc;

	if (whole || flow->graph->window_key < 0)
	{
		SkipRange  *r = palloc0(sizeof(SkipRange));

		r->all = true;
		return list_make1(r);
	}
	foreach(lc, ranges)
	{
		WindowRange *wr = lfirst(lc);
		SkipRange  *r = palloc0(sizeof(SkipRange));

		r->has_lo = !wr->from_beginning;
		if (r->has_lo)
			r->lo = stream_state_window_of(flow, wr->start);
		r->has_hi = !wr->unbounded;
		if (r->has_hi)
			r->hi = stream_state_window_of(flow, wr->end);
		skips = lappend(skips, r);
	}
	return skips;
}

/*
 * Marks the group whose key is in graph->key_slot (made if need be) for a
 * recompute from its rows (STORED_STALE), its time range widened to the
 * row's, without changing its states.
 */
StoredGroup *
stream_state_mark_stale(StreamFlow *flow, int64 time_lo, int64 time_hi)
{
	StoredGroup *group = store_lookup(flow->store, true);

	group->time_lo = Min(group->time_lo, time_lo);
	group->time_hi = Max(group->time_hi, time_hi);
	/* should the round not finish, the next one recomputes it */
	stream_state_touch(flow, flow->graph->window_key < 0 || (group->flags & STORED_WNULL),
					   group->time_lo, group->time_hi);
	group->flags |= STORED_STALE;
	store_mark_changed(flow->store, group);
	return group;
}

/*
 * One shipped row's aggregate inputs into the states (sign > 0), or taken
 * back out of them (sign < 0), with the hidden counts: false when a state
 * cannot be had without recomputing the group.
 */
static bool
apply_input(StreamGraph *graph, AggContext *cxt, AggTrans *trans, AggInput *inputs, int sign)
{
	bool		exact = true;

	for (int i = 0; i < graph->nuser_aggs; i++)
	{
		AggSupport *agg = &graph->aggs[i];
		AggTrans   *counter = agg->counter >= 0 ? &trans[agg->counter] : NULL;

		if (inputs[i].skip)
			continue;
		if (sign > 0)
		{
			if (agg_advance(cxt, agg, &trans[i], inputs[i].values, inputs[i].nulls) && counter)
				counter->value = Int64GetDatum(DatumGetInt64(counter->value) + 1);
		}
		else if (!agg_retract(cxt, agg, &trans[i], counter, inputs[i].values, inputs[i].nulls))
			exact = false;
	}
	if (graph->rows_counter >= 0)
	{
		AggTrans   *rows = &trans[graph->rows_counter];

		rows->value = Int64GetDatum(DatumGetInt64(rows->value) + sign);
		/* fewer rows than none: the state never had this one */
		if (DatumGetInt64(rows->value) < 0)
			exact = false;
	}
	return exact;
}

/*
 * Merges one group's partial states (key in graph->key_slot) into the
 * state -- or, given inputs instead of partials, one row's aggregate
 * inputs through the transition functions (sign > 0) or taken back out
 * (sign < 0, an UPDATE's or DELETE's old row).  refilled: the group comes
 * from the source, which the sink already reflects (not marked changed).
 * A retraction the state cannot take marks the group STORED_STALE: it is
 * not written until a recompute of its window replaced it.
 */
StoredGroup *
stream_state_merge_group(StreamFlow *flow, int64 time_lo, int64 time_hi, AggTrans *partials,
						 AggInput *inputs, int sign, bool refilled)
{
	StreamGraph *graph = flow->graph;
	GroupStore *store = flow->store;
	AggContext *cxt = store_agg_context(store);
	AggTrans   *trans = flow->trans;
	StoredGroup *group = store_lookup(store, true);
	int64		lo = Min(group->time_lo, time_lo);
	int64		hi = Max(group->time_hi, time_hi);

	/* the touch comes first: the round may fail from here on */
	stream_state_touch(flow, graph->window_key < 0 || (group->flags & STORED_WNULL), lo, hi);
	store_load_trans(store, group, trans);
	if (inputs != NULL)
	{
		bool		exact = apply_input(graph, cxt, trans, inputs, sign);

		/*
		 * The group's last row went: its states are the initial ones,
		 * whatever the inverses said (a removed maximum needs no
		 * recompute).  Otherwise a state that cannot say what it is
		 * without the row has its group recomputed.
		 */
		if (graph->rows_counter >= 0 && DatumGetInt64(trans[graph->rows_counter].value) == 0)
			agg_init_trans(cxt, graph->aggs, graph->naggs, trans);
		else if (!exact)
			group->flags |= STORED_STALE;
	}
	else
	{
		for (int i = 0; i < graph->naggs; i++)
		{
			/* a partial without input for the aggregate has nothing to combine */
			if (!partials[i].noinit)
				agg_combine(cxt, &graph->aggs[i], &trans[i], partials[i].value,
							partials[i].isnull, false);
		}
	}
	store_save_trans(store, group, trans);
	group->time_lo = lo;
	group->time_hi = hi;
	if (refilled)
		group->flags |= STORED_IN_SINK;
	else
		store_mark_changed(store, group);
	return group;
}
