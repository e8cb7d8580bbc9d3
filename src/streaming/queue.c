/*-------------------------------------------------------------------------
 *
 * queue.c
 *	  The input queues of streaming flows: each flow's chain of transaction
 *	  batches, in a DSA area of shared memory.  The head of each chain is in
 *	  the flow's registry slot (registry.c), under the slot's spinlock.
 *
 * Queued batches live in a DSA area created in place in the main shared
 * memory segment, flowpg.queue_memory large and limited to that size, so a
 * writer that finds it full fails to allocate instead of growing it: the
 * writer then waits a little for the worker to drain and finally records
 * its windows as dirty (capture falls back to recomputation).  A
 * transaction's rows are one allocation, whatever the number of flows
 * they feed; each flow's FIFO links a small header to it, and the rows are
 * freed when the last flow has removed its header (a reference count).
 * The worker reads them in place.  (Prepared transactions do not queue at
 * all: see stream_capture.c.)
 *
 * Locking: the area's own locks; a chain's links and the flow's queue
 * counters are changed under its registry slot's spinlock; the rows'
 * reference count is atomic.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
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
#include "pool.h"
#include "queue.h"
#include "registry.h"

/*
 * Backpressure: a committing writer that finds the queue full waits for
 * room while the workers drain it (they took from the targets' queues in
 * the last STALLED_WORKER_MS), up to BACKPRESSURE_WAIT_MS.  Giving up sends
 * its rows, and the targets' writers' for BEHIND_MS, to the dirty log: the
 * recompute of their windows re-reads them from the source, which for the
 * long windows of a live table (an hour, a day) costs far more than the
 * streaming rows they replace -- so writers are slowed to the workers'
 * pace rather than sent there while the workers keep up at all.
 */
#define BACKPRESSURE_WAIT_MS 2000
#define STALLED_WORKER_MS 1000
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
	dsa_pointer rows;			/* SharedRows */
} BatchHeader;

/* A transaction's rows, shared by the batches of the flows they feed. */
typedef struct SharedRows
{
	pg_atomic_uint32 refs;
	Size		len;
	/* the data follows, at SHARED_ROWS_DATA */
} SharedRows;

#define SHARED_ROWS_DATA MAXALIGN(sizeof(SharedRows))

/* What the area's creator leaves for the processes that attach to it. */
typedef struct QueueShared
{
	int			tranche;
	Size		area_size;
	pg_atomic_uint64 rows_bytes;	/* of the transactions' rows held now */
} QueueShared;

static QueueShared *queue_shared = NULL;
static void *area_place = NULL;
static dsa_area *area = NULL;

static Size
area_size(void)
{
	return (Size) flowpg_queue_memory_kb * 1024;
}

void
queue_shmem_request(void)
{
	RequestAddinShmemSpace(MAXALIGN(sizeof(QueueShared)));
	RequestAddinShmemSpace(MAXALIGN(area_size()));
}

