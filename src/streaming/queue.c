/*-------------------------------------------------------------------------
 *
 * queue.c
 *	  Shared memory of streaming flows: the flow registry and input queues.
 *
 * The registry has four times flowpg.max_flows slots (that setting counts
 * per database), one per streaming flow that has been written to (or
 * flushed), holding its queue, its flush handshake and the counters the
 * worker publishes for flow_stats; when none is free, writers fall back to
 * the dirty log.  A slot's spinlock guards it; the registry LWLock guards
 * taking and freeing slots.
 *
 * Queued batches live in a DSA area created in place in the main shared
 * memory segment, flowpg.queue_memory large and limited to that size, so a
 * writer that finds it full fails to allocate instead of growing it: the
 * writer then waits a little for the worker to drain and finally records
 * its windows as dirty (capture falls back to recomputation).  Each batch
 * is one allocation linked into its flow's FIFO.  The worker moves batches
 * into its own memory as soon as it sees them.  (Prepared transactions do
 * not queue at all: see stream_capture.c.)
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "storage/condition_variable.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "utils/dsa.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "guc.h"
#include "queue.h"
#include "pool.h"

#define BACKPRESSURE_WAIT_MS 50
#define STALLED_WORKER_MS 500
#define BEHIND_MS 2000

typedef struct BatchHeader
{
	dsa_pointer next;
	int64		seq;
	TransactionId xid;
	uint32		version;
	int32		count;
	int64		nrows;
	TimestampTz queued_at;
	Size		len;
	/* the data follows */
} BatchHeader;

typedef struct FlowSlot
{
	slock_t		mutex;
	bool		in_use;
	Oid			dboid;
	int64		flow_id;
	dsa_pointer head;			/* oldest batch */
	dsa_pointer tail;
	int64		last_seq;
	int64		flush_requests; /* flush_flow calls so far */
	int64		flushes_done;	/* requests the worker has completed */
	int64		flushes_failed; /* requests whose round failed */
	int			flush_waiters;	/* flush_flow calls waiting now */
	bool		dirty;			/* new dirty log entries */
	bool		reset;			/* the sink was rewritten: reload the state */
	bool		evict;			/* state memory is short: this flow gives up windows */
	bool		paused;			/* pause_flow: writers log their windows dirty */
	dsa_pointer flow_state;		/* the streaming state (stream_state.c) */
	TimestampTz last_take;		/* when the worker last drained the queue */
	TimestampTz behind_until;	/* a batch found no room: see queue_worker_behind */
	StreamStats stats;
} FlowSlot;

typedef struct QueueShared
{
	LWLock		lock;			/* taking and freeing slots */
	int			tranche;
	ConditionVariable flushed;
	int			nslots;
	Size		area_size;
	FlowSlot	slots[FLEXIBLE_ARRAY_MEMBER];
} QueueShared;

static QueueShared *queue_shared = NULL;
static void *area_place = NULL;
static dsa_area *area = NULL;

/* flowpg.max_flows counts per database: room for several databases' flows */
#define REGISTRY_SLOTS (flowpg_max_flows * 4)

static Size
registry_size(void)
{
	return add_size(offsetof(QueueShared, slots),
					mul_size(sizeof(FlowSlot), REGISTRY_SLOTS));
}

static Size
area_size(void)
{
	return (Size) flowpg_queue_memory_kb * 1024;
}

void
queue_shmem_request(void)
{
	RequestAddinShmemSpace(MAXALIGN(registry_size()));
	RequestAddinShmemSpace(MAXALIGN(area_size()));
}

