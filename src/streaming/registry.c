/*-------------------------------------------------------------------------
 *
 * registry.c
 *	  The registry of streaming flows in shared memory (see registry.h):
 *	  taking and freeing a flow's slot, its flags, its published counters,
 *	  its state pointer and the flush handshake.
 *
 * The registry has four times flowpg.max_flows slots (that setting counts
 * per database), one per streaming flow: taken when the flow is created
 * (registry_reserve, which refuses the flow when none is free or its owner
 * holds its share, flowpg.max_streaming_flows_per_role, in all databases),
 * and after a restart by the database's worker (registry_claim) or a
 * writer.  A creation's slot carries its xid until the worker sees the
 * flow committed: the worker's sync frees slots of flows not in the
 * catalog, but not those whose creating transaction is still open.
 *
 * Locking: the registry LWLock guards taking and freeing slots.  A lookup
 * takes it shared, so committing writers of different flows (or of one)
 * do not serialize on it; only a writer whose flow has no slot yet takes
 * it exclusively, and looks again before taking one.  A slot's spinlock
 * guards its fields, held for a few assignments, never two at once:
 * registry_any_flush_requested takes each slot's in turn, and
 * registry_request_evict_largest reads the slots' byte counts without it
 * (a stale count only picks another flow to give windows up) and locks the
 * one it picks.
 *
 * A slot found can be freed and taken by another flow before its spinlock
 * is taken: whatever changes a slot checks, under the spinlock, that it is
 * still the flow's (registry_slot_is).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "miscadmin.h"
#include "storage/procarray.h"
#include "storage/condition_variable.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "dirty_log.h"
#include "guc.h"
#include "pool.h"
#include "registry.h"

typedef struct RegistryShared
{
	LWLock		lock;			/* taking and freeing slots */
	int			tranche;
	ConditionVariable flushed;	/* a flush request completed, or a slot was freed */
	int			nslots;
	FlowSlot	slots[FLEXIBLE_ARRAY_MEMBER];
} RegistryShared;

static RegistryShared *registry = NULL;

/* flowpg.max_flows counts per database: room for several databases' flows */
#define REGISTRY_SLOTS (flowpg_max_flows * 4)

static Size
registry_size(void)
{
	return add_size(offsetof(RegistryShared, slots),
					mul_size(sizeof(FlowSlot), REGISTRY_SLOTS));
}

void
registry_shmem_request(void)
{
	RequestAddinShmemSpace(MAXALIGN(registry_size()));
}

/* Called in the postmaster with AddinShmemInitLock held. */
void
registry_shmem_startup(void)
{
	bool		found;

	registry = ShmemInitStruct("flowpg registry", registry_size(), &found);
	if (!found)
	{
		memset(registry, 0, registry_size());
		registry->tranche = LWLockNewTrancheId();
		LWLockInitialize(&registry->lock, registry->tranche);
		ConditionVariableInit(&registry->flushed);
		registry->nslots = REGISTRY_SLOTS;
		for (int i = 0; i < registry->nslots; i++)
			SpinLockInit(&registry->slots[i].mutex);
	}
	/* here, so that every process forked from the postmaster has the name */
	LWLockRegisterTranche(registry->tranche, "flowpg_registry");
}

bool
registry_available(void)
{
	return registry != NULL;
}

static FlowSlot *
lookup(int64 flow_id)
{
	for (int i = 0; i < registry->nslots; i++)
	{
		FlowSlot   *slot = &registry->slots[i];

		if (slot->in_use && slot->flow_id == flow_id && slot->dboid == MyDatabaseId)
			return slot;
	}
	return NULL;
}

