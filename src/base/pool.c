/*-------------------------------------------------------------------------
 *
 * pool.c
 *	  The pool of flowpg workers of each database, in shared memory: who
 *	  runs, which flow each runs (claims), waking one, growing and shrinking.
 *
 * Locking: one spinlock (FlowpgShared.mutex) guards all of it.  It is held
 * for the lookup of a database's slot -- a scan of the databases that have
 * used flowpg since the server started (shared->nslots, usually a few; up
 * to MAX_DATABASES, and when all are taken a second scan for the one to
 * give up) -- then scans of that database's POOL_MAX workers (once per
 * candidate in pool_claim_fair) and a few assignments: never across a call
 * that could wait or fail (latches are set after it is released).  A worker's claim is set and cleared by
 * the worker itself; others read it.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "commands/dbcommands.h"
#include "commands/defrem.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "tcop/utility.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/timeout.h"
#include "utils/timestamp.h"

#include "guc.h"
#include "pool.h"

#define MAX_DATABASES 256
#define IDLE_REPROBE_USECS (300 * USECS_PER_SEC)

/* One worker of a database's pool. */
typedef struct PoolWorker
{
	pid_t		pid;			/* 0: a free place */
	Latch	   *latch;
	int64		claimed;		/* the flow it runs now, 0 none */
	bool		batching;		/* the claim is a batching run */
	Oid			owner;			/* the claimed batching flow's owner */
	TimestampTz claimed_at;
} PoolWorker;

typedef struct DatabaseSlot
{
	Oid			dboid;
	bool		wanted;			/* create_flow asked for a worker */
	bool		grow;			/* work waits for a busy pool: it may grow */
	bool		shrink;			/* another database needs a slot: an idle worker leaves */
	TimestampTz idle_since;		/* its workers left: no flowpg or no flows */
	TimestampTz paused_until;	/* DROP/ALTER DATABASE needs it gone */
	TimestampTz no_worker_since;	/* its worker could not be started */
	/* pending flows: a start may succeed now; passes of starts by its workers */
	bool		pending_check;
	uint64		pending_passes_begun;
	uint64		pending_passes_done;
	uint64		roles_epoch_seen;	/* its flows were rechecked for it */
	Oid			last_batching_owner;	/* the fair share's tie-break */
	bool		outdated;		/* its flowpg objects wait for ALTER EXTENSION UPDATE */
	/* a change of a batching flow wakes a worker only from then on (worker.c) */
	TimestampTz batching_due_from;
	uint64		schedule_changes;	/* flows created or resumed (send_request) */
	PoolWorker	pool[POOL_MAX];
} DatabaseSlot;

typedef struct FlowpgShared
{
	slock_t		mutex;
	Latch	   *launcher_latch;
	TimestampTz start_failed_at;	/* the launcher's last failed start, any database */
	TimestampTz started_at;		/* and its last successful one */
	uint64		roles_epoch;	/* committed changes of roles (visibility.c) */
	int			nslots;
	DatabaseSlot slots[MAX_DATABASES];
} FlowpgShared;

static FlowpgShared *shared = NULL;
static DatabaseSlot *database_slot(Oid dboid, bool create);
static int	pool_alive(DatabaseSlot *slot);
static PoolWorker *my_place = NULL; /* this worker's place in its pool */
static DatabaseSlot *my_slot = NULL;

#define DATABASE_DDL_PAUSE_USECS (30 * USECS_PER_SEC)

/*
 * DROP DATABASE, ALTER DATABASE ... RENAME and CREATE DATABASE ... TEMPLATE
 * refuse to run while another session is connected to the database: the
 * workers step aside (and stay away for a while) so that they work.
 */
static void
pause_worker_of(const char *dbname)
{
	Oid			dboid = get_database_oid(dbname, true);
	DatabaseSlot *slot;
	pid_t		pids[POOL_MAX];
	int			npids = 0;
	TimestampTz until = GetCurrentTimestamp() + DATABASE_DDL_PAUSE_USECS;

	if (!OidIsValid(dboid) || shared == NULL)
		return;
	SpinLockAcquire(&shared->mutex);
	slot = database_slot(dboid, false);
	if (slot)
	{
		slot->paused_until = until;
		for (int i = 0; i < POOL_MAX; i++)
			if (slot->pool[i].pid != 0)
				pids[npids++] = slot->pool[i].pid;
	}
	SpinLockRelease(&shared->mutex);
	for (int p = 0; p < npids; p++)
		(void) kill(pids[p], SIGTERM);
	/* wait (at most 5 s) until they are gone */
	for (int i = 0; i < 500 && npids > 0; i++)
	{
		bool		gone = true;

		for (int p = 0; p < npids; p++)
			if (kill(pids[p], 0) == 0)
				gone = false;
		if (gone)
			break;
		pg_usleep(10000L);
		CHECK_FOR_INTERRUPTS();
	}
}

