/*-------------------------------------------------------------------------
 *
 * progress.c
 *	  What each backend is doing for a flow right now, in shared memory:
 *	  the rows of flowpg.flow_progress (as pg_stat_progress_* has for
 *	  PostgreSQL's own commands, which an extension cannot add to), the
 *	  running columns of flowpg.flow_stats, and the comment that labels a
 *	  run's statements for pg_stat_activity and pg_stat_statements.
 *
 * One slot per backend (MaxBackends, by backend id), written only by its
 * backend and read by anyone: each slot has a spinlock, held for a few
 * assignments.  A slot in use names its database, flow and command; the
 * abort of the transaction that set it frees it, so a failed run leaves
 * no row behind.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/backendid.h"
#include "storage/ipc.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "progress.h"

typedef struct ProgressSlot
{
	slock_t		mutex;
	ProgressCommand command;	/* PROGRESS_NONE: free */
	Oid			dboid;
	int			pid;
	int64		flow_id;
	char		phase[NAMEDATALEN];	/* empty: none said */
	TimestampTz started_at;
	TimestampTz phase_at;
	int64		windows_done;	/* -1: not known */
	int64		windows_total;
	int64		rows_read;
	int64		rows_written;
} ProgressSlot;

static ProgressSlot *slots = NULL;
static int	nslots = 0;

/*
 * This backend's nesting of progress_begin, and where the outermost began:
 * begun in a transaction, the slot goes with it (or with the subtransaction
 * it began in) when it aborts; begun outside (a streaming round, which
 * runs transactions of its own), its caller ends it in every case.
 */
static int	depth = 0;
static bool began_in_xact = false;
static SubTransactionId began_in_subxact = InvalidSubTransactionId;

static const char *const command_names[] = {
	[PROGRESS_NONE] = NULL,
	[PROGRESS_REFRESH] = "refresh",
	[PROGRESS_RECOMPUTE] = "recompute",
	[PROGRESS_BACKFILL] = "backfill",
	[PROGRESS_STREAM_ROUND] = "streaming round",
	[PROGRESS_VERIFY] = "verify",
	[PROGRESS_EXPLAIN] = "explain",
};

PG_FUNCTION_INFO_V1(flowpg_progress);

static Size
progress_shmem_size(void)
{
	return mul_size(MaxBackends, sizeof(ProgressSlot));
}

void
progress_shmem_request(void)
{
	RequestAddinShmemSpace(MAXALIGN(progress_shmem_size()));
}

void
progress_shmem_startup(void)
{
	bool		found;

	nslots = MaxBackends;
	slots = ShmemInitStruct("flowpg progress", progress_shmem_size(), &found);
	if (!found)
	{
		memset(slots, 0, progress_shmem_size());
		for (int i = 0; i < nslots; i++)
			SpinLockInit(&slots[i].mutex);
	}
}

static ProgressSlot *
my_slot(void)
{
	if (slots == NULL || MyBackendId == InvalidBackendId || MyBackendId > nslots)
		return NULL;
	return &slots[MyBackendId - 1];
}

static void progress_clear(void);

/* A process that exits (a worker's FATAL, say) leaves no row behind. */
static void
progress_exit(int code, Datum arg)
{
	progress_clear();
}

void
progress_begin(int64 flow_id, ProgressCommand command)
{
	static bool exit_registered = false;
	ProgressSlot *slot = my_slot();
	TimestampTz now = GetCurrentTimestamp();

	if (slot == NULL)
		return;
	if (depth++ > 0)
		return;
	if (!exit_registered)
	{
		before_shmem_exit(progress_exit, (Datum) 0);
		exit_registered = true;
	}
	began_in_xact = IsTransactionState();
	began_in_subxact = began_in_xact ? GetCurrentSubTransactionId() : InvalidSubTransactionId;
	SpinLockAcquire(&slot->mutex);
	slot->command = command;
	slot->dboid = MyDatabaseId;
	slot->pid = MyProcPid;
	slot->flow_id = flow_id;
	slot->phase[0] = '\0';
	slot->started_at = slot->phase_at = now;
	slot->windows_done = slot->windows_total = slot->rows_read = slot->rows_written = -1;
	SpinLockRelease(&slot->mutex);
}

static void
progress_clear(void)
{
	ProgressSlot *slot = my_slot();

	depth = 0;
	if (slot == NULL || slot->command == PROGRESS_NONE)
		return;
	SpinLockAcquire(&slot->mutex);
	slot->command = PROGRESS_NONE;
	SpinLockRelease(&slot->mutex);
}