static void
take_slot(FlowSlot *slot, int64 flow_id)
{
	TimestampTz now = GetCurrentTimestamp();

	SpinLockAcquire(&slot->mutex);
	slot->in_use = true;
	slot->dboid = MyDatabaseId;
	slot->flow_id = flow_id;
	slot->owner = InvalidOid;
	slot->reserved_by = InvalidTransactionId;
	slot->queue.head = slot->queue.tail = InvalidDsaPointer;
	slot->queue.last_seq = 0;
	slot->queue.oldest_queued_at = 0;
	slot->queue.last_take = now;
	slot->queue.behind_until = 0;
	slot->flush_requests = slot->flushes_done = slot->flushes_failed = 0;
	slot->flush_waiters = 0;
	slot->dirty = false;
	slot->reset = false;
	slot->evict = false;
	slot->paused = false;
	slot->flow_state = InvalidDsaPointer;
	memset(&slot->stats, 0, sizeof(StreamStats));
	slot->stats.freshness_us = -1;
	SpinLockRelease(&slot->mutex);
}

FlowSlot *
registry_find(int64 flow_id, bool create)
{
	FlowSlot   *found;

	if (registry == NULL)
		elog(ERROR, "flowpg's shared memory is not initialized");
	LWLockAcquire(&registry->lock, LW_SHARED);
	found = lookup(flow_id);
	LWLockRelease(&registry->lock);
	if (found != NULL || !create)
		return found;

	/* another writer of the flow may have taken one meanwhile: look again */
	LWLockAcquire(&registry->lock, LW_EXCLUSIVE);
	found = lookup(flow_id);
	for (int i = 0; found == NULL && i < registry->nslots; i++)
		if (!registry->slots[i].in_use)
		{
			found = &registry->slots[i];
			take_slot(found, flow_id);
		}
	LWLockRelease(&registry->lock);
	return found;
}

typedef enum ReserveOutcome
{
	RESERVED,
	NONE_FREE,
	ROLE_FULL
} ReserveOutcome;

bool
registry_reserve(int64 flow_id, Oid owner, bool missing_ok)
{
	int			limit = flowpg_max_streaming_flows_per_role > 0 ?
		flowpg_max_streaming_flows_per_role : flowpg_max_flows;
	FlowSlot   *found;
	FlowSlot   *free_slot = NULL;
	ReserveOutcome outcome = RESERVED;
	int			held = 0;
	TransactionId xid;

	if (registry == NULL)
		return false;			/* not preloaded: create_flow warns of it */
	if (superuser_arg(owner))
		limit = 0;
	xid = GetTopTransactionId();	/* not under the lock: it may assign one */
	LWLockAcquire(&registry->lock, LW_EXCLUSIVE);
	found = lookup(flow_id);
	for (int i = 0; i < registry->nslots; i++)
	{
		FlowSlot   *slot = &registry->slots[i];

		if (!slot->in_use)
			free_slot = free_slot ? free_slot : slot;
		else if (slot != found && slot->owner == owner)
			held++;
	}
	if (limit > 0 && held >= limit)
		outcome = ROLE_FULL;
	else if (found == NULL && free_slot == NULL)
		outcome = NONE_FREE;
	else
	{
		if (found == NULL)
		{
			found = free_slot;
			take_slot(found, flow_id);
		}
		SpinLockAcquire(&found->mutex);
		found->owner = owner;
		found->reserved_by = xid;
		SpinLockRelease(&found->mutex);
	}
	LWLockRelease(&registry->lock);

	if (outcome != RESERVED && missing_ok)
		return false;
	if (outcome == NONE_FREE)
		ereport(ERROR,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("no room for another streaming flow in this server"),
				 errdetail("The %d slots for streaming flows (4 * flowpg.max_flows) are shared by every database, and all are taken.",
						   registry->nslots),
				 errhint("Create the flow with mode => 'batching', drop a streaming flow, or raise flowpg.max_flows and restart the server.")));
	if (outcome == ROLE_FULL)
		ereport(ERROR,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("too many streaming flows for role %s", GetUserNameFromId(owner, false)),
				 errdetail("Role %s owns %d streaming flows in the databases of this server; flowpg.max_streaming_flows_per_role allows %d.",
						   GetUserNameFromId(owner, false), held, limit),
				 errhint("Create the flow with mode => 'batching', drop one of the role's streaming flows, or ask an administrator to raise flowpg.max_streaming_flows_per_role.")));
	return true;
}