/* Called in the postmaster with AddinShmemInitLock held. */
void
queue_shmem_startup(void)
{
	bool		found;

	queue_shared = ShmemInitStruct("flowpg registry", registry_size(), &found);
	area_place = ShmemInitStruct("flowpg queue area", area_size(), &found);
	if (!found)
	{
		dsa_area   *created;

		memset(queue_shared, 0, registry_size());
		queue_shared->tranche = LWLockNewTrancheId();
		LWLockInitialize(&queue_shared->lock, queue_shared->tranche);
		ConditionVariableInit(&queue_shared->flushed);
		queue_shared->nslots = REGISTRY_SLOTS;
		queue_shared->area_size = area_size();
		for (int i = 0; i < queue_shared->nslots; i++)
			SpinLockInit(&queue_shared->slots[i].mutex);
		created = dsa_create_in_place(area_place, area_size(), queue_shared->tranche, NULL);
		dsa_set_size_limit(created, area_size());
		dsa_detach(created);
	}
}

static void
attach_area(void)
{
	MemoryContext old;

	if (area != NULL)
		return;
	if (queue_shared == NULL)
		elog(ERROR, "flowpg's shared memory is not initialized");
	LWLockRegisterTranche(queue_shared->tranche, "flowpg_queue");
	old = MemoryContextSwitchTo(TopMemoryContext);
	area = dsa_attach_in_place(area_place, NULL);
	MemoryContextSwitchTo(old);
	dsa_pin_mapping(area);
	on_shmem_exit(dsa_on_shmem_exit_release_in_place, PointerGetDatum(area_place));
}

static FlushOutcome wait_for_flush(FlowSlot *slot, int64 flow_id, int64 target,
									TimestampTz started, int64 *rows_written);

/* The flow's slot in this database, taken when create and none exists. */
static FlowSlot *
find_slot(int64 flow_id, bool create)
{
	FlowSlot   *found = NULL;

	attach_area();
	LWLockAcquire(&queue_shared->lock, create ? LW_EXCLUSIVE : LW_SHARED);
	for (int i = 0; i < queue_shared->nslots && found == NULL; i++)
	{
		FlowSlot   *slot = &queue_shared->slots[i];

		if (slot->in_use && slot->flow_id == flow_id && slot->dboid == MyDatabaseId)
			found = slot;
	}
	for (int i = 0; create && found == NULL && i < queue_shared->nslots; i++)
	{
		FlowSlot   *slot = &queue_shared->slots[i];

		if (!slot->in_use)
		{
			SpinLockAcquire(&slot->mutex);
			slot->in_use = true;
			slot->dboid = MyDatabaseId;
			slot->flow_id = flow_id;
			slot->head = slot->tail = InvalidDsaPointer;
			slot->last_seq = 0;
			slot->flush_requests = slot->flushes_done = slot->flushes_failed = 0;
			slot->flush_waiters = 0;
			slot->dirty = false;
			slot->reset = false;
			slot->evict = false;
			slot->paused = false;
			slot->flow_state = InvalidDsaPointer;
			slot->last_take = GetCurrentTimestamp();
			slot->behind_until = 0;
			memset(&slot->stats, 0, sizeof(StreamStats));
			slot->stats.freshness_us = -1;
			SpinLockRelease(&slot->mutex);
			found = slot;
		}
	}
	LWLockRelease(&queue_shared->lock);
	return found;
}

