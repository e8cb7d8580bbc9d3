/*-------------------------------------------------------------------------
 *
 * shmem.c
 *	  Where flowpg's shared memory is reserved and initialized, and the
 *	  home of the state DSA area.
 *
 * What lives in shared memory, who owns it, and its locks:
 *
 * - the worker pool (worker.c): per database, its workers and the flow
 *   each has claimed.  One spinlock, held for a few assignments only.
 * - the flow registry and input queues (queue.c): a slot per streaming
 *   flow, each with its own spinlock; the registry LWLock guards taking and
 *   freeing slots.  Batches are in the queue DSA area, created in place,
 *   fixed in size (flowpg.queue_memory).
 * - the state area (here): a DSA area created by the first process that
 *   needs it and pinned, so it outlives every worker; it holds each
 *   streaming flow's groups (group_store.c) and round bookkeeping
 *   (stream_state.c).  Nothing in it is locked: a flow's part is touched
 *   only by the worker that claimed the flow, one at a time.  The
 *   StateShared LWLock guards creating the area; the byte counter is
 *   atomic.  flowpg.state_memory bounds it for the whole server: flows
 *   evict their oldest windows above it, and allocation fails (the round
 *   fails, and what it touched is recomputed) at twice that.
 *
 * No LWLock or spinlock is held across SPI, a user's function or a wait.
 * A server crash reinitializes all of it; flows then refill from the
 * source.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/memutils.h"

#include "guc.h"
#include "queue.h"
#include "shmem.h"
#include "pool.h"

typedef struct StateShared
{
	LWLock		lock;			/* creating the area */
	int			tranche;
	dsa_handle	handle;			/* DSM_HANDLE_INVALID until created */
	pg_atomic_uint64 total_bytes;
} StateShared;

static StateShared *state_shared = NULL;
static dsa_area *state_area = NULL;
static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

static void
flowpg_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(MAXALIGN(sizeof(StateShared)));
	worker_shmem_request();
	queue_shmem_request();
}

static void
flowpg_shmem_startup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	state_shared = ShmemInitStruct("flowpg state", sizeof(StateShared), &found);
	if (!found)
	{
		state_shared->tranche = LWLockNewTrancheId();
		LWLockInitialize(&state_shared->lock, state_shared->tranche);
		state_shared->handle = DSM_HANDLE_INVALID;
		pg_atomic_init_u64(&state_shared->total_bytes, 0);
	}
	worker_shmem_startup();
	queue_shmem_startup();
	LWLockRelease(AddinShmemInitLock);
}

void
shmem_install_hooks(void)
{
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = flowpg_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = flowpg_shmem_startup;
}

dsa_area *
shmem_state_area(void)
{
	MemoryContext old;

	if (state_area != NULL)
		return state_area;
	if (state_shared == NULL)
		elog(ERROR, "flowpg's shared memory is not initialized");
	LWLockRegisterTranche(state_shared->tranche, "flowpg_state");
	old = MemoryContextSwitchTo(TopMemoryContext);
	LWLockAcquire(&state_shared->lock, LW_EXCLUSIVE);
	if (state_shared->handle == DSM_HANDLE_INVALID)
	{
		state_area = dsa_create(state_shared->tranche);
		dsa_set_size_limit(state_area, (Size) flowpg_state_memory_kb * 1024 * 2);
		dsa_pin(state_area);
		state_shared->handle = dsa_get_handle(state_area);
	}
	else
		state_area = dsa_attach(state_shared->handle);
	LWLockRelease(&state_shared->lock);
	dsa_pin_mapping(state_area);
	MemoryContextSwitchTo(old);
	return state_area;
}

pg_atomic_uint64 *
shmem_state_total(void)
{
	return &state_shared->total_bytes;
}

bool
shmem_state_exceeded(void)
{
	return pg_atomic_read_u64(&state_shared->total_bytes) >
		(uint64) flowpg_state_memory_kb * 1024;
}