bool
registry_claim(int64 flow_id, Oid owner)
{
	FlowSlot   *slot = registry_lock_slot(flow_id, true);

	if (slot == NULL)
		return false;
	slot->owner = owner;
	slot->reserved_by = InvalidTransactionId;	/* committed: the catalog shows it */
	SpinLockRelease(&slot->mutex);
	return true;
}

/* The caller holds the slot's spinlock. */
bool
registry_slot_is(FlowSlot *slot, Oid dboid, int64 flow_id)
{
	return slot->in_use && slot->flow_id == flow_id && slot->dboid == dboid;
}

FlowSlot *
registry_lock_slot(int64 flow_id, bool create)
{
	FlowSlot   *slot = registry_find(flow_id, create);

	if (slot == NULL)
		return NULL;
	SpinLockAcquire(&slot->mutex);
	if (!registry_slot_is(slot, MyDatabaseId, flow_id))
	{
		SpinLockRelease(&slot->mutex);
		return NULL;			/* freed meanwhile: the flow was dropped */
	}
	return slot;
}

dsa_pointer
registry_release(Oid dboid, int64 flow_id, dsa_pointer *queue_head)
{
	dsa_pointer state = InvalidDsaPointer;

	*queue_head = InvalidDsaPointer;
	LWLockAcquire(&registry->lock, LW_EXCLUSIVE);
	for (int i = 0; i < registry->nslots; i++)
	{
		FlowSlot   *slot = &registry->slots[i];

		SpinLockAcquire(&slot->mutex);
		if (registry_slot_is(slot, dboid, flow_id))
		{
			*queue_head = slot->queue.head;
			state = slot->flow_state;
			slot->in_use = false;
			slot->flow_id = 0;
			slot->queue.head = slot->queue.tail = InvalidDsaPointer;
			slot->queue.oldest_queued_at = 0;
			slot->stats.queued_batches = slot->stats.queued_bytes = 0;
			slot->flow_state = InvalidDsaPointer;
			SpinLockRelease(&slot->mutex);
			break;
		}
		SpinLockRelease(&slot->mutex);
	}
	LWLockRelease(&registry->lock);
	/* a flush_flow waiting for the flow: it was dropped */
	ConditionVariableBroadcast(&registry->flushed);
	return state;
}

List *
registry_flows(Oid dboid)
{
	List	   *flows = NIL;
	List	   *reservers = NIL;
	ListCell   *lc;
	ListCell   *lx;
	List	   *settled = NIL;

	if (registry == NULL)
		return NIL;
	LWLockAcquire(&registry->lock, LW_SHARED);
	for (int i = 0; i < registry->nslots; i++)
	{
		FlowSlot   *slot = &registry->slots[i];

		if (slot->in_use && slot->dboid == dboid)
		{
			int64	   *id = palloc(sizeof(int64));

			*id = slot->flow_id;
			flows = lappend(flows, id);
			reservers = lappend_oid(reservers, (Oid) slot->reserved_by);	/* an xid: 32 bits, as an Oid */
		}
	}
	LWLockRelease(&registry->lock);
	/* a flow whose creating transaction is still open is not in the catalog yet */
	forboth(lc, flows, lx, reservers)
		if (!TransactionIdIsValid((TransactionId) lfirst_oid(lx)) ||
			!TransactionIdIsInProgress((TransactionId) lfirst_oid(lx)))
			settled = lappend(settled, lfirst(lc));
	return settled;
}

/*
 * The slot's flags (dirty, reset, evict, paused): set one, for a slot
 * taken when create; or read and clear one.
 */
#define SLOT_FLAG(slot, offset) (*(bool *) ((char *) (slot) + (offset)))

static bool
set_flag(int64 flow_id, size_t offset, bool value, bool create)
{
	FlowSlot   *slot = registry_lock_slot(flow_id, create);

	if (slot == NULL)
		return false;
	SLOT_FLAG(slot, offset) = value;
	SpinLockRelease(&slot->mutex);
	return true;
}