bool
queue_append(int64 flow_id, TransactionId xid, uint32 version, int32 count,
			 int64 nrows, StringInfo data, bool *wake)
{
	int64		hurry = (int64) area_size() / QUEUE_HURRY_FRACTION;
	FlowSlot   *slot = find_slot(flow_id, true);
	dsa_pointer dp = InvalidDsaPointer;
	BatchHeader *batch;
	TimestampTz give_up = 0;

	if (slot == NULL)
		return false;
	/* (read without the spinlock: a stale answer only queues or logs one batch more) */
	if (slot->paused)
		return false;
	for (;;)
	{
		TimestampTz last_take;
		TimestampTz now;

		dp = dsa_allocate_extended(area, sizeof(BatchHeader) + data->len, DSA_ALLOC_NO_OOM);
		if (DsaPointerIsValid(dp))
			break;

		/*
		 * Full: wait for the worker to drain (backpressure), a little --
		 * not at all when it has not drained for a while (it is busy, say
		 * reloading state): then the change goes to the dirty log at once.
		 */
		SpinLockAcquire(&slot->mutex);
		last_take = slot->last_take;
		SpinLockRelease(&slot->mutex);
		now = GetCurrentTimestamp();
		if (give_up == 0)
			give_up = TimestampTzPlusMilliseconds(now, BACKPRESSURE_WAIT_MS);
		if (now >= give_up ||
			now - last_take > (int64) STALLED_WORKER_MS * 1000)
		{
			SpinLockAcquire(&slot->mutex);
			slot->behind_until = TimestampTzPlusMilliseconds(now, BEHIND_MS);
			SpinLockRelease(&slot->mutex);
			return false;
		}
		pool_wake(MyDatabaseId);
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, 1,
						 PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
	batch = dsa_get_address(area, dp);
	batch->next = InvalidDsaPointer;
	batch->xid = xid;
	batch->version = version;
	batch->count = count;
	batch->nrows = nrows;
	batch->queued_at = GetCurrentTimestamp();
	batch->len = data->len;
	memcpy((char *) batch + sizeof(BatchHeader), data->data, data->len);

	SpinLockAcquire(&slot->mutex);
	/* the slot may have been freed and reused meanwhile: check it is ours */
	if (!slot->in_use || slot->flow_id != flow_id || slot->dboid != MyDatabaseId)
	{
		SpinLockRelease(&slot->mutex);
		dsa_free(area, dp);
		return false;
	}
	batch->seq = ++slot->last_seq;
	*wake = !DsaPointerIsValid(slot->head) ||
		(slot->stats.queued_bytes < hurry && slot->stats.queued_bytes + data->len >= hurry);
	if (DsaPointerIsValid(slot->tail))
		((BatchHeader *) dsa_get_address(area, slot->tail))->next = dp;
	else
		slot->head = dp;
	slot->tail = dp;
	slot->stats.queued_batches++;
	slot->stats.queued_bytes += data->len;
	SpinLockRelease(&slot->mutex);
	return true;
}

List *
queue_peek(int64 flow_id)
{
	FlowSlot   *slot = find_slot(flow_id, false);
	dsa_pointer dp;
	List	   *batches = NIL;

	if (slot == NULL)
		return NIL;

	/*
	 * Only the worker that claimed the flow unlinks its batches, and
	 * writers only append: the chain from head to this tail stays as it is.
	 */
	SpinLockAcquire(&slot->mutex);
	dp = slot->head;
	slot->last_take = GetCurrentTimestamp();
	SpinLockRelease(&slot->mutex);

	while (DsaPointerIsValid(dp))
	{
		BatchHeader *header = dsa_get_address(area, dp);
		QueuedBatch *batch = palloc(sizeof(QueuedBatch));
		dsa_pointer next;

		batch->seq = header->seq;
		batch->xid = header->xid;
		batch->version = header->version;
		batch->count = header->count;
		batch->nrows = header->nrows;
		batch->queued_at = header->queued_at;
		batch->len = header->len;
		batch->data = palloc(header->len);
		memcpy(batch->data, (char *) header + sizeof(BatchHeader), header->len);
		batches = lappend(batches, batch);
		SpinLockAcquire(&slot->mutex);
		next = (dp == slot->tail) ? InvalidDsaPointer : header->next;
		SpinLockRelease(&slot->mutex);
		dp = next;
	}
	return batches;
}

void
queue_remove(int64 flow_id, List *batches)
{
	FlowSlot   *slot;
	dsa_pointer *freed;
	int			nfreed = 0;
	ListCell   *lc = list_head(batches);
	dsa_pointer prev = InvalidDsaPointer;
	dsa_pointer dp;

	if (batches == NIL)
		return;
	slot = find_slot(flow_id, false);
	if (slot == NULL)
		return;
	freed = palloc(sizeof(dsa_pointer) * list_length(batches));
	SpinLockAcquire(&slot->mutex);
	/* both in seq order: one walk unlinks them */
	dp = slot->head;
	while (DsaPointerIsValid(dp) && lc != NULL)
	{
		BatchHeader *header = dsa_get_address(area, dp);
		dsa_pointer next = header->next;
		int64		seq = ((QueuedBatch *) lfirst(lc))->seq;

		if (header->seq < seq)
		{
			prev = dp;
			dp = next;
			continue;
		}
		if (header->seq == seq)
		{
			if (DsaPointerIsValid(prev))
				((BatchHeader *) dsa_get_address(area, prev))->next = next;
			else
				slot->head = next;
			if (slot->tail == dp)
				slot->tail = prev;
			slot->stats.queued_batches--;
			slot->stats.queued_bytes -= header->len;
			freed[nfreed++] = dp;
			dp = next;
		}
		lc = lnext(batches, lc);
	}
	SpinLockRelease(&slot->mutex);
	for (int i = 0; i < nfreed; i++)
		dsa_free(area, freed[i]);
	pfree(freed);
}

QueueWant
queue_round_wanted(int64 flow_id)
{
	FlowSlot   *slot = find_slot(flow_id, false);
	int64		hurry = (int64) area_size() / QUEUE_HURRY_FRACTION;
	QueueWant	want = QUEUE_WANT_NONE;

	if (slot == NULL)
		return QUEUE_WANT_NONE;
	SpinLockAcquire(&slot->mutex);
	/* behind, the recompute of fallbacks waits for its interval (stream_round.c) */
	if ((slot->dirty && slot->behind_until <= GetCurrentTimestamp()) || slot->reset || slot->evict ||
		(slot->flush_waiters > 0 && slot->flush_requests > slot->flushes_done) ||
		slot->stats.queued_bytes >= hurry)
		want = QUEUE_WANT_NOW;
	else if (DsaPointerIsValid(slot->head) || slot->dirty)
		want = QUEUE_WANT_BATCHES;
	SpinLockRelease(&slot->mutex);
	return want;
}

dsa_pointer
queue_get_flow_state(int64 flow_id)
{
	FlowSlot   *slot = find_slot(flow_id, false);
	dsa_pointer dp;

	if (slot == NULL)
		return InvalidDsaPointer;
	SpinLockAcquire(&slot->mutex);
	dp = slot->flow_state;
	SpinLockRelease(&slot->mutex);
	return dp;
}

bool
queue_set_flow_state(int64 flow_id, dsa_pointer dp)
{
	FlowSlot   *slot = find_slot(flow_id, true);

	if (slot == NULL)
		return false;
	SpinLockAcquire(&slot->mutex);
	slot->flow_state = dp;
	SpinLockRelease(&slot->mutex);
	return true;
}

void
queue_request_evict_largest(void)
{
	FlowSlot   *largest = NULL;

	for (int i = 0; i < queue_shared->nslots; i++)
	{
		FlowSlot   *slot = &queue_shared->slots[i];

		/* a paused flow runs no round that could give windows up */
		if (slot->in_use && !slot->paused && slot->stats.state_bytes > 0 &&
			(largest == NULL || slot->stats.state_bytes > largest->stats.state_bytes))
			largest = slot;
	}
	if (largest == NULL)
		return;
	SpinLockAcquire(&largest->mutex);
	largest->evict = largest->in_use;
	SpinLockRelease(&largest->mutex);
}

bool
queue_take_evict(int64 flow_id)
{
	FlowSlot   *slot = find_slot(flow_id, false);
	bool		evict;

	if (slot == NULL)
		return false;
	SpinLockAcquire(&slot->mutex);
	evict = slot->evict;
	slot->evict = false;
	SpinLockRelease(&slot->mutex);
	return evict;
}

/*
 * Frees a slot and its queue, if it still belongs to that flow of that
 * database; returns its state for the caller to free.
 */
static dsa_pointer
free_slot(FlowSlot *slot, Oid dboid, int64 flow_id)
{
	dsa_pointer dp = InvalidDsaPointer;
	dsa_pointer state = InvalidDsaPointer;

	LWLockAcquire(&queue_shared->lock, LW_EXCLUSIVE);
	SpinLockAcquire(&slot->mutex);
	if (slot->in_use && slot->flow_id == flow_id && slot->dboid == dboid)
	{
		dp = slot->head;
		state = slot->flow_state;
		slot->in_use = false;
		slot->flow_id = 0;
		slot->head = slot->tail = InvalidDsaPointer;
		slot->flow_state = InvalidDsaPointer;
	}
	SpinLockRelease(&slot->mutex);
	LWLockRelease(&queue_shared->lock);
	while (DsaPointerIsValid(dp))
	{
		dsa_pointer next = ((BatchHeader *) dsa_get_address(area, dp))->next;

		dsa_free(area, dp);
		dp = next;
	}
	ConditionVariableBroadcast(&queue_shared->flushed);
	return state;
}

dsa_pointer
queue_forget(int64 flow_id)
{
	FlowSlot   *slot = find_slot(flow_id, false);

	if (slot == NULL)
		return InvalidDsaPointer;
	return free_slot(slot, MyDatabaseId, flow_id);
}

List *
queue_forget_database(Oid dboid)
{
	List	   *states = NIL;

	if (queue_shared == NULL)
		return NIL;
	attach_area();
	for (int i = 0; i < queue_shared->nslots; i++)
	{
		FlowSlot   *slot = &queue_shared->slots[i];
		int64		flow_id;
		bool		ours;
		dsa_pointer state;

		SpinLockAcquire(&slot->mutex);
		ours = slot->in_use && slot->dboid == dboid;
		flow_id = slot->flow_id;
		SpinLockRelease(&slot->mutex);
		if (!ours)
			continue;
		state = free_slot(slot, dboid, flow_id);
		if (DsaPointerIsValid(state))
		{
			dsa_pointer *copy = palloc(sizeof(dsa_pointer));

			*copy = state;
			states = lappend(states, copy);
		}
	}
	return states;
}

List *
queue_flows(void)
{
	List	   *flows = NIL;

	attach_area();
	LWLockAcquire(&queue_shared->lock, LW_SHARED);
	for (int i = 0; i < queue_shared->nslots; i++)
	{
		FlowSlot   *slot = &queue_shared->slots[i];

		if (slot->in_use && slot->dboid == MyDatabaseId)
		{
			int64	   *id = palloc(sizeof(int64));

			*id = slot->flow_id;
			flows = lappend(flows, id);
		}
	}
	LWLockRelease(&queue_shared->lock);
	return flows;
}

void
queue_publish(int64 flow_id, StreamStats *stats, int64 flushes_done, bool failed)
{
	FlowSlot   *slot = find_slot(flow_id, true);

	if (slot == NULL)
		return;
	SpinLockAcquire(&slot->mutex);
	slot->stats.state_groups = stats->state_groups;
	slot->stats.state_bytes = stats->state_bytes;
	slot->stats.batches_applied = stats->batches_applied;
	slot->stats.batches_dropped = stats->batches_dropped;
	slot->stats.freshness_us = stats->freshness_us;
	slot->stats.last_flush_at = stats->last_flush_at;
	slot->stats.status = stats->status;
	slot->stats.round_rows = stats->round_rows;
	slot->stats.refills = stats->refills;
	slot->stats.repairs = stats->repairs;
	slot->stats.unrecorded_runs = stats->unrecorded_runs;
	slot->stats.unrecorded_rows_in = stats->unrecorded_rows_in;
	slot->stats.unrecorded_rows_out = stats->unrecorded_rows_out;
	slot->stats.last_round_at = stats->last_round_at;
	slot->stats.last_round_us = stats->last_round_us;
	slot->stats.retry_at = stats->retry_at;
	slot->stats.degraded = stats->degraded;
	slot->stats.degrades = stats->degrades;
	slot->stats.evictions = stats->evictions;
	if (stats->last_worker)
		slot->stats.last_worker = stats->last_worker;
	if (flushes_done > slot->flushes_done)
		slot->flushes_done = flushes_done;
	if (failed && flushes_done > slot->flushes_failed)
		slot->flushes_failed = flushes_done;
	SpinLockRelease(&slot->mutex);
	if (flushes_done > 0)
		ConditionVariableBroadcast(&queue_shared->flushed);
}

void
queue_count_fallback(int64 flow_id, int64 n)
{
	FlowSlot   *slot = find_slot(flow_id, true);

	if (slot == NULL)
		return;
	SpinLockAcquire(&slot->mutex);
	slot->stats.fallbacks += n;
	SpinLockRelease(&slot->mutex);
}

bool
queue_get_stats(int64 flow_id, StreamStats *stats)
{
	FlowSlot   *slot;

	if (queue_shared == NULL)
		return false;			/* not preloaded */
	slot = find_slot(flow_id, false);
	if (slot == NULL)
		return false;
	SpinLockAcquire(&slot->mutex);
	*stats = slot->stats;
	stats->oldest_queued_at = DsaPointerIsValid(slot->head) ?
		((BatchHeader *) dsa_get_address(area, slot->head))->queued_at : 0;
	SpinLockRelease(&slot->mutex);
	return true;
}

FlushOutcome
queue_flush_and_wait(int64 flow_id, int64 *rows_written)
{
	FlowSlot   *slot = find_slot(flow_id, true);
	int64		target;
	volatile FlushOutcome outcome = FLUSH_NO_WORKER;
	TimestampTz started = GetCurrentTimestamp();

	*rows_written = 0;
	if (slot == NULL || !pool_running(MyDatabaseId))
		return FLUSH_NO_WORKER;
	SpinLockAcquire(&slot->mutex);
	target = ++slot->flush_requests;
	slot->flush_waiters++;
	SpinLockRelease(&slot->mutex);
	pool_wake(MyDatabaseId);

	/* a request nobody waits for any more (given up, canceled) is no request */
	PG_TRY();
	{
		outcome = wait_for_flush(slot, flow_id, target, started, rows_written);
	}
	PG_FINALLY();
	{
		SpinLockAcquire(&slot->mutex);
		if (slot->in_use && slot->flow_id == flow_id && slot->dboid == MyDatabaseId &&
			slot->flush_waiters > 0)
			slot->flush_waiters--;
		SpinLockRelease(&slot->mutex);
	}
	PG_END_TRY();
	return outcome;
}

static FlushOutcome
wait_for_flush(FlowSlot *slot, int64 flow_id, int64 target, TimestampTz started,
			   int64 *rows_written)
{
	FlushOutcome outcome = FLUSH_NO_WORKER;
	MemoryContext polling = AllocSetContextCreate(CurrentMemoryContext, "flowpg flush wait",
												  ALLOCSET_SMALL_SIZES);

	ConditionVariablePrepareToSleep(&queue_shared->flushed);
	for (int round = 1;; round++)
	{
		SpinLockAcquire(&slot->mutex);
		if (!slot->in_use || slot->flow_id != flow_id || slot->dboid != MyDatabaseId)
			outcome = FLUSH_DONE;	/* the flow was dropped meanwhile */
		else if (slot->flushes_failed >= target)
			outcome = FLUSH_FAILED;
		else if (slot->flushes_done >= target)
		{
			outcome = FLUSH_DONE;
			*rows_written = slot->stats.round_rows;
		}
		else if (slot->paused)
			outcome = FLUSH_PAUSED;	/* the worker will not run it */
		SpinLockRelease(&slot->mutex);
		if (outcome != FLUSH_NO_WORKER || !pool_running(MyDatabaseId))
			break;
		/* now and then: is the worker waiting for a lock we hold? */
		if (round % 5 == 0)
		{
			MemoryContext old = MemoryContextSwitchTo(polling);
			bool		blocked = pool_blocked_by_me(MyDatabaseId);

			MemoryContextSwitchTo(old);
			MemoryContextReset(polling);
			if (blocked)
			{
				outcome = FLUSH_WORKER_BLOCKED;
				break;
			}
		}
		if (flowpg_query_timeout_ms > 0 &&
			TimestampDifferenceExceeds(started, GetCurrentTimestamp(), flowpg_query_timeout_ms))
		{
			outcome = FLUSH_TIMED_OUT;
			break;
		}
		(void) ConditionVariableTimedSleep(&queue_shared->flushed, 100, PG_WAIT_EXTENSION);
	}
	ConditionVariableCancelSleep();
	MemoryContextDelete(polling);
	return outcome;
}

int64
queue_flush_requested(int64 flow_id)
{
	FlowSlot   *slot = find_slot(flow_id, false);
	int64		requested = 0;

	if (slot == NULL)
		return 0;
	SpinLockAcquire(&slot->mutex);
	if (slot->flush_waiters > 0 && slot->flush_requests > slot->flushes_done)
		requested = slot->flush_requests;
	SpinLockRelease(&slot->mutex);
	return requested;
}

void
queue_note_dirty(int64 flow_id)
{
	FlowSlot   *slot;

	/* flows without a slot (batching ones) are found by their schedule */
	if (queue_shared == NULL)
		return;
	slot = find_slot(flow_id, false);

	if (slot == NULL)
		return;
	SpinLockAcquire(&slot->mutex);
	slot->dirty = true;
	SpinLockRelease(&slot->mutex);
}

bool
queue_worker_behind(int64 flow_id)
{
	FlowSlot   *slot;
	bool		behind;

	if (queue_shared == NULL)
		return false;
	slot = find_slot(flow_id, false);
	if (slot == NULL)
		return false;
	SpinLockAcquire(&slot->mutex);
	behind = slot->behind_until > GetCurrentTimestamp();
	SpinLockRelease(&slot->mutex);
	return behind;
}

bool
queue_take_dirty(int64 flow_id)
{
	FlowSlot   *slot = find_slot(flow_id, false);
	bool		dirty = false;

	if (slot == NULL)
		return false;
	SpinLockAcquire(&slot->mutex);
	dirty = slot->dirty;
	slot->dirty = false;
	SpinLockRelease(&slot->mutex);
	return dirty;
}

bool
stream_flush_requested(void)
{
	bool		requested = false;

	if (queue_shared == NULL)
		return false;
	for (int i = 0; i < queue_shared->nslots && !requested; i++)
	{
		FlowSlot   *slot = &queue_shared->slots[i];

		SpinLockAcquire(&slot->mutex);
		requested = slot->in_use && slot->dboid == MyDatabaseId &&
			slot->flush_waiters > 0 && slot->flush_requests > slot->flushes_done;
		SpinLockRelease(&slot->mutex);
	}
	return requested;
}

void
queue_request_reset(int64 flow_id)
{
	FlowSlot   *slot = find_slot(flow_id, true);

	if (slot == NULL)
		return;
	SpinLockAcquire(&slot->mutex);
	slot->reset = true;
	SpinLockRelease(&slot->mutex);
}

void
queue_set_paused(int64 flow_id, bool paused)
{
	FlowSlot   *slot = find_slot(flow_id, paused);

	if (slot == NULL)
		return;
	SpinLockAcquire(&slot->mutex);
	slot->paused = paused;
	SpinLockRelease(&slot->mutex);
}

bool
queue_take_reset(int64 flow_id)
{
	FlowSlot   *slot = find_slot(flow_id, false);
	bool		reset = false;

	if (slot == NULL)
		return false;
	SpinLockAcquire(&slot->mutex);
	reset = slot->reset;
	slot->reset = false;
	SpinLockRelease(&slot->mutex);
	return reset;
}

bool
queue_available(void)
{
	return queue_shared != NULL;
}
