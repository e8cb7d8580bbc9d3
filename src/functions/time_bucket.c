/*-------------------------------------------------------------------------
 *
 * time_bucket.c
 *	  flowpg.time_bucket: TimescaleDB's time_bucket, for flows written by
 *	  its users (timescale.c rewrites an unqualified time_bucket to these
 *	  when no time_bucket of TimescaleDB's is installed).
 *
 * A bucket is origin + k * width, the largest such time at or before ts
 * (after "offset" is taken off, and put back on the result).  As in
 * TimescaleDB: the origin is 2000-01-03 (a Monday) for widths in days and
 * smaller units, 2000-01-01 for widths in months; a timestamptz is bucketed
 * in UTC, or in the time zone given (local buckets, the result as the
 * instant of the bucket's local start); a width mixing months with days or
 * smaller units is refused; integers are bucketed as floor((ts - offset) /
 * width) * width + offset.  The widths in days and smaller units are
 * date_bin's arithmetic; timescale.c replaces the common forms in a flow's
 * query by date_bin and date_trunc themselves.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "common/int.h"
#include "datatype/timestamp.h"
#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/date.h"
#include "utils/datetime.h"
#include "utils/fmgrprotos.h"
#include "utils/timestamp.h"

#include "time_bucket.h"

PG_FUNCTION_INFO_V1(flowpg_time_bucket);
PG_FUNCTION_INFO_V1(flowpg_time_bucket_origin);
PG_FUNCTION_INFO_V1(flowpg_time_bucket_offset);
PG_FUNCTION_INFO_V1(flowpg_time_bucket_zone);
PG_FUNCTION_INFO_V1(flowpg_time_bucket_date);
PG_FUNCTION_INFO_V1(flowpg_time_bucket_date_origin);
PG_FUNCTION_INFO_V1(flowpg_time_bucket_date_offset);
PG_FUNCTION_INFO_V1(flowpg_time_bucket_int2);
PG_FUNCTION_INFO_V1(flowpg_time_bucket_int4);
PG_FUNCTION_INFO_V1(flowpg_time_bucket_int8);

Timestamp
time_bucket_default_origin(const Interval *width)
{
	/* 2000-01-03 (a Monday), or 2000-01-01 for months: PostgreSQL's epoch + 2 days */
	return width->month != 0 ? 0 : 2 * USECS_PER_DAY;
}

void
time_bucket_check_width(const Interval *width)
{
	if (width->month != 0 && (width->day != 0 || width->time != 0))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("time_bucket's width cannot mix months with days or smaller units"),
				 errdetail("A bucket is a number of months or a duration, as in TimescaleDB.")));
	if (width->month < 0 || width->day < 0 || width->time < 0 ||
		(width->month == 0 && width->day == 0 && width->time == 0))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("time_bucket's width must be positive")));
}

/* Whole months from origin to ts, rounded down (ts earlier in its month: one less). */
static int64
months_between(Timestamp origin, Timestamp ts)
{
	struct pg_tm otm;
	struct pg_tm ttm;
	fsec_t		ofsec;
	fsec_t		tfsec;
	int64		months;

	if (timestamp2tm(origin, NULL, &otm, &ofsec, NULL, NULL) != 0 ||
		timestamp2tm(ts, NULL, &ttm, &tfsec, NULL, NULL) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("timestamp out of range")));
	months = ((int64) ttm.tm_year - otm.tm_year) * MONTHS_PER_YEAR + (ttm.tm_mon - otm.tm_mon);
	/* the day and time within the month, compared */
	if (ttm.tm_mday < otm.tm_mday ||
		(ttm.tm_mday == otm.tm_mday &&
		 (((int64) ttm.tm_hour * 60 + ttm.tm_min) * 60 + ttm.tm_sec) * USECS_PER_SEC + tfsec <
		 (((int64) otm.tm_hour * 60 + otm.tm_min) * 60 + otm.tm_sec) * USECS_PER_SEC + ofsec))
		months--;
	return months;
}

static Timestamp
add_interval(Timestamp ts, Interval *span, bool subtract)
{
	return DatumGetTimestamp(DirectFunctionCall2(subtract ? timestamp_mi_interval : timestamp_pl_interval,
												 TimestampGetDatum(ts), IntervalPGetDatum(span)));
}

Timestamp
time_bucket_local(Interval *width, Timestamp ts, Timestamp origin, Interval *offset)
{
	Timestamp	bucket;

	time_bucket_check_width(width);
	if (TIMESTAMP_NOT_FINITE(ts))
		return ts;
	if (offset)
		ts = add_interval(ts, offset, true);
	if (width->month != 0)
	{
		int64		months = months_between(origin, ts);
		int64		k = months / width->month - (months % width->month < 0 ? 1 : 0);
		Interval	step = {0};

		step.month = (int32) (k * width->month);
		if (step.month != k * width->month)
			ereport(ERROR,
					(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
					 errmsg("timestamp out of range")));
		bucket = add_interval(origin, &step, false);
	}
	else
		bucket = DatumGetTimestamp(DirectFunctionCall3(timestamp_bin, IntervalPGetDatum(width),
													   TimestampGetDatum(ts),
													   TimestampGetDatum(origin)));
	return offset ? add_interval(bucket, offset, false) : bucket;
}