void
pool_before_utility(Node *stmt)
{
	if (IsA(stmt, DropdbStmt))
		pause_worker_of(((DropdbStmt *) stmt)->dbname);
	else if (IsA(stmt, RenameStmt) && ((RenameStmt *) stmt)->renameType == OBJECT_DATABASE)
		pause_worker_of(((RenameStmt *) stmt)->subname);
	else if (IsA(stmt, CreatedbStmt))
	{
		ListCell   *lc;

		foreach(lc, ((CreatedbStmt *) stmt)->options)
		{
			DefElem    *opt = lfirst_node(DefElem, lc);

			if (strcmp(opt->defname, "template") == 0 && opt->arg)
				pause_worker_of(defGetString(opt));
		}
	}
}

void
pool_shmem_request(void)
{
	RequestAddinShmemSpace(MAXALIGN(sizeof(FlowpgShared)));
}

/* Called in the postmaster with AddinShmemInitLock held. */
void
pool_shmem_startup(void)
{
	bool		found;

	shared = ShmemInitStruct("flowpg", sizeof(FlowpgShared), &found);
	if (!found)
	{
		memset(shared, 0, sizeof(FlowpgShared));
		SpinLockInit(&shared->mutex);
	}
}


/* The slot of a database; the caller holds the mutex. */
static DatabaseSlot *
database_slot(Oid dboid, bool create)
{
	DatabaseSlot *slot;

	for (int i = 0; i < shared->nslots; i++)
		if (shared->slots[i].dboid == dboid)
			return &shared->slots[i];
	if (!create)
		return NULL;
	for (int i = 0; i < shared->nslots; i++)
		if (shared->slots[i].dboid == InvalidOid)
		{
			slot = &shared->slots[i];
			memset(slot, 0, sizeof(DatabaseSlot));
			slot->dboid = dboid;
			return slot;
		}
	if (shared->nslots < MAX_DATABASES)
		slot = &shared->slots[shared->nslots++];
	else
	{
		/*
		 * Full (databases dropped without this server's hook seeing it, or
		 * more databases than slots): the slot idle the longest, with no
		 * worker and none wanted, is given up; its database, if it still
		 * exists, gets a new one when it asks again.  (The only read of
		 * the clock under the spinlock: once, and only in this rare case.)
		 */
		TimestampTz now = GetCurrentTimestamp();

		slot = NULL;
		for (int i = 0; i < shared->nslots; i++)
		{
			DatabaseSlot *s = &shared->slots[i];

			if (pool_alive(s) == 0 && !s->wanted && s->idle_since != 0 &&
				s->paused_until <= now &&
				(slot == NULL || s->idle_since < slot->idle_since))
				slot = s;
		}
		if (slot == NULL)
			return NULL;
	}
	memset(slot, 0, sizeof(DatabaseSlot));
	slot->dboid = dboid;
	return slot;
}

/* The worker: its database's flowpg objects are older than this library, or no longer. */
void
pool_set_outdated(bool outdated)
{
	if (my_slot)
		my_slot->outdated = outdated;
}

/*
 * Writers: should their partials skip the queue (the worker waits for the
 * update and drains nothing)?  Read without the lock: a stale answer only
 * queues a batch that the worker applies after the update.
 */
bool
pool_database_outdated(Oid dboid)
{
	if (shared == NULL)
		return false;
	for (int i = 0; i < shared->nslots; i++)
		if (shared->slots[i].dboid == dboid)
			return shared->slots[i].outdated;
	return false;
}

/* DROP DATABASE succeeded: its slot is free (its workers left before it). */
void
pool_forget_database(Oid dboid)
{
	DatabaseSlot *slot;

	if (shared == NULL)
		return;
	SpinLockAcquire(&shared->mutex);
	slot = database_slot(dboid, false);
	if (slot && pool_alive(slot) == 0)
		memset(slot, 0, sizeof(DatabaseSlot));	/* dboid invalid: a free slot */
	SpinLockRelease(&shared->mutex);
}

