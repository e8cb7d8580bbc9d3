/*-------------------------------------------------------------------------
 *
 * stats.c
 *	  Run statistics and error history of flows.
 *
 * flowpg.flow_run holds one row of counters and schedule per flow,
 * flowpg.flow_error the last errors; the views flowpg.flow_stats and
 * flowpg.flow_errors present them.  A run's counters are written in the
 * run's own transaction, so they are exact; a failure is recorded after the
 * failed run was rolled back.
 *
 * A flow's rows here never outlive it: both tables reference flowpg.flow
 * with ON DELETE CASCADE, and every write first locks the flow's row (KEY
 * SHARE) and writes nothing when it is gone.  A worker recording a run of
 * a flow a concurrent drop_flow is deleting so either waits for the drop
 * and finds no flow, or holds the drop's DELETE until it commits, whose
 * cascade then removes what it wrote.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/elog.h"
#include "utils/memutils.h"

#include "catalog.h"
#include "privileged.h"
#include "guc.h"
#include "stats.h"
#include "pool.h"

/* How many errors are kept per flow. */
#define ERRORS_KEPT 20

/*
 * Locks the flow's row until the transaction ends, so that it cannot be
 * dropped under the statistics being written; false when it is gone.
 */
static bool
lock_flow_row(int64 flow_id)
{
	Oid			types[1] = {INT8OID};
	Datum		values[1] = {Int64GetDatum(flow_id)};
	bool		exists;

	privileged_query("SELECT FROM flowpg.flow WHERE flow_id = $1 FOR KEY SHARE",
					 1, types, values, NULL);
	exists = SPI_processed > 0;
	privileged_query_end();
	return exists;
}

static Datum
interval_between(TimestampTz from, TimestampTz to)
{
	Interval   *interval = palloc0(sizeof(Interval));

	interval->time = to - from;
	return IntervalPGetDatum(interval);
}

/*
 * Successful runs (runs of them: a streaming flow's rounds are recorded
 * together), the last of which ran from started to finished.
 */
static void
record_success(int64 flow_id, RunResult *result, int64 runs, TimestampTz started,
			   TimestampTz finished, TimestampTz next_run)
{
	Oid			types[7] = {INT8OID, INT8OID, INT8OID, TIMESTAMPTZOID, INTERVALOID, TIMESTAMPTZOID, INT8OID};
	Datum		values[7];
	char		nulls[7] = {' ', ' ', ' ', ' ', ' ', next_run ? ' ' : 'n', ' '};

	if (!lock_flow_row(flow_id))
		return;
	values[0] = Int64GetDatum(flow_id);
	values[1] = Int64GetDatum(result->rows_in);
	values[2] = Int64GetDatum((int64) result->rows_out);
	values[3] = TimestampTzGetDatum(finished);
	values[4] = interval_between(started, finished);
	values[5] = TimestampTzGetDatum(next_run);
	values[6] = Int64GetDatum(runs);
	privileged_execute("INSERT INTO flowpg.flow_run AS r (flow_id, runs, rows_in, rows_out, "
							   "last_run_at, last_run_duration, next_run_at, last_worker_pid, "
							   "last_success_at) "
							   "VALUES ($1, $7, $2, $3, $4, $5, $6, pg_catalog.pg_backend_pid(), $4) "
							   "ON CONFLICT (flow_id) DO UPDATE SET runs = r.runs + excluded.runs, "
							   "consecutive_failures = 0, rows_in = r.rows_in + excluded.rows_in, "
							   "rows_out = r.rows_out + excluded.rows_out, "
							   /* a failure recorded since rounds that were recorded later stays the last */
							   "last_run_at = GREATEST(r.last_run_at, excluded.last_run_at), "
							   "last_run_duration = CASE WHEN r.last_run_at > excluded.last_run_at "
							   "THEN r.last_run_duration ELSE excluded.last_run_duration END, "
							   "next_run_at = coalesce(excluded.next_run_at, r.next_run_at), "
							   "last_worker_pid = excluded.last_worker_pid, "
							   "last_success_at = excluded.last_success_at",
							   7, types, values, nulls);
	catalog_set_run_state(flow_id, NULL);
}

