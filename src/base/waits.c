/*-------------------------------------------------------------------------
 *
 * waits.c
 *	  Why a due batching flow waits for a worker, in shared memory, for
 *	  flowpg.flow_stats (waiting, waiting_since).
 *
 * A worker that polls its database's due flows and cannot run one -- its
 * role already holds its share of the batching workers (pool.c's fair
 * share), or every batching worker is busy -- records why, with when the
 * flow started waiting for that reason.  A record is refreshed at every
 * poll while the flow waits; one not refreshed for a few seconds (the flow
 * ran, was dropped, stopped being due) is no longer shown, and its entry is
 * taken by the next flow that waits.  The entries are the server's, a
 * fixed number: when all are taken by waiting flows, a further flow's wait
 * goes unrecorded (flow_stats then says nothing of it; the flow still runs
 * in its turn).
 *
 * Locking: one spinlock (WaitsShared.mutex) guards the array, held for a
 * scan of it and a few assignments; never across anything that can fail.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "funcapi.h"
#include "miscadmin.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "guc.h"
#include "waits.h"

#define WAITS_MAX 256
/* a record older than this is of a flow that no longer waits */
#define WAIT_STALE_USECS (5 * USECS_PER_SEC)

typedef struct FlowWait
{
	Oid			dboid;			/* InvalidOid: a free entry */
	int64		flow_id;
	PoolWaitReason reason;
	int			held;			/* the runs its role holds, or the busy workers */
	int			capacity;		/* the batching workers the pool may have */
	TimestampTz since;
	TimestampTz seen_at;
} FlowWait;

typedef struct WaitsShared
{
	slock_t		mutex;
	FlowWait	waits[WAITS_MAX];
} WaitsShared;

static WaitsShared *waits_shared = NULL;

PG_FUNCTION_INFO_V1(flowpg_flow_waits);

void
waits_shmem_request(void)
{
	RequestAddinShmemSpace(MAXALIGN(sizeof(WaitsShared)));
}

/* Called in the postmaster with AddinShmemInitLock held. */
void
waits_shmem_startup(void)
{
	bool		found;

	waits_shared = ShmemInitStruct("flowpg waits", sizeof(WaitsShared), &found);
	if (!found)
	{
		memset(waits_shared, 0, sizeof(WaitsShared));
		SpinLockInit(&waits_shared->mutex);
	}
}

void
waits_record(int64 flow_id, PoolWaitReason reason, int held, int capacity)
{
	TimestampTz now = GetCurrentTimestamp();
	FlowWait   *found = NULL;
	FlowWait   *free_entry = NULL;

	if (waits_shared == NULL)
		return;
	SpinLockAcquire(&waits_shared->mutex);
	for (int i = 0; i < WAITS_MAX && found == NULL; i++)
	{
		FlowWait   *w = &waits_shared->waits[i];

		if (w->dboid == MyDatabaseId && w->flow_id == flow_id)
			found = w;
		else if (free_entry == NULL &&
				 (w->dboid == InvalidOid || now - w->seen_at > WAIT_STALE_USECS))
			free_entry = w;
	}
	if (found == NULL && free_entry != NULL)
	{
		found = free_entry;
		found->dboid = MyDatabaseId;
		found->flow_id = flow_id;
		found->reason = POOL_WAIT_NONE;
	}
	if (found != NULL)
	{
		/* a wait that went on: since the first poll that found it */
		if (found->reason != reason || now - found->seen_at > WAIT_STALE_USECS)
			found->since = now;
		found->reason = reason;
		found->held = held;
		found->capacity = capacity;
		found->seen_at = now;
	}
	SpinLockRelease(&waits_shared->mutex);
}

void
waits_clear(int64 flow_id)
{
	if (waits_shared == NULL)
		return;
	SpinLockAcquire(&waits_shared->mutex);
	for (int i = 0; i < WAITS_MAX; i++)
		if (waits_shared->waits[i].dboid == MyDatabaseId &&
			waits_shared->waits[i].flow_id == flow_id)
			waits_shared->waits[i].dboid = InvalidOid;
	SpinLockRelease(&waits_shared->mutex);
}

/* The words flow_stats.waiting shows for a wait. */
static char *
wait_text(FlowWait *w)
{
	switch (w->reason)
	{
		case POOL_WAIT_ROLE_SHARE:
			return psprintf("for a worker: its owner's flows run on %d of the %d batching workers, "
							"the most one role may hold while other roles have batching flows",
							w->held, w->capacity);
		case POOL_WAIT_POOL_BUSY:
			return psprintf("for a worker: all %d batching workers are running other flows "
							"(flowpg.workers_per_database)", w->held);
		case POOL_WAIT_NONE:
			break;
	}
	return NULL;
}

/* flowpg._flow_waits(): the current database's waiting flows. */
Datum
flowpg_flow_waits(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	FlowWait	copy[WAITS_MAX];
	int			n = 0;
	TimestampTz now = GetCurrentTimestamp();

	InitMaterializedSRF(fcinfo, 0);
	if (waits_shared == NULL)
		return (Datum) 0;
	SpinLockAcquire(&waits_shared->mutex);
	for (int i = 0; i < WAITS_MAX; i++)
		if (waits_shared->waits[i].dboid == MyDatabaseId &&
			waits_shared->waits[i].reason != POOL_WAIT_NONE &&
			now - waits_shared->waits[i].seen_at <= WAIT_STALE_USECS)
			copy[n++] = waits_shared->waits[i];
	SpinLockRelease(&waits_shared->mutex);
	for (int i = 0; i < n; i++)
	{
		Datum		values[3];
		bool		nulls[3] = {false, false, false};

		values[0] = Int64GetDatum(copy[i].flow_id);
		values[1] = CStringGetTextDatum(wait_text(&copy[i]));
		values[2] = TimestampTzGetDatum(copy[i].since);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}