/* Called in the postmaster with AddinShmemInitLock held. */
void
queue_shmem_startup(void)
{
	bool		found;

	queue_shared = ShmemInitStruct("flowpg queue", sizeof(QueueShared), &found);
	area_place = ShmemInitStruct("flowpg queue area", area_size(), &found);
	if (!found)
	{
		dsa_area   *created;

		queue_shared->tranche = LWLockNewTrancheId();
		queue_shared->area_size = area_size();
		pg_atomic_init_u64(&queue_shared->rows_bytes, 0);
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

/* Drops a reference to shared rows; the last one frees them. */
static void
release_rows(dsa_pointer dp)
{
	SharedRows *rows = dsa_get_address(area, dp);

	if (pg_atomic_sub_fetch_u32(&rows->refs, 1) == 0)
	{
		pg_atomic_sub_fetch_u64(&queue_shared->rows_bytes, SHARED_ROWS_DATA + rows->len);
		dsa_free(area, dp);
	}
}

uint64
queue_rows_bytes(void)
{
	return queue_shared ? pg_atomic_read_u64(&queue_shared->rows_bytes) : 0;
}

/*
 * Room for len bytes in the area, waiting for the workers of the targets
 * to drain (backpressure, above) -- not at all when they have not drained
 * for a while (busy, say reloading state).
 */
static dsa_pointer
allocate_waiting(Size len, QueueTarget *targets, int ntargets)
{
	TimestampTz give_up = 0;

	for (;;)
	{
		dsa_pointer dp = dsa_allocate_extended(area, len, DSA_ALLOC_NO_OOM);
		TimestampTz last_take = 0;
		TimestampTz now;

		if (DsaPointerIsValid(dp))
			return dp;
		/* the most recent drain of the targets' workers */
		for (int i = 0; i < ntargets; i++)
		{
			FlowSlot   *slot = registry_find(targets[i].flow_id, true);

			if (slot == NULL)
				continue;
			SpinLockAcquire(&slot->mutex);
			last_take = Max(last_take, slot->queue.last_take);
			SpinLockRelease(&slot->mutex);
		}
		now = GetCurrentTimestamp();
		if (give_up == 0)
			give_up = TimestampTzPlusMilliseconds(now, BACKPRESSURE_WAIT_MS);
		if (now >= give_up ||
			now - last_take > (int64) STALLED_WORKER_MS * 1000)
		{
			/* behind: the targets' writers go to the dirty log for a while */
			for (int i = 0; i < ntargets; i++)
			{
				FlowSlot   *s = registry_find(targets[i].flow_id, true);

				if (s == NULL)
					continue;
				SpinLockAcquire(&s->mutex);
				s->queue.behind_until = TimestampTzPlusMilliseconds(now, BEHIND_MS);
				SpinLockRelease(&s->mutex);
			}
			return InvalidDsaPointer;
		}
		pool_wake(MyDatabaseId);
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, 1,
						 PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
}

/* Links a batch header of shared rows into one flow's queue; false if it cannot. */
static bool
link_batch(QueueTarget *target, TransactionId xid, dsa_pointer rows_dp, Size len,
		   TimestampTz now, bool *wake)
{
	int64		hurry = QUEUE_HURRY_BYTES;
	FlowSlot   *slot = registry_find(target->flow_id, true);
	dsa_pointer dp;
	BatchHeader *batch;
	SharedRows *rows = dsa_get_address(area, rows_dp);

	/* (read without the spinlock: a stale answer only queues or logs one batch more) */
	if (slot == NULL || slot->paused)
		return false;
	dp = dsa_allocate_extended(area, sizeof(BatchHeader), DSA_ALLOC_NO_OOM);
	if (!DsaPointerIsValid(dp))
		return false;
	batch = dsa_get_address(area, dp);
	batch->next = InvalidDsaPointer;
	batch->xid = xid;
	batch->version = target->version;
	batch->count = (int32) Min(target->nrows, PG_INT32_MAX);
	batch->nrows = target->nrows;
	batch->queued_at = now;
	batch->len = len;
	batch->rows = rows_dp;
	/* before the worker can see it: it may release it at once */
	pg_atomic_add_fetch_u32(&rows->refs, 1);

	SpinLockAcquire(&slot->mutex);
	/* the slot may have been freed and reused meanwhile: check it is ours */
	if (!registry_slot_is(slot, MyDatabaseId, target->flow_id))
	{
		SpinLockRelease(&slot->mutex);
		release_rows(rows_dp);
		dsa_free(area, dp);
		return false;
	}
	batch->seq = ++slot->queue.last_seq;
	*wake |= !DsaPointerIsValid(slot->queue.head) ||
		(slot->stats.queued_bytes < hurry && slot->stats.queued_bytes + len >= hurry);
	if (DsaPointerIsValid(slot->queue.tail))
		((BatchHeader *) dsa_get_address(area, slot->queue.tail))->next = dp;
	else
	{
		slot->queue.head = dp;
		slot->queue.oldest_queued_at = batch->queued_at;
	}
	slot->queue.tail = dp;
	slot->stats.queued_batches++;
	slot->stats.queued_bytes += len;
	SpinLockRelease(&slot->mutex);
	return true;
}

void
queue_append(QueueTarget *targets, int ntargets, TransactionId xid, StringInfo data,
			 bool *wake)
{
	dsa_pointer rows_dp;
	SharedRows *rows;
	TimestampTz now = GetCurrentTimestamp();

	QueueTarget **live = palloc(sizeof(QueueTarget *) * Max(ntargets, 1));
	QueueTarget *waiting = palloc(sizeof(QueueTarget) * Max(ntargets, 1));
	int			nlive = 0;

	attach_area();
	/* paused flows and flows without a slot take nothing, and wait for nothing */
	for (int i = 0; i < ntargets; i++)
	{
		FlowSlot   *slot = registry_find(targets[i].flow_id, true);

		targets[i].queued = false;
		/* (read without the spinlock: a stale answer only queues or logs one batch more) */
		if (slot != NULL && !slot->paused)
		{
			live[nlive] = &targets[i];
			waiting[nlive++] = targets[i];
		}
	}
	if (nlive == 0)
		return;
	rows_dp = allocate_waiting(SHARED_ROWS_DATA + data->len, waiting, nlive);
	if (!DsaPointerIsValid(rows_dp))
		return;
	rows = dsa_get_address(area, rows_dp);
	/* the writer's own reference, until every flow's header is linked */
	pg_atomic_init_u32(&rows->refs, 1);
	rows->len = data->len;
	pg_atomic_add_fetch_u64(&queue_shared->rows_bytes, SHARED_ROWS_DATA + data->len);
	memcpy((char *) rows + SHARED_ROWS_DATA, data->data, data->len);
	for (int i = 0; i < nlive; i++)
		live[i]->queued = link_batch(live[i], xid, rows_dp, data->len, now, wake);
	release_rows(rows_dp);
}

List *
queue_peek(int64 flow_id)
{
	FlowSlot   *slot;
	dsa_pointer dp;
	List	   *batches = NIL;
	TimestampTz now = GetCurrentTimestamp();

	attach_area();
	slot = registry_lock_slot(flow_id, false);
	if (slot == NULL)
		return NIL;

	/*
	 * Only the worker that claimed the flow unlinks its batches or frees
	 * its slot, and writers only append: the chain from head to this tail
	 * stays as it is.
	 */
	dp = slot->queue.head;
	slot->queue.last_take = now;
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
		/* read in place: freed only once this flow's header is removed */
		batch->data = (char *) dsa_get_address(area, header->rows) + SHARED_ROWS_DATA;
		batches = lappend(batches, batch);
		SpinLockAcquire(&slot->mutex);
		next = (dp == slot->queue.tail) ? InvalidDsaPointer : header->next;
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
	attach_area();
	freed = palloc(sizeof(dsa_pointer) * list_length(batches));
	slot = registry_lock_slot(flow_id, false);
	if (slot == NULL)
	{
		pfree(freed);
		return;
	}
	/* both in seq order: one walk unlinks them */
	dp = slot->queue.head;
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
				slot->queue.head = next;
			if (slot->queue.tail == dp)
				slot->queue.tail = prev;
			slot->stats.queued_batches--;
			slot->stats.queued_bytes -= header->len;
			freed[nfreed++] = dp;
			dp = next;
		}
		lc = lnext(batches, lc);
	}
	slot->queue.oldest_queued_at = DsaPointerIsValid(slot->queue.head) ?
		((BatchHeader *) dsa_get_address(area, slot->queue.head))->queued_at : 0;
	SpinLockRelease(&slot->mutex);
	for (int i = 0; i < nfreed; i++)
	{
		release_rows(((BatchHeader *) dsa_get_address(area, freed[i]))->rows);
		dsa_free(area, freed[i]);
	}
	pfree(freed);
}

static void
free_chain(dsa_pointer dp)
{
	while (DsaPointerIsValid(dp))
	{
		BatchHeader *header = dsa_get_address(area, dp);
		dsa_pointer next = header->next;

		release_rows(header->rows);
		dsa_free(area, dp);
		dp = next;
	}
}

dsa_pointer
queue_forget(int64 flow_id)
{
	dsa_pointer head;
	dsa_pointer state;

	attach_area();
	state = registry_release(MyDatabaseId, flow_id, &head);
	free_chain(head);
	return state;
}

List *
queue_forget_database(Oid dboid)
{
	List	   *states = NIL;
	ListCell   *lc;

	if (!registry_available())
		return NIL;
	attach_area();
	foreach(lc, registry_flows(dboid))
	{
		dsa_pointer head;
		dsa_pointer state = registry_release(dboid, *(int64 *) lfirst(lc), &head);

		free_chain(head);
		if (DsaPointerIsValid(state))
		{
			dsa_pointer *copy = palloc(sizeof(dsa_pointer));

			*copy = state;
			states = lappend(states, copy);
		}
	}
	return states;
}
