/*-------------------------------------------------------------------------
 *
 * shmem.c
 *	  Where flowpg's shared memory is reserved and initialized, and the
 *	  home of the state DSA area.
 *
 * What lives in shared memory, who owns it, and its locks:
 *
 * - the worker pool (pool.c): per database, its workers and the flow
 *   each has claimed.  One spinlock, held for the lookup of a database's
 *   slot and a few assignments (see pool.c).
 * - the flow registry (registry.c): a slot per streaming flow, each with
 *   its own spinlock; the registry LWLock guards taking and freeing slots
 *   (a lookup takes it shared).
 * - the input queues (queue.c): batches in the queue DSA area, created in
 *   place, fixed in size (flowpg.queue_memory); each chain's head is in its
 *   flow's registry slot.
 * - the state area (here): a DSA area created by the first process that
 *   needs it and pinned, so it outlives every worker; it holds each
 *   streaming flow's groups (group_store.c) and round bookkeeping
 *   (stream_state.c).  Nothing in it is locked: a flow's part is touched
 *   only by the worker that claimed the flow, one at a time.  The
 *   StateShared LWLock guards creating the area; the byte counter is
 *   atomic, and so is each database's.  flowpg.state_memory bounds it for
 *   the whole server: above it only databases under their fair share may
 *   grow (shmem_state_admit), flows evict their oldest windows, and a flow
 *   refused memory degrades to the recompute until half of it is free.
 *
 * - what each backend does for a flow now (progress.c): a slot per
 *   backend, with its own spinlock.
 * - why due batching flows wait for a worker (waits.c): a fixed array of
 *   the server's, one spinlock.
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
#include "utils/timestamp.h"

#include "guc.h"
#include "queue.h"
#include "registry.h"
#include "shmem.h"
#include "pool.h"
#include "progress.h"
#include "waits.h"

/* The state one database holds, for its fair share of flowpg.state_memory. */
typedef struct DatabaseState
{
	Oid			dboid;			/* InvalidOid: a free entry */
	pg_atomic_uint64 bytes;
	pg_atomic_uint64 refused_at;	/* last refused an allocation (a TimestampTz) */
} DatabaseState;

/* A database refused memory this recently still counts for the shares. */
#define STATE_WANTING_USECS (10 * USECS_PER_SEC)

#define STATE_DATABASES 256

typedef struct StateShared
{
	LWLock		lock;			/* creating the area, taking a database entry */
	int			tranche;
	dsa_handle	handle;			/* DSM_HANDLE_INVALID until created */
	pg_atomic_uint64 total_bytes;
	DatabaseState databases[STATE_DATABASES];
} StateShared;

static StateShared *state_shared = NULL;
static bool state_refused = false;	/* this process was refused state memory */
static dsa_area *state_area = NULL;
static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

static void
flowpg_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(MAXALIGN(sizeof(StateShared)));
	pool_shmem_request();
	registry_shmem_request();
	queue_shmem_request();
	progress_shmem_request();
	waits_shmem_request();
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
		for (int i = 0; i < STATE_DATABASES; i++)
		{
			state_shared->databases[i].dboid = InvalidOid;
			pg_atomic_init_u64(&state_shared->databases[i].bytes, 0);
			pg_atomic_init_u64(&state_shared->databases[i].refused_at, 0);
		}
	}
	pool_shmem_startup();
	registry_shmem_startup();
	queue_shmem_startup();
	progress_shmem_startup();
	waits_shmem_startup();
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

int
shmem_state_database(Oid dboid)
{
	int			free_entry = -1;

	LWLockAcquire(&state_shared->lock, LW_EXCLUSIVE);
	for (int i = 0; i < STATE_DATABASES; i++)
	{
		if (state_shared->databases[i].dboid == dboid)
		{
			LWLockRelease(&state_shared->lock);
			return i;
		}
		if (free_entry < 0 && (state_shared->databases[i].dboid == InvalidOid ||
							   pg_atomic_read_u64(&state_shared->databases[i].bytes) == 0))
			free_entry = i;
	}
	/* an entry whose database holds nothing is reused */
	if (free_entry >= 0)
	{
		state_shared->databases[free_entry].dboid = dboid;
		pg_atomic_write_u64(&state_shared->databases[free_entry].refused_at, 0);
	}
	LWLockRelease(&state_shared->lock);
	return free_entry;
}

