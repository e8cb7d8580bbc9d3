/*-------------------------------------------------------------------------
 *
 * state_memory.c
 *	  The state DSA area of streaming flows, and each database's fair
 *	  share of flowpg.state_memory.
 *
 * The state area: a DSA area created by the first process that needs it
 * and pinned, so it outlives every worker; it holds each streaming flow's
 * groups (group_store.c) and round bookkeeping (stream_state.c).
 *
 * Locks: nothing in the area is locked: a flow's part is touched only by
 * the worker that claimed the flow, one at a time.  The StateShared LWLock
 * guards creating the area and taking a database's entry; the byte counter
 * is atomic, and so is each database's.  flowpg.state_memory bounds it for
 * the whole server: above it only databases under their fair share may
 * grow (state_memory_admit), flows evict their oldest windows, and a flow
 * refused memory degrades to the recompute until half of it is free.
 * No lock is held across SPI, a user's function or a wait.
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
#include "state_memory.h"

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
void
state_memory_shmem_request(void)
{
	RequestAddinShmemSpace(MAXALIGN(sizeof(StateShared)));
}

void
state_memory_shmem_startup(void)
{
	bool		found;

	state_shared = ShmemInitStruct("flowpg state", sizeof(StateShared), &found);
	if (found)
		return;
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

dsa_area *
state_memory_area(void)
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
state_memory_database(Oid dboid)
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
state_memory_charge(int database, int64 delta)
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
state_memory_admit(int database, Size size)
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
state_memory_note_refusal(void)
{
	state_refused = true;
}

bool
state_memory_take_refusal(void)
{
	bool		refused = state_refused;

	state_refused = false;
	return refused;
}

bool
state_memory_has_room(Oid dboid)
{
	int			database;

	if (pg_atomic_read_u64(&state_shared->total_bytes) < (uint64) flowpg_state_memory_kb * 1024 / 2)
		return true;
	database = state_memory_database(dboid);
	return database >= 0 &&
		pg_atomic_read_u64(&state_shared->databases[database].bytes) <
		fair_share(GetCurrentTimestamp()) / 2;
}

/*
 * Near flowpg.state_memory (within a sixteenth): the largest flow evicts
 * its older windows before admissions are refused -- with one database,
 * state_memory_admit keeps the total from ever passing the setting.
 */
bool
state_memory_exceeded(void)
{
	uint64		limit = (uint64) flowpg_state_memory_kb * 1024;

	return pg_atomic_read_u64(&state_shared->total_bytes) > limit - limit / 16;
}

void
state_memory_usage(Oid dboid, int64 *database_bytes, int64 *server_bytes, int64 *share)
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