void
progress_end(void)
{
	if (depth > 1)
	{
		depth--;
		return;
	}
	progress_clear();
}

void
progress_end_all(void)
{
	progress_clear();
}

void
progress_phase(const char *phase)
{
	ProgressSlot *slot = my_slot();

	if (slot == NULL || depth == 0)
		return;
	SpinLockAcquire(&slot->mutex);
	strlcpy(slot->phase, phase, sizeof(slot->phase));
	slot->phase_at = GetCurrentTimestamp();
	SpinLockRelease(&slot->mutex);
}

void
progress_counts(int64 windows_done, int64 windows_total, int64 rows_read,
				int64 rows_written)
{
	ProgressSlot *slot = my_slot();

	if (slot == NULL || depth == 0)
		return;
	SpinLockAcquire(&slot->mutex);
	if (windows_done >= 0)
		slot->windows_done = windows_done;
	if (windows_total >= 0)
		slot->windows_total = windows_total;
	if (rows_read >= 0)
		slot->rows_read = rows_read;
	if (rows_written >= 0)
		slot->rows_written = rows_written;
	SpinLockRelease(&slot->mutex);
}

void
progress_add_rows_read(int64 rows)
{
	ProgressSlot *slot = my_slot();

	if (slot == NULL || depth == 0)
		return;
	SpinLockAcquire(&slot->mutex);
	slot->rows_read = Max(slot->rows_read, 0) + rows;
	SpinLockRelease(&slot->mutex);
}

/*
 * "/ * flowpg flow: name * /" before the statement, so that pg_stat_activity
 * and pg_stat_statements show whose statement it is.  A '*' of the name
 * could open or close the comment: it is shown as '?'.
 */
char *
progress_label_sql(const char *flow_name, const char *sql)
{
	char	   *name = pstrdup(flow_name);

	for (char *c = name; *c; c++)
		if (*c == '*')
			*c = '?';
	return psprintf("/* flowpg flow: %s */ %s", name, sql);
}

/*
 * A run that failed leaves no row: the transaction it began in ended (a
 * commit too, for an error caught below a function that began one), or
 * the subtransaction it began in (or one around it) aborted.
 */
static void
progress_xact_callback(XactEvent event, void *arg)
{
	if (depth > 0 && began_in_xact)
		progress_clear();
}

static void
progress_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
						  SubTransactionId parentSubid, void *arg)
{
	if (event == SUBXACT_EVENT_ABORT_SUB && depth > 0 && began_in_xact &&
		began_in_subxact >= mySubid)
		progress_clear();
}

void
progress_register_callbacks(void)
{
	RegisterXactCallback(progress_xact_callback, NULL);
	RegisterSubXactCallback(progress_subxact_callback, NULL);
}

/*
 * flowpg._flow_progress(): the slots in use of this database.  A row's
 * counts are NULL where they are not known (a recompute's rows are read
 * by one statement, which says nothing until it ends).
 */
Datum
flowpg_progress(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;

	InitMaterializedSRF(fcinfo, 0);
	for (int i = 0; slots != NULL && i < nslots; i++)
	{
		ProgressSlot copy;
		Datum		values[10];
		bool		nulls[10] = {0};

		SpinLockAcquire(&slots[i].mutex);
		copy = slots[i];
		SpinLockRelease(&slots[i].mutex);
		if (copy.command == PROGRESS_NONE || copy.dboid != MyDatabaseId)
			continue;
		values[0] = Int32GetDatum(copy.pid);
		values[1] = Int64GetDatum(copy.flow_id);
		values[2] = CStringGetTextDatum(command_names[copy.command]);
		nulls[3] = copy.phase[0] == '\0';
		values[3] = CStringGetTextDatum(copy.phase);
		values[4] = TimestampTzGetDatum(copy.started_at);
		values[5] = TimestampTzGetDatum(copy.phase_at);
		values[6] = Int64GetDatum(copy.windows_done);
		nulls[6] = copy.windows_done < 0;
		values[7] = Int64GetDatum(copy.windows_total);
		nulls[7] = copy.windows_total < 0;
		values[8] = Int64GetDatum(copy.rows_read);
		nulls[8] = copy.rows_read < 0;
		values[9] = Int64GetDatum(copy.rows_written);
		nulls[9] = copy.rows_written < 0;
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}