static int
pool_alive(DatabaseSlot *slot)
{
	int			n = 0;

	for (int i = 0; i < POOL_MAX; i++)
		n += slot->pool[i].pid != 0;
	return n;
}

static bool request_at_commit = false;
static bool pending_check_at_commit = false;
static bool roles_changed_at_commit = false;
static bool xact_callback_registered = false;

static void send_request(Oid dboid);

/*
 * A worker started before the flow commits would find no flow and leave:
 * the request goes out when the transaction commits.
 */
static void
request_xact_callback(XactEvent event, void *arg)
{
	if (roles_changed_at_commit && event == XACT_EVENT_COMMIT && shared != NULL)
	{
		SpinLockAcquire(&shared->mutex);
		shared->roles_epoch++;
		SpinLockRelease(&shared->mutex);
	}
	/* (a prepared transaction's are not carried to its COMMIT PREPARED) */
	if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT ||
		event == XACT_EVENT_PARALLEL_COMMIT || event == XACT_EVENT_PARALLEL_ABORT ||
		event == XACT_EVENT_PREPARE)
		roles_changed_at_commit = false;
	if (!request_at_commit)
		return;
	if (event == XACT_EVENT_COMMIT)
	{
		if (pending_check_at_commit)
			(void) pool_check_pending_now();
		send_request(MyDatabaseId);
	}
	if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT ||
		event == XACT_EVENT_PARALLEL_COMMIT || event == XACT_EVENT_PARALLEL_ABORT ||
		event == XACT_EVENT_PREPARE)
		request_at_commit = pending_check_at_commit = false;
}

/* From _PG_init, as the dirty log's (dirty_log_register_callbacks); and on first use. */
void
pool_register_callbacks(void)
{
	if (xact_callback_registered)
		return;
	RegisterXactCallback(request_xact_callback, NULL);
	xact_callback_registered = true;
}

void
pool_request(Oid dboid)
{
	Assert(dboid == MyDatabaseId);
	pool_register_callbacks();
	request_at_commit = true;
}

void
pool_note_roles_changed_at_commit(void)
{
	pool_register_callbacks();
	roles_changed_at_commit = true;
}

uint64
pool_roles_epoch(uint64 *seen)
{
	uint64		epoch;

	if (shared == NULL)
		return 0;
	SpinLockAcquire(&shared->mutex);
	epoch = shared->roles_epoch;
	if (seen)
		*seen = my_slot ? my_slot->roles_epoch_seen : epoch;
	SpinLockRelease(&shared->mutex);
	return epoch;
}

void
pool_set_roles_epoch_seen(uint64 epoch)
{
	SpinLockAcquire(&shared->mutex);
	if (my_slot && my_slot->roles_epoch_seen < epoch)
		my_slot->roles_epoch_seen = epoch;
	SpinLockRelease(&shared->mutex);
}

void
pool_check_pending_at_commit(void)
{
	pool_request(MyDatabaseId);
	pending_check_at_commit = true;
}

uint64
pool_check_pending_now(void)
{
	DatabaseSlot *slot;
	uint64		pass = 0;

	if (shared == NULL)
		return 0;
	SpinLockAcquire(&shared->mutex);
	slot = database_slot(MyDatabaseId, true);
	if (slot)
	{
		slot->pending_check = true;
		slot->wanted = true;
		/* a pass in progress may have read the pending flows already: the next one */
		pass = slot->pending_passes_begun + 1;
	}
	SpinLockRelease(&shared->mutex);
	pool_wake(MyDatabaseId);
	if (shared->launcher_latch)
		SetLatch(shared->launcher_latch);
	return pass;
}

bool
pool_pending_pass_done(uint64 pass)
{
	DatabaseSlot *slot;
	bool		done = true;

	if (shared == NULL)
		return true;
	SpinLockAcquire(&shared->mutex);
	slot = database_slot(MyDatabaseId, false);
	if (slot)
		done = slot->pending_passes_done >= pass;
	SpinLockRelease(&shared->mutex);
	return done;
}

bool
pool_take_pending_check(uint64 *pass)
{
	bool		take;

	SpinLockAcquire(&shared->mutex);
	take = my_slot->pending_check;
	if (take)
	{
		my_slot->pending_check = false;
		*pass = ++my_slot->pending_passes_begun;
	}
	SpinLockRelease(&shared->mutex);
	return take;
}