static bool
take_flag(int64 flow_id, size_t offset)
{
	FlowSlot   *slot = registry_lock_slot(flow_id, false);
	bool		value;

	if (slot == NULL)
		return false;
	value = SLOT_FLAG(slot, offset);
	SLOT_FLAG(slot, offset) = false;
	SpinLockRelease(&slot->mutex);
	return value;
}

static FlushOutcome wait_for_flush(FlowSlot *slot, int64 flow_id, int64 target,
									TimestampTz started, int64 *rows_written);

QueueWant
registry_round_wanted(int64 flow_id)
{
	TimestampTz now = GetCurrentTimestamp();
	FlowSlot   *slot = registry_lock_slot(flow_id, false);
	QueueWant	want = QUEUE_WANT_NONE;

	if (slot == NULL)
		return QUEUE_WANT_NONE;
	/* behind, the recompute of fallbacks waits for its interval (stream_round.c) */
	if ((slot->dirty && slot->queue.behind_until <= now) || slot->reset || slot->evict ||
		(slot->flush_waiters > 0 && slot->flush_requests > slot->flushes_done) ||
		slot->stats.queued_bytes >= QUEUE_HURRY_BYTES)
		want = QUEUE_WANT_NOW;
	else if (DsaPointerIsValid(slot->queue.head) || slot->dirty)
		want = QUEUE_WANT_BATCHES;
	SpinLockRelease(&slot->mutex);
	return want;
}

dsa_pointer
registry_get_flow_state(int64 flow_id)
{
	FlowSlot   *slot = registry_lock_slot(flow_id, false);
	dsa_pointer dp;

	if (slot == NULL)
		return InvalidDsaPointer;
	dp = slot->flow_state;
	SpinLockRelease(&slot->mutex);
	return dp;
}

bool
registry_set_flow_state(int64 flow_id, dsa_pointer dp)
{
	FlowSlot   *slot = registry_lock_slot(flow_id, true);

	if (slot == NULL)
		return false;
	slot->flow_state = dp;
	SpinLockRelease(&slot->mutex);
	return true;
}