void
stats_record_run(int64 flow_id, RunResult *result, TimestampTz started,
				 TimestampTz finished, TimestampTz next_run)
{
	record_success(flow_id, result, 1, started, finished, next_run);
}

void
stats_record_rounds(int64 flow_id, RunResult *result, int64 rounds,
					TimestampTz last_started, TimestampTz last_finished)
{
	record_success(flow_id, result, rounds, last_started, last_finished, 0);
}

/* Keeps an error (or warning) in flowpg.flow_error: the last few per flow. */
static void
keep_error(int64 flow_id, TimestampTz at, ErrorData *edata)
{
	Oid			types[5] = {INT8OID, TIMESTAMPTZOID, TEXTOID, TEXTOID, TEXTOID};
	Datum		values[5];
	char		nulls[5] = {' ', ' ', ' ', ' ', edata->detail ? ' ' : 'n'};
	Oid			keep_types[2] = {INT8OID, INT4OID};
	Datum		keep_values[2];

	values[0] = Int64GetDatum(flow_id);
	values[1] = TimestampTzGetDatum(at);
	values[2] = CStringGetTextDatum(unpack_sql_state(edata->sqlerrcode));
	values[3] = CStringGetTextDatum(edata->message ? edata->message : "");
	values[4] = edata->detail ? CStringGetTextDatum(edata->detail) : (Datum) 0;
	privileged_execute("INSERT INTO flowpg.flow_error (flow_id, at, sqlstate, message, detail) "
					   "VALUES ($1, $2, $3, $4, $5)", 5, types, values, nulls);

	keep_values[0] = values[0];
	keep_values[1] = Int32GetDatum(ERRORS_KEPT);
	privileged_execute("DELETE FROM flowpg.flow_error WHERE flow_id = $1 AND ctid NOT IN "
					   "(SELECT ctid FROM flowpg.flow_error WHERE flow_id = $1 "
					   "ORDER BY at DESC LIMIT $2)",
					   2, keep_types, keep_values, NULL);
}

/*
 * A flush that found nothing to run (or only completed the backfill): the
 * sink was up to date then, which last_execution_time shows (0.3).
 */
void
stats_record_flush(int64 flow_id, TimestampTz at)
{
	Oid			types[2] = {INT8OID, TIMESTAMPTZOID};
	Datum		values[2] = {Int64GetDatum(flow_id), TimestampTzGetDatum(at)};

	/* a read-only transaction's flush found nothing to write: it stays so */
	if (XactReadOnly)
		return;
	/* not for a flow dropped while the flush waited for it: its statistics are gone */
	if (!lock_flow_row(flow_id))
		return;
	privileged_execute("INSERT INTO flowpg.flow_run AS r (flow_id, last_flushed_at) "
							   "VALUES ($1, $2) "
							   "ON CONFLICT (flow_id) DO UPDATE SET "
							   "last_flushed_at = GREATEST(r.last_flushed_at, excluded.last_flushed_at)",
							   2, types, values, NULL);
}

int
stats_record_failure(int64 flow_id, ErrorData *edata, TimestampTz started,
					 TimestampTz finished)
{
	Oid			types[3] = {INT8OID, TIMESTAMPTZOID, INTERVALOID};
	Datum		values[3];
	bool		isnull;
	int			consecutive;

	if (!lock_flow_row(flow_id))
		return 0;
	values[0] = Int64GetDatum(flow_id);
	values[1] = TimestampTzGetDatum(finished);
	values[2] = interval_between(started, finished);

	privileged_query("INSERT INTO flowpg.flow_run AS r (flow_id, failures, consecutive_failures, "
							 "last_run_at, last_run_duration, last_worker_pid) "
							 "VALUES ($1, 1, 1, $2, $3, pg_catalog.pg_backend_pid()) "
							 "ON CONFLICT (flow_id) DO UPDATE SET failures = r.failures + 1, "
							 "consecutive_failures = r.consecutive_failures + 1, "
							 "last_run_at = excluded.last_run_at, "
							 "last_run_duration = excluded.last_run_duration, "
							 "last_worker_pid = excluded.last_worker_pid "
							 "RETURNING consecutive_failures", 3, types, values, NULL);
	consecutive = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	privileged_query_end();

	keep_error(flow_id, finished, edata);
	catalog_set_run_state(flow_id, edata->message ? edata->message : "");
	return consecutive;
}