void
pool_pending_pass_end(uint64 pass)
{
	SpinLockAcquire(&shared->mutex);
	if (my_slot->pending_passes_done < pass)
		my_slot->pending_passes_done = pass;
	SpinLockRelease(&shared->mutex);
}

static void
send_request(Oid dboid)
{
	Latch	   *latch;
	DatabaseSlot *slot;

	if (shared == NULL)
		return;
	SpinLockAcquire(&shared->mutex);
	slot = database_slot(dboid, true);
	if (slot)
	{
		slot->wanted = true;
		/* a flow created or resumed: its first change wakes a worker */
		slot->batching_due_from = 0;
		slot->schedule_changes++;
	}
	latch = shared->launcher_latch;
	SpinLockRelease(&shared->mutex);
	if (latch)
		SetLatch(latch);
}

void
pool_mark_idle(Oid dboid)
{
	DatabaseSlot *slot;
	TimestampTz now = GetCurrentTimestamp();

	SpinLockAcquire(&shared->mutex);
	slot = database_slot(dboid, true);
	if (slot && !slot->wanted)
		slot->idle_since = now;
	SpinLockRelease(&shared->mutex);
}

static int	claim_timeout_id = -1;

/*
 * A batching run that takes longer than a flush interval while no other
 * worker is idle (as the claim's timeout handler: only a flag and a latch),
 * or a worker whose streaming rounds fall behind: the launcher may add one.
 */
void
pool_grow(void)
{
	Latch	   *latch;

	if (my_slot == NULL)
		return;
	my_slot->grow = true;
	latch = shared->launcher_latch;
	if (latch)
		SetLatch(latch);
}

/* This worker's place is free for another; the caller holds the mutex. */
static void
free_my_place(void)
{
	my_place->pid = 0;
	my_place->latch = NULL;
	my_place->claimed = 0;
	my_place->batching = false;
	my_place->owner = InvalidOid;
	my_place = NULL;
}

/* At exit: the place and its claim are free again. */
static void
pool_leave(int code, Datum arg)
{
	if (my_place == NULL)
		return;
	SpinLockAcquire(&shared->mutex);
	free_my_place();
	SpinLockRelease(&shared->mutex);
}

/* Takes a place in the database's pool; false when it is full. */
bool
pool_join(Oid dboid)
{
	SpinLockAcquire(&shared->mutex);
	my_slot = database_slot(dboid, true);
	for (int i = 0; my_slot && i < POOL_MAX && my_place == NULL; i++)
		if (my_slot->pool[i].pid == 0)
		{
			my_place = &my_slot->pool[i];
			my_place->pid = MyProcPid;
			my_place->latch = MyLatch;
			my_place->claimed = 0;
			my_place->batching = false;
			my_slot->no_worker_since = 0;
			/* pending flows whose tables appeared while no worker ran (a restore) */
			my_slot->pending_check = true;
		}
	SpinLockRelease(&shared->mutex);
	if (my_place == NULL)
		return false;
	before_shmem_exit(pool_leave, (Datum) 0);
	claim_timeout_id = RegisterTimeout(USER_TIMEOUT, pool_grow);
	return true;
}


/*
 * An idle worker leaves, while another stays for the database: after a
 * while without work, or at once when another database needs the slot.
 */
bool
pool_may_shrink(bool idle_long)
{
	bool		leave;

	SpinLockAcquire(&shared->mutex);
	leave = pool_alive(my_slot) > 1 && (idle_long || my_slot->shrink);
	if (leave)
	{
		my_slot->shrink = false;
		/* counted out now (two cannot both leave), and the place is free */
		free_my_place();
	}
	SpinLockRelease(&shared->mutex);
	return leave;
}