void
registry_request_evict_largest(void)
{
	FlowSlot   *largest = NULL;

	for (int i = 0; i < registry->nslots; i++)
	{
		FlowSlot   *slot = &registry->slots[i];

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
registry_take_evict(int64 flow_id)
{
	return take_flag(flow_id, offsetof(FlowSlot, evict));
}

void
registry_publish(int64 flow_id, StreamStats *stats, int64 flushes_done, bool failed)
{
	FlowSlot   *slot = registry_lock_slot(flow_id, true);

	if (slot == NULL)
		return;
	slot->stats.state_groups = stats->state_groups;
	slot->stats.state_bytes = stats->state_bytes;
	slot->stats.batches_applied = stats->batches_applied;
	slot->stats.batches_dropped = stats->batches_dropped;
	slot->stats.freshness_us = stats->freshness_us;
	slot->stats.last_flush_at = stats->last_flush_at;
	slot->stats.status = stats->status;
	slot->stats.round_rows = stats->round_rows;
	slot->stats.oldest_unwritten = stats->oldest_unwritten;
	slot->stats.refills = stats->refills;
	slot->stats.repairs = stats->repairs;
	slot->stats.unrecorded_runs = stats->unrecorded_runs;
	slot->stats.unrecorded_rows_in = stats->unrecorded_rows_in;
	slot->stats.unrecorded_rows_out = stats->unrecorded_rows_out;
	slot->stats.last_round_at = stats->last_round_at;
	slot->stats.last_round_us = stats->last_round_us;
	slot->stats.retry_at = stats->retry_at;
	slot->stats.degraded = stats->degraded;
	slot->stats.degraded_whole = stats->degraded_whole;
	slot->stats.state_from = stats->state_from;
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
		ConditionVariableBroadcast(&registry->flushed);
}

void
registry_count_fallback(int64 flow_id, int64 n)
{
	FlowSlot   *slot = registry_lock_slot(flow_id, true);

	if (slot == NULL)
		return;
	slot->stats.fallbacks += n;
	SpinLockRelease(&slot->mutex);
}

bool
registry_get_stats(int64 flow_id, StreamStats *stats)
{
	FlowSlot   *slot;

	if (registry == NULL)
		return false;			/* not preloaded */
	slot = registry_lock_slot(flow_id, false);
	if (slot == NULL)
		return false;
	*stats = slot->stats;
	stats->oldest_queued_at = slot->queue.oldest_queued_at;
	SpinLockRelease(&slot->mutex);
	return true;
}

FlushOutcome
registry_flush_and_wait(int64 flow_id, int64 *rows_written)
{
	FlowSlot   *slot = registry_find(flow_id, true);
	int64		target;
	volatile FlushOutcome outcome = FLUSH_NO_WORKER;
	TimestampTz started = GetCurrentTimestamp();

	*rows_written = 0;
	if (slot == NULL || !pool_running(MyDatabaseId))
		return FLUSH_NO_WORKER;
	SpinLockAcquire(&slot->mutex);
	if (!registry_slot_is(slot, MyDatabaseId, flow_id))
	{
		SpinLockRelease(&slot->mutex);
		return FLUSH_DONE;		/* the flow was dropped meanwhile */
	}
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
		if (registry_slot_is(slot, MyDatabaseId, flow_id) && slot->flush_waiters > 0)
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

	ConditionVariablePrepareToSleep(&registry->flushed);
	for (int round = 1;; round++)
	{
		SpinLockAcquire(&slot->mutex);
		if (!registry_slot_is(slot, MyDatabaseId, flow_id))
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
		(void) ConditionVariableTimedSleep(&registry->flushed, 100, PG_WAIT_EXTENSION);
	}
	ConditionVariableCancelSleep();
	MemoryContextDelete(polling);
	return outcome;
}

int64
registry_flush_requested(int64 flow_id)
{
	FlowSlot   *slot = registry_lock_slot(flow_id, false);
	int64		requested = 0;

	if (slot == NULL)
		return 0;
	if (slot->flush_waiters > 0 && slot->flush_requests > slot->flushes_done)
		requested = slot->flush_requests;
	SpinLockRelease(&slot->mutex);
	return requested;
}

bool
registry_note_dirty(int64 flow_id)
{
	/* flows without a slot (batching ones) are found by their schedule */
	return registry != NULL && set_flag(flow_id, offsetof(FlowSlot, dirty), true, false);
}

void
registry_install_hooks(void)
{
	dirty_log_commit_hook = registry_note_dirty;
}

bool
registry_worker_behind(int64 flow_id)
{
	FlowSlot   *slot;
	TimestampTz now = GetCurrentTimestamp();
	bool		behind;

	if (registry == NULL)
		return false;
	slot = registry_lock_slot(flow_id, false);
	if (slot == NULL)
		return false;
	behind = slot->queue.behind_until > now;
	SpinLockRelease(&slot->mutex);
	return behind;
}

bool
registry_take_dirty(int64 flow_id)
{
	return take_flag(flow_id, offsetof(FlowSlot, dirty));
}

bool
registry_any_flush_requested(void)
{
	bool		requested = false;

	if (registry == NULL)
		return false;
	for (int i = 0; i < registry->nslots && !requested; i++)
	{
		FlowSlot   *slot = &registry->slots[i];

		SpinLockAcquire(&slot->mutex);
		requested = slot->in_use && slot->dboid == MyDatabaseId &&
			slot->flush_waiters > 0 && slot->flush_requests > slot->flushes_done;
		SpinLockRelease(&slot->mutex);
	}
	return requested;
}

void
registry_request_reset(int64 flow_id)
{
	set_flag(flow_id, offsetof(FlowSlot, reset), true, true);
}

void
registry_set_paused(int64 flow_id, bool paused)
{
	/* a flow with no slot has nothing queued: only a pause needs one */
	set_flag(flow_id, offsetof(FlowSlot, paused), paused, paused);
}

bool
registry_take_reset(int64 flow_id)
{
	return take_flag(flow_id, offsetof(FlowSlot, reset));
}