void
stats_record_warning(int64 flow_id, int sqlerrcode, const char *message, const char *detail)
{
	ErrorData	edata = {0};

	edata.sqlerrcode = sqlerrcode;
	edata.message = (char *) message;
	edata.detail = (char *) detail;
	keep_error(flow_id, GetCurrentTimestamp(), &edata);
}

FlowErrorRecord *
stats_last_error(int64 flow_id)
{
	Oid			types[1] = {INT8OID};
	Datum		values[1] = {Int64GetDatum(flow_id)};
	MemoryContext caller = CurrentMemoryContext;
	FlowErrorRecord *error = NULL;

	privileged_query("SELECT at, sqlstate, message, detail FROM flowpg.flow_error "
							 "WHERE flow_id = $1 ORDER BY at DESC LIMIT 1",
							 1, types, values, NULL);
	if (SPI_processed > 0)
	{
		HeapTuple	tuple = SPI_tuptable->vals[0];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		MemoryContext old = MemoryContextSwitchTo(caller);
		bool		isnull;

		error = palloc0(sizeof(FlowErrorRecord));
		error->at = DatumGetTimestampTz(SPI_getbinval(tuple, desc, 1, &isnull));
		error->sqlstate = SPI_getvalue(tuple, desc, 2);
		error->message = SPI_getvalue(tuple, desc, 3);
		error->detail = SPI_getvalue(tuple, desc, 4);
		MemoryContextSwitchTo(old);
	}
	privileged_query_end();
	return error;
}

/* Sets a timestamp column of the flow's flow_run row (column: a constant of ours). */
static void
set_flow_run_time(int64 flow_id, const char *column, TimestampTz value)
{
	Oid			types[2] = {INT8OID, TIMESTAMPTZOID};
	Datum		values[2] = {Int64GetDatum(flow_id), TimestampTzGetDatum(value)};

	if (!lock_flow_row(flow_id))
		return;
	privileged_execute(psprintf("INSERT INTO flowpg.flow_run AS r (flow_id, %s) "
										"VALUES ($1, $2) ON CONFLICT (flow_id) "
										"DO UPDATE SET %s = excluded.%s",
										column, column, column),
							   2, types, values, NULL);
}

void
stats_set_next_run(int64 flow_id, TimestampTz next_run)
{
	set_flow_run_time(flow_id, "next_run_at", next_run);
}

void
stats_set_last_tick(int64 flow_id, TimestampTz tick)
{
	set_flow_run_time(flow_id, "last_tick", tick);
}

/* A timestamp column of the flow's flow_run row; false when NULL or none. */
static bool
flow_run_time(int64 flow_id, const char *select_sql, TimestampTz *result)
{
	Oid			types[1] = {INT8OID};
	Datum		values[1] = {Int64GetDatum(flow_id)};
	bool		isnull = true;

	privileged_query(select_sql, 1, types, values, NULL);
	if (SPI_processed > 0)
		*result = DatumGetTimestampTz(SPI_getbinval(SPI_tuptable->vals[0],
													SPI_tuptable->tupdesc, 1, &isnull));
	privileged_query_end();
	return !isnull;
}

bool
stats_last_tick(int64 flow_id, TimestampTz *tick)
{
	return flow_run_time(flow_id, "SELECT last_tick FROM flowpg.flow_run WHERE flow_id = $1", tick);
}

