/*-------------------------------------------------------------------------
 *
 * live_stats.c
 *	  The live figures of the views flow_stats and memory: what the
 *	  streaming engine and the state area hold in shared memory now.
 *
 * The views join these to the catalog's recorded counters (stats.c): a
 * streaming flow's rounds that the worker has not recorded yet, its state
 * and queue, where its state begins, and a database's share of
 * flowpg.state_memory.  Each reads shared memory without waiting.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "queue.h"
#include "registry.h"
#include "state_memory.h"

PG_FUNCTION_INFO_V1(flowpg_stream_stats);

/* flowpg._stream_stats(flow_id): the worker's published counters. */
Datum
flowpg_stream_stats(PG_FUNCTION_ARGS)
{
	TupleDesc	desc;
	Datum		values[14];
	bool		nulls[14] = {0};
	StreamStats st;
	static const char *const statuses[] = {"none", "recovering", "active"};

	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	if (!registry_get_stats(PG_GETARG_INT64(0), &st))
	{
		memset(&st, 0, sizeof(st));
		st.freshness_us = -1;
	}
	values[0] = Int64GetDatum(st.state_groups);
	values[1] = Int64GetDatum(st.state_bytes);
	values[2] = Int64GetDatum(st.queued_batches);
	values[3] = Int64GetDatum(st.queued_bytes);
	values[4] = Int64GetDatum(st.batches_applied);
	values[5] = Int64GetDatum(st.batches_dropped);
	values[6] = Int64GetDatum(st.fallbacks);
	if (st.freshness_us < 0)
		nulls[7] = true;
	else
	{
		Interval   *iv = palloc0(sizeof(Interval));

		iv->time = st.freshness_us;
		values[7] = IntervalPGetDatum(iv);
	}
	nulls[8] = st.last_flush_at == 0;
	values[8] = TimestampTzGetDatum(st.last_flush_at);
	values[9] = CStringGetTextDatum(statuses[st.status]);
	/* the oldest change not in the sink: queued, or applied and waiting for its write */
	if (st.oldest_unwritten != 0 &&
		(st.oldest_queued_at == 0 || st.oldest_unwritten < st.oldest_queued_at))
		st.oldest_queued_at = st.oldest_unwritten;
	nulls[10] = st.oldest_queued_at == 0;
	values[10] = TimestampTzGetDatum(st.oldest_queued_at);
	values[11] = Int64GetDatum(st.refills);
	values[12] = Int64GetDatum(st.repairs);
	nulls[13] = st.last_worker == 0;
	values[13] = Int32GetDatum((int32) st.last_worker);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(desc, values, nulls)));
}

PG_FUNCTION_INFO_V1(flowpg_stream_live);

/*
 * flowpg._stream_live(flow_id): a streaming flow's rounds the worker has
 * not added to flowpg.flow_run yet (it does so once a second at most), the
 * last round's own timing, and a failed flow's next attempt -- so that
 * flow_stats shows what happened up to now, not up to the last record --
 * and what memory limits took from its state, for flowpg.memory.
 */
Datum
flowpg_stream_live(PG_FUNCTION_ARGS)
{
	TupleDesc	desc;
	Datum		values[9];
	bool		nulls[9] = {0};
	StreamStats st;
	Interval   *duration = palloc0(sizeof(Interval));

	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	if (!registry_get_stats(PG_GETARG_INT64(0), &st))
		memset(&st, 0, sizeof(st));
	values[0] = Int64GetDatum(st.unrecorded_runs);
	values[1] = Int64GetDatum(st.unrecorded_rows_in);
	values[2] = Int64GetDatum(st.unrecorded_rows_out);
	nulls[3] = nulls[4] = st.last_round_at == 0;
	values[3] = TimestampTzGetDatum(st.last_round_at);
	duration->time = st.last_round_us;
	values[4] = IntervalPGetDatum(duration);
	nulls[5] = st.retry_at == 0;
	values[5] = TimestampTzGetDatum(st.retry_at);
	values[6] = BoolGetDatum(st.degraded);
	values[7] = Int64GetDatum(st.degrades);
	values[8] = Int64GetDatum(st.evictions);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(desc, values, nulls)));
}

PG_FUNCTION_INFO_V1(flowpg_stream_floor);

/*
 * flowpg._stream_floor(flow_id): where a streaming flow's state begins
 * (windows before it are recomputed when they change, or past expire_after
 * not maintained), and whether memory took all of it.
 */
Datum
flowpg_stream_floor(PG_FUNCTION_ARGS)
{
	TupleDesc	desc;
	Datum		values[2];
	bool		nulls[2] = {0};
	StreamStats st;

	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	if (!registry_get_stats(PG_GETARG_INT64(0), &st))
		memset(&st, 0, sizeof(st));
	nulls[0] = st.state_from == 0;
	values[0] = TimestampTzGetDatum(st.state_from);
	values[1] = BoolGetDatum(st.degraded_whole);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(desc, values, nulls)));
}

PG_FUNCTION_INFO_V1(flowpg_database_memory);

/* flowpg._database_memory(): this database's state, the server's, its share. */
Datum
flowpg_database_memory(PG_FUNCTION_ARGS)
{
	TupleDesc	desc;
	Datum		values[3];
	bool		nulls[3] = {0};
	int64		database_bytes;
	int64		server_bytes;
	int64		share;

	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	state_memory_usage(MyDatabaseId, &database_bytes, &server_bytes, &share);
	values[0] = Int64GetDatum(database_bytes);
	values[1] = Int64GetDatum(server_bytes);
	values[2] = Int64GetDatum(share);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(desc, values, nulls)));
}

PG_FUNCTION_INFO_V1(flowpg_queue_bytes);

/* flowpg._queue_bytes(): the rows the server's queue area holds now. */
Datum
flowpg_queue_bytes(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT64((int64) queue_rows_bytes());
}