void
shmem_state_charge(int database, int64 delta)
{
	if (delta >= 0)
	{
		pg_atomic_fetch_add_u64(&state_shared->total_bytes, delta);
		if (database >= 0)
			pg_atomic_fetch_add_u64(&state_shared->databases[database].bytes, delta);
	}
	else
	{
		pg_atomic_fetch_sub_u64(&state_shared->total_bytes, -delta);
		if (database >= 0)
			pg_atomic_fetch_sub_u64(&state_shared->databases[database].bytes, -delta);
	}
}

/* state_memory divided among the databases that hold state or want it */
static uint64
fair_share(TimestampTz now)
{
	int			holders = 0;

	for (int i = 0; i < STATE_DATABASES; i++)
	{
		DatabaseState *db = &state_shared->databases[i];

		if (db->dboid != InvalidOid &&
			(pg_atomic_read_u64(&db->bytes) > 0 ||
			 now - (TimestampTz) pg_atomic_read_u64(&db->refused_at) < STATE_WANTING_USECS))
			holders++;
	}
	return (uint64) flowpg_state_memory_kb * 1024 / Max(holders, 1);
}

/*
 * The fair share: within flowpg.state_memory anyone may grow; above it,
 * only a database that holds less than its share (state_memory divided
 * among the databases that hold state or were refused some lately), so one
 * database filling the area leaves every other its share.  Beyond the
 * share the flows that ask degrade to the recompute (stream_round.c)
 * instead of failing.
 */
bool
shmem_state_admit(int database, Size size)
{
	uint64		limit = (uint64) flowpg_state_memory_kb * 1024;
	TimestampTz now;

	if (pg_atomic_read_u64(&state_shared->total_bytes) + size <= limit)
		return true;
	if (database < 0)
	{
		state_refused = true;
		return false;
	}
	now = GetCurrentTimestamp();
	if (pg_atomic_read_u64(&state_shared->databases[database].bytes) + size <= fair_share(now))
		return true;
	pg_atomic_write_u64(&state_shared->databases[database].refused_at, (uint64) now);
	state_refused = true;
	return false;
}

void
shmem_state_note_refusal(void)
{
	state_refused = true;
}

bool
shmem_state_take_refusal(void)
{
	bool		refused = state_refused;

	state_refused = false;
	return refused;
}

bool
shmem_state_has_room(Oid dboid)
{
	int			database;

	if (pg_atomic_read_u64(&state_shared->total_bytes) < (uint64) flowpg_state_memory_kb * 1024 / 2)
		return true;
	database = shmem_state_database(dboid);
	return database >= 0 &&
		pg_atomic_read_u64(&state_shared->databases[database].bytes) <
		fair_share(GetCurrentTimestamp()) / 2;
}

/*
 * Near flowpg.state_memory (within a sixteenth): the largest flow evicts
 * its older windows before admissions are refused -- with one database,
 * shmem_state_admit keeps the total from ever passing the setting.
 */
bool
shmem_state_exceeded(void)
{
	uint64		limit = (uint64) flowpg_state_memory_kb * 1024;

	return pg_atomic_read_u64(&state_shared->total_bytes) > limit - limit / 16;
}

void
shmem_state_usage(Oid dboid, int64 *database_bytes, int64 *server_bytes, int64 *share)
{
	*database_bytes = 0;
	*server_bytes = 0;
	*share = (int64) flowpg_state_memory_kb * 1024;
	if (state_shared == NULL)
		return;
	*server_bytes = (int64) pg_atomic_read_u64(&state_shared->total_bytes);
	*share = (int64) fair_share(GetCurrentTimestamp());
	for (int i = 0; i < STATE_DATABASES; i++)
		if (state_shared->databases[i].dboid == dboid)
			*database_bytes = (int64) pg_atomic_read_u64(&state_shared->databases[i].bytes);
}