/* The flow's scheduled next run; false when none is. */
bool
stats_next_run(int64 flow_id, TimestampTz *next_run)
{
	return flow_run_time(flow_id, "SELECT next_run_at FROM flowpg.flow_run WHERE flow_id = $1",
						 next_run);
}

PG_FUNCTION_INFO_V1(flowpg_flow_state);

/*
 * flowpg._flow_state(state, state_reason): what flows and flow_stats show.
 * The catalog's state (active, failed, restoring) is what the last run
 * left; whether anything runs the flows at all is known only here: a
 * database without a worker, or with flowpg.enabled off, must not look
 * active.
 */
Datum
flowpg_flow_state(PG_FUNCTION_ARGS)
{
	TupleDesc	desc;
	Datum		values[2];
	bool		nulls[2] = {false, false};
	char	   *state = text_to_cstring(PG_GETARG_TEXT_PP(0));
	char	   *reason = PG_ARGISNULL(1) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(1));
	TimestampTz since;
	pid_t		pid;
	WorkerStatus status = pool_status(MyDatabaseId, &since, &pid);

	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	/*
	 * An outdated database's flows all say so.  The version is read once
	 * per query (the call site's fn_extra): the view calls this per flow.
	 */
	if (fcinfo->flinfo->fn_extra == NULL)
	{
		char	   *version = catalog_extension_version();

		fcinfo->flinfo->fn_extra = MemoryContextStrdup(fcinfo->flinfo->fn_mcxt,
													   version ? version : FLOWPG_VERSION);
	}
	/* a failing or restoring flow says so; only "active" can be untrue */
	if (strcmp((char *) fcinfo->flinfo->fn_extra, FLOWPG_VERSION) != 0)
	{
		char	   *version = (char *) fcinfo->flinfo->fn_extra;

		state = "update needed";
		reason = psprintf("flowpg's objects in this database are at version %s, its library at %s: %s; changes are captured meanwhile, nothing is refreshed",
						  version, FLOWPG_VERSION,
						  catalog_version_older(version) ? "run ALTER EXTENSION flowpg UPDATE" :
						  "install the library of that version");
	}
	else if (strcmp(state, "active") == 0)
	{
		switch (status)
		{
			case WORKER_DISABLED:
				state = "disabled";
				reason = "flowpg.enabled is off: changes are captured, nothing is refreshed";
				break;
			case WORKER_NONE:
				state = "no worker";
				reason = psprintf("no flowpg worker runs for this database since %s: every background worker slot (max_worker_processes = %d) is in use; flowpg starts one as soon as a slot frees",
								  timestamptz_to_str(since), max_worker_processes);
				break;
			case WORKER_NOT_PRELOADED:
				state = "no worker";
				reason = "flowpg is not in shared_preload_libraries: no worker runs";
				break;
			default:
				break;
		}
	}
	values[0] = CStringGetTextDatum(state);
	if (reason)
		values[1] = CStringGetTextDatum(reason);
	else
		nulls[1] = true;
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(desc, values, nulls)));
}

void
stats_forget(int64 flow_id)
{
	privileged_execute_for_flow("DELETE FROM flowpg.flow_run WHERE flow_id = $1", flow_id);
	privileged_execute_for_flow("DELETE FROM flowpg.flow_error WHERE flow_id = $1", flow_id);
}

bool
stats_ever_ran(int64 flow_id, TimestampTz since)
{
	Oid			types[2] = {INT8OID, TIMESTAMPTZOID};
	Datum		values[2] = {Int64GetDatum(flow_id), TimestampTzGetDatum(since)};
	bool		ran;

	privileged_query("SELECT 1 FROM flowpg.flow_run WHERE flow_id = $1 "
							 "AND last_run_at >= $2", 2, types, values, NULL);
	ran = SPI_processed > 0;
	privileged_query_end();
	return ran;
}