bool
pool_claim(int64 flow_id, bool batching)
{
	bool		granted = true;
	int			alive = 0;
	int			in_batching = 0;
	int			idle = 0;
	bool		reserved = false;
	bool		grow;
	TimestampTz now = GetCurrentTimestamp();

	Assert(my_place != NULL && my_place->claimed == 0);
	SpinLockAcquire(&shared->mutex);
	for (int i = 0; i < POOL_MAX; i++)
	{
		PoolWorker *w = &my_slot->pool[i];

		if (w->pid == 0 || w == my_place)
			continue;
		alive++;
		if (w->claimed == flow_id)
			granted = false;
		if (w->claimed != 0 && w->batching)
			in_batching++;
		if (w->claimed == 0)
			idle++;
	}

	/*
	 * The reserve: batching runs may occupy every worker of the pool but
	 * one, which streaming rounds keep -- unless this worker is alone.
	 */
	if (granted && batching && alive > 0 && in_batching >= alive)
	{
		granted = false;
		reserved = true;
	}
	if (granted)
	{
		my_place->claimed = flow_id;
		my_place->batching = batching;
		my_place->claimed_at = now;
	}
	grow = reserved;
	if (grow)
		my_slot->grow = true;
	SpinLockRelease(&shared->mutex);
	if (grow && shared->launcher_latch)
		SetLatch(shared->launcher_latch);
	/* a batching run that lasts: other flows may be due meanwhile */
	if (granted && batching && idle == 0)
		enable_timeout_after(claim_timeout_id, Max(flowpg_flush_interval_ms, 100));
	return granted;
}

/*
 * The fair share: among the due batching flows no other worker runs, the
 * one whose owner has the fewest batching runs in progress in the database
 * now; then an owner other than the one this pool ran last (the roles take
 * turns even with a single batching worker); then the one due first.  And
 * while other roles have batching flows, a role's runs hold all the
 * batching workers but one (its share), so another role's flow that comes
 * due during long runs finds a worker (or the pool grows one).
 */
static bool
better_candidate(const PoolCandidate *a, int a_running, const PoolCandidate *b, int b_running)
{
	Oid			last = my_slot->last_batching_owner;

	if (a_running != b_running)
		return a_running < b_running;
	if ((a->owner == last) != (b->owner == last))
		return b->owner == last;
	return a->due_at < b->due_at;
}

/* Batching runs of owner by the other workers (InvalidOid: all); mutex held. */
static int
batching_runs(Oid owner)
{
	int			runs = 0;

	for (int i = 0; i < POOL_MAX; i++)
		runs += my_slot->pool[i].pid != 0 && &my_slot->pool[i] != my_place &&
			my_slot->pool[i].claimed != 0 && my_slot->pool[i].batching &&
			(owner == InvalidOid || my_slot->pool[i].owner == owner);
	return runs;
}

int
pool_claim_fair(const PoolCandidate *candidates, int ncandidates, List *batching_owners,
				PoolWait *waits)
{
	int			best = -1;
	int			best_running = 0;
	bool	   *shared_role = palloc0(sizeof(bool) * Max(ncandidates, 1));
	bool	   *taken = palloc0(sizeof(bool) * Max(ncandidates, 1));

	/* one worker is kept for streaming rounds (pool_claim's reserve) */
	int			capacity = Max(flowpg_workers_per_database - 1, 1);
	int			share = Max(capacity - 1, 1);
	int			busy;

	Assert(my_place != NULL && my_place->claimed == 0);
	/* a superuser's flows are the administrator's, not a tenant's: no share */
	for (int c = 0; c < ncandidates; c++)
		shared_role[c] = !candidates[c].superuser &&
			(list_length(batching_owners) > 1 ||
			 (batching_owners != NIL && linitial_oid(batching_owners) != candidates[c].owner));
	SpinLockAcquire(&shared->mutex);
	busy = batching_runs(InvalidOid);
	for (int c = 0; c < ncandidates; c++)
	{
		int			running = batching_runs(candidates[c].owner);

		waits[c] = (PoolWait) {POOL_WAIT_NONE, 0, capacity};
		for (int i = 0; i < POOL_MAX; i++)
			taken[c] |= my_slot->pool[i].pid != 0 && &my_slot->pool[i] != my_place &&
				my_slot->pool[i].claimed == candidates[c].flow_id;
		if (taken[c])
			continue;
		if (shared_role[c] && running >= share)
			waits[c] = (PoolWait) {POOL_WAIT_ROLE_SHARE, running, capacity};
		else if (best < 0 ||
				 better_candidate(&candidates[c], running, &candidates[best], best_running))
		{
			best = c;
			best_running = running;
		}
	}
	SpinLockRelease(&shared->mutex);
	if (best >= 0 && !pool_claim(candidates[best].flow_id, true))
	{
		/* the pool's last free worker is kept: they all wait for one */
		for (int c = 0; c < ncandidates; c++)
			if (waits[c].reason == POOL_WAIT_NONE && !taken[c])
				waits[c] = (PoolWait) {POOL_WAIT_POOL_BUSY, busy, capacity};
		best = -1;
	}
	else if (best >= 0)
	{
		/* a worker claiming for the same role meanwhile is counted now */
		int			running;

		SpinLockAcquire(&shared->mutex);
		my_place->owner = candidates[best].owner;
		running = batching_runs(candidates[best].owner);
		if (!shared_role[best] || running < share)
			my_slot->last_batching_owner = candidates[best].owner;
		SpinLockRelease(&shared->mutex);
		if (shared_role[best] && running >= share)
		{
			pool_release();
			waits[best] = (PoolWait) {POOL_WAIT_ROLE_SHARE, running, capacity};
			best = -1;
		}
	}
	pfree(shared_role);
	pfree(taken);
	return best;
}