/*
 * Timestamps, and timestamptz without a time zone: a timestamptz is its UTC
 * time as an int64, as a timestamp is its local time, so one function
 * serves both (bucketing a timestamptz in UTC).
 */
Datum
flowpg_time_bucket(PG_FUNCTION_ARGS)
{
	Interval   *width = PG_GETARG_INTERVAL_P(0);

	PG_RETURN_TIMESTAMP(time_bucket_local(width, PG_GETARG_TIMESTAMP(1),
										  time_bucket_default_origin(width), NULL));
}

Datum
flowpg_time_bucket_origin(PG_FUNCTION_ARGS)
{
	PG_RETURN_TIMESTAMP(time_bucket_local(PG_GETARG_INTERVAL_P(0), PG_GETARG_TIMESTAMP(1),
										  PG_GETARG_TIMESTAMP(2), NULL));
}

Datum
flowpg_time_bucket_offset(PG_FUNCTION_ARGS)
{
	Interval   *width = PG_GETARG_INTERVAL_P(0);

	PG_RETURN_TIMESTAMP(time_bucket_local(width, PG_GETARG_TIMESTAMP(1),
										  time_bucket_default_origin(width),
										  PG_GETARG_INTERVAL_P(2)));
}

/* (width, ts, timezone, origin, offset): local buckets of that zone; NULL origin or offset: none */
Datum
flowpg_time_bucket_zone(PG_FUNCTION_ARGS)
{
	Interval   *width = PG_GETARG_INTERVAL_P(0);
	Datum		zone = PG_GETARG_DATUM(2);
	Timestamp	local;
	Timestamp	origin;

	local = DatumGetTimestamp(DirectFunctionCall2(timestamptz_zone, zone, PG_GETARG_DATUM(1)));
	origin = PG_ARGISNULL(3) ? time_bucket_default_origin(width) :
		DatumGetTimestamp(DirectFunctionCall2(timestamptz_zone, zone, PG_GETARG_DATUM(3)));
	local = time_bucket_local(width, local, origin, PG_ARGISNULL(4) ? NULL : PG_GETARG_INTERVAL_P(4));
	if (TIMESTAMP_NOT_FINITE(local))
		PG_RETURN_TIMESTAMPTZ(local);
	return DirectFunctionCall2(timestamp_zone, zone, TimestampGetDatum(local));
}

/* Dates: as timestamps at midnight, the result a date again. */
static Datum
bucket_date(Interval *width, DateADT day, Timestamp origin, Interval *offset)
{
	Timestamp	ts = DatumGetTimestamp(DirectFunctionCall1(date_timestamp, DateADTGetDatum(day)));

	return DirectFunctionCall1(timestamp_date,
							   TimestampGetDatum(time_bucket_local(width, ts, origin, offset)));
}

Datum
flowpg_time_bucket_date(PG_FUNCTION_ARGS)
{
	Interval   *width = PG_GETARG_INTERVAL_P(0);

	return bucket_date(width, PG_GETARG_DATEADT(1), time_bucket_default_origin(width), NULL);
}

Datum
flowpg_time_bucket_date_origin(PG_FUNCTION_ARGS)
{
	return bucket_date(PG_GETARG_INTERVAL_P(0), PG_GETARG_DATEADT(1),
					   DatumGetTimestamp(DirectFunctionCall1(date_timestamp, PG_GETARG_DATUM(2))),
					   NULL);
}

Datum
flowpg_time_bucket_date_offset(PG_FUNCTION_ARGS)
{
	Interval   *width = PG_GETARG_INTERVAL_P(0);

	return bucket_date(width, PG_GETARG_DATEADT(1), time_bucket_default_origin(width),
					   PG_GETARG_INTERVAL_P(2));
}

/* floor((ts - offset) / width) * width + offset, in int64, checked against the type's range */
static int64
bucket_integer(int64 width, int64 ts, int64 offset, int64 min, int64 max)
{
	int64		shifted;
	int64		bucket;

	if (width <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("time_bucket's width must be positive")));
	if (pg_sub_s64_overflow(ts, offset, &shifted))
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("time_bucket's time is out of range")));
	bucket = shifted - shifted % width - (shifted % width < 0 ? width : 0);
	if (pg_add_s64_overflow(bucket, offset, &bucket) || bucket < min || bucket > max)
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("time_bucket's time is out of range")));
	return bucket;
}

Datum
flowpg_time_bucket_int2(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT16((int16) bucket_integer(PG_GETARG_INT16(0), PG_GETARG_INT16(1),
										   PG_GETARG_INT16(2), PG_INT16_MIN, PG_INT16_MAX));
}

Datum
flowpg_time_bucket_int4(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT32((int32) bucket_integer(PG_GETARG_INT32(0), PG_GETARG_INT32(1),
										   PG_GETARG_INT32(2), PG_INT32_MIN, PG_INT32_MAX));
}

Datum
flowpg_time_bucket_int8(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT64(bucket_integer(PG_GETARG_INT64(0), PG_GETARG_INT64(1),
								   PG_GETARG_INT64(2), PG_INT64_MIN, PG_INT64_MAX));
}