void
pool_release(void)
{
	disable_timeout(claim_timeout_id, false);
	SpinLockAcquire(&shared->mutex);
	my_place->claimed = 0;
	my_place->batching = false;
	my_place->owner = InvalidOid;
	SpinLockRelease(&shared->mutex);
	/* a cancel meant for the run that just ended (pool_preempt) */
	QueryCancelPending = false;
}

bool
pool_preempt(int64 flow_id)
{
	DatabaseSlot *slot;
	pid_t		pid = 0;

	if (shared == NULL)
		return false;
	SpinLockAcquire(&shared->mutex);
	slot = database_slot(MyDatabaseId, false);
	for (int i = 0; slot && i < POOL_MAX && pid == 0; i++)
		if (slot->pool[i].pid != 0 && slot->pool[i].claimed == flow_id)
			pid = slot->pool[i].pid;
	SpinLockRelease(&shared->mutex);
	/*
	 * A cancel that is not the statement timeout is a busy flow to the
	 * worker, not a failure; what the run touched is repaired next time.
	 */
	if (pid != 0)
		(void) kill(pid, SIGINT);
	return pid != 0;
}

/*
 * The launcher: whether a worker for the database could be registered.  A
 * database left without any worker takes a slot from the largest pool
 * (its next idle worker leaves).
 */
void
pool_note_start(Oid dboid, bool started)
{
	DatabaseSlot *slot;
	TimestampTz now = GetCurrentTimestamp();

	SpinLockAcquire(&shared->mutex);
	slot = database_slot(dboid, true);
	if (started)
		shared->started_at = now;
	else
		shared->start_failed_at = now;
	if (slot && !started && pool_alive(slot) == 0)
	{
		DatabaseSlot *largest = NULL;

		if (slot->no_worker_since == 0)
			slot->no_worker_since = now;
		for (int i = 0; i < shared->nslots; i++)
			if (pool_alive(&shared->slots[i]) > 1 &&
				(largest == NULL || pool_alive(&shared->slots[i]) > pool_alive(largest)))
				largest = &shared->slots[i];
		if (largest)
			largest->shrink = true;
	}
	SpinLockRelease(&shared->mutex);
}

WorkerStatus
pool_status(Oid dboid, TimestampTz *since, pid_t *pid)
{
	DatabaseSlot *slot;
	WorkerStatus status = WORKER_STARTING;

	*since = 0;
	*pid = 0;
	if (shared == NULL)
		return WORKER_NOT_PRELOADED;
	if (!flowpg_enabled)
		return WORKER_DISABLED;
	SpinLockAcquire(&shared->mutex);
	slot = database_slot(dboid, false);
	for (int i = 0; slot && i < POOL_MAX && *pid == 0; i++)
		*pid = slot->pool[i].pid;
	if (*pid != 0)
		status = WORKER_RUNNING;
	else if (slot && slot->no_worker_since != 0)
	{
		status = WORKER_NONE;
		*since = slot->no_worker_since;
	}
	else if (shared->start_failed_at > shared->started_at)
	{
		/* not tried for this database yet, but the last start failed */
		status = WORKER_NONE;
		*since = shared->start_failed_at;
	}
	SpinLockRelease(&shared->mutex);
	return status;
}

/*
 * Wakes one idle worker of the database (any one will do).  When none is
 * idle and one has been busy for longer than a flush interval, the work
 * that woke us would wait: the pool may grow.
 */
static void
wake(Oid dboid, bool batching_change)
{
	DatabaseSlot *slot;
	Latch	   *latch = NULL;
	bool		grow = false;
	TimestampTz now = GetCurrentTimestamp();
	TimestampTz busy_since = now - (int64) flowpg_flush_interval_ms * 1000;

	if (shared == NULL)
		return;
	SpinLockAcquire(&shared->mutex);
	slot = database_slot(dboid, false);
	for (int i = 0; slot && i < POOL_MAX; i++)
	{
		PoolWorker *w = &slot->pool[i];

		if (w->pid == 0)
			continue;
		if (w->claimed == 0)
		{
			latch = w->latch;
			grow = false;
			break;
		}
		if (latch == NULL)
			latch = w->latch;
		if (w->claimed_at < busy_since)
			grow = true;
	}
	if (grow && !slot->grow)
		slot->grow = true;
	else
		grow = false;

	/*
	 * No batching flow can be due before then: an idle worker need not
	 * look (it wakes itself then), but a pool whose workers are all busy
	 * still grows, so that one is free to run the flow when it is due.
	 */
	if (batching_change && slot && now < slot->batching_due_from)
		latch = NULL;
	SpinLockRelease(&shared->mutex);
	if (latch)
		SetLatch(latch);
	if (grow && shared->launcher_latch)
		SetLatch(shared->launcher_latch);
}

void
pool_wake(Oid dboid)
{
	wake(dboid, false);
}

void
pool_wake_for_batching(Oid dboid)
{
	wake(dboid, true);
}

uint64
pool_schedule_changes(void)
{
	uint64		changes = 0;

	SpinLockAcquire(&shared->mutex);
	if (my_slot)
		changes = my_slot->schedule_changes;
	SpinLockRelease(&shared->mutex);
	return changes;
}

void
pool_set_batching_due_from(TimestampTz from, uint64 changes_seen)
{
	SpinLockAcquire(&shared->mutex);
	/* a flow created or resumed since the schedule was read: at once */
	if (my_slot)
		my_slot->batching_due_from =
			my_slot->schedule_changes == changes_seen ? from : 0;
	SpinLockRelease(&shared->mutex);
}

bool
pool_running(Oid dboid)
{
	TimestampTz since;
	pid_t		pid;

	return pool_status(dboid, &since, &pid) == WORKER_RUNNING;
}

bool
pool_blocked_by_me(Oid dboid)
{
	DatabaseSlot *slot;
	pid_t		pids[POOL_MAX];
	int			npids = 0;

	if (shared == NULL)
		return false;
	SpinLockAcquire(&shared->mutex);
	slot = database_slot(dboid, false);
	for (int i = 0; slot && i < POOL_MAX; i++)
		if (slot->pool[i].pid != 0)
			pids[npids++] = slot->pool[i].pid;
	SpinLockRelease(&shared->mutex);
	for (int p = 0; p < npids; p++)
	{
		ArrayType  *blockers;
		Datum	   *items;
		int			nitems;

		blockers = DatumGetArrayTypeP(DirectFunctionCall1(pg_blocking_pids, Int32GetDatum(pids[p])));
		deconstruct_array(blockers, INT4OID, sizeof(int32), true, TYPALIGN_INT,
						  &items, NULL, &nitems);
		for (int i = 0; i < nitems; i++)
			if (DatumGetInt32(items[i]) == MyProcPid)
				return true;
	}
	return false;
}

/* Should the launcher start a worker for this database now? */
bool
pool_needs_worker(Oid dboid, TimestampTz now, int running)
{
	DatabaseSlot *slot;
	bool		start;

	SpinLockAcquire(&shared->mutex);
	slot = database_slot(dboid, true);
	if (slot)
		running = Max(running, pool_alive(slot));
	if (running > 0)
	{
		/* a busy pool grows, one worker at a time */
		start = slot != NULL && slot->grow && running < flowpg_workers_per_database;
		if (slot)
			slot->grow = false;
	}
	else
		start = slot == NULL || slot->wanted || slot->idle_since == 0 ||
			now - slot->idle_since >= IDLE_REPROBE_USECS;
	if (slot && slot->paused_until > now)
		start = false;
	if (slot && start && running == 0)
	{
		slot->wanted = false;
		slot->idle_since = 0;
	}
	SpinLockRelease(&shared->mutex);
	return start;
}


/* The launcher: writers and workers wake it through its latch. */
void
pool_set_launcher(Latch *latch)
{
	SpinLockAcquire(&shared->mutex);
	shared->launcher_latch = latch;
	SpinLockRelease(&shared->mutex);
}
