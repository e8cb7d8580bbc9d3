/*-------------------------------------------------------------------------
 *
 * prom_range.c
 *	  PromQL's range functions over a series' samples, as aggregates:
 *	  flowpg.prom_rate, prom_increase, prom_delta (Prometheus's
 *	  extrapolation) and flowpg.prom_irate, prom_idelta (the last two
 *	  samples).
 *
 * prom_rate(ts, value, range_start, range_end) is rate(x[range]) evaluated
 * at range_end for the samples of one series in (range_start, range_end]:
 * the caller groups by series and evaluation time and selects the samples.
 * As in Prometheus (promql/functions.go, extrapolatedRate):
 *	- fewer than two samples: NULL (Prometheus drops the element);
 *	- the difference of the last and first values, plus, for counters
 *	  (rate, increase), every value that a smaller one follows (a reset);
 *	- extrapolated to the range's edges where the first or last sample is
 *	  within 1.1 times the average interval between samples of them, else
 *	  by half that average; a counter's extrapolation to the start stops
 *	  where it would reach zero;
 *	- rate divides by the range's length in seconds.
 * prom_irate and prom_idelta use the last two samples: irate is their
 * difference per second, or the last value per second after a reset.
 *
 * The state (internal) is the samples; they are ordered by time at the
 * end, so rows may come in any order and partial states combine.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "libpq/pqformat.h"
#include "utils/builtins.h"
#include "utils/float.h"
#include "utils/timestamp.h"

PG_FUNCTION_INFO_V1(flowpg_prom_samples_trans);
PG_FUNCTION_INFO_V1(flowpg_prom_samples_combine);
PG_FUNCTION_INFO_V1(flowpg_prom_samples_serialize);
PG_FUNCTION_INFO_V1(flowpg_prom_samples_deserialize);
PG_FUNCTION_INFO_V1(flowpg_prom_rate_final);
PG_FUNCTION_INFO_V1(flowpg_prom_increase_final);
PG_FUNCTION_INFO_V1(flowpg_prom_delta_final);
PG_FUNCTION_INFO_V1(flowpg_prom_irate_final);
PG_FUNCTION_INFO_V1(flowpg_prom_idelta_final);

typedef struct Sample
{
	TimestampTz ts;
	double		value;
} Sample;

typedef struct Samples
{
	MemoryContext memory;
	TimestampTz range_start;
	TimestampTz range_end;
	bool		has_range;
	int			n;
	int			capacity;
	Sample	   *items;
} Samples;

static Samples *
samples_new(MemoryContext memory)
{
	Samples    *s = MemoryContextAllocZero(memory, sizeof(Samples));

	s->memory = memory;
	return s;
}

static void
samples_add(Samples *s, TimestampTz ts, double value)
{
	if (s->n == s->capacity)
	{
		s->capacity = Max(8, s->capacity * 2);
		s->items = s->items ? repalloc(s->items, sizeof(Sample) * s->capacity) :
			MemoryContextAlloc(s->memory, sizeof(Sample) * s->capacity);
	}
	s->items[s->n].ts = ts;
	s->items[s->n].value = value;
	s->n++;
}

static void
set_range(Samples *s, bool has_range, TimestampTz start, TimestampTz end)
{
	if (!has_range)
		return;
	if (s->has_range && (s->range_start != start || s->range_end != end))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the range of a PromQL range function must be the same for every sample of a group"),
				 errhint("Group by the evaluation time the range ends at.")));
	if (end <= start)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the range of a PromQL range function must end after it starts")));
	s->has_range = true;
	s->range_start = start;
	s->range_end = end;
}

/* (ts, value[, range_start, range_end]): NULL samples are no samples. */
Datum
flowpg_prom_samples_trans(PG_FUNCTION_ARGS)
{
	MemoryContext aggcontext;
	Samples    *s;

	if (!AggCheckCallContext(fcinfo, &aggcontext))
		elog(ERROR, "a PromQL range function called in a non-aggregate context");
	s = PG_ARGISNULL(0) ? samples_new(aggcontext) : (Samples *) PG_GETARG_POINTER(0);
	if (PG_NARGS() > 3)
		set_range(s, !PG_ARGISNULL(3) && !PG_ARGISNULL(4),
				  PG_ARGISNULL(3) ? 0 : PG_GETARG_TIMESTAMPTZ(3),
				  PG_ARGISNULL(4) ? 0 : PG_GETARG_TIMESTAMPTZ(4));
	if (!PG_ARGISNULL(1) && !PG_ARGISNULL(2))
		samples_add(s, PG_GETARG_TIMESTAMPTZ(1), PG_GETARG_FLOAT8(2));
	PG_RETURN_POINTER(s);
}

Datum
flowpg_prom_samples_combine(PG_FUNCTION_ARGS)
{
	MemoryContext aggcontext;
	Samples    *s;
	Samples    *other;

	if (!AggCheckCallContext(fcinfo, &aggcontext))
		elog(ERROR, "a PromQL range function called in a non-aggregate context");
	if (PG_ARGISNULL(1))
		PG_RETURN_DATUM(PG_GETARG_DATUM(0));
	other = (Samples *) PG_GETARG_POINTER(1);
	s = PG_ARGISNULL(0) ? samples_new(aggcontext) : (Samples *) PG_GETARG_POINTER(0);
	set_range(s, other->has_range, other->range_start, other->range_end);
	for (int i = 0; i < other->n; i++)
		samples_add(s, other->items[i].ts, other->items[i].value);
	PG_RETURN_POINTER(s);
}

Datum
flowpg_prom_samples_serialize(PG_FUNCTION_ARGS)
{
	Samples    *s = (Samples *) PG_GETARG_POINTER(0);
	StringInfoData buf;

	pq_begintypsend(&buf);
	pq_sendbyte(&buf, s->has_range);
	pq_sendint64(&buf, s->range_start);
	pq_sendint64(&buf, s->range_end);
	pq_sendint32(&buf, s->n);
	for (int i = 0; i < s->n; i++)
	{
		pq_sendint64(&buf, s->items[i].ts);
		pq_sendfloat8(&buf, s->items[i].value);
	}
	PG_RETURN_BYTEA_P(pq_endtypsend(&buf));
}

Datum
flowpg_prom_samples_deserialize(PG_FUNCTION_ARGS)
{
	bytea	   *bytes = PG_GETARG_BYTEA_PP(0);
	StringInfoData buf;
	Samples    *s = samples_new(CurrentMemoryContext);
	int			n;

	buf.data = VARDATA_ANY(bytes);
	buf.len = VARSIZE_ANY_EXHDR(bytes);
	buf.maxlen = buf.len;
	buf.cursor = 0;
	s->has_range = pq_getmsgbyte(&buf) != 0;
	s->range_start = pq_getmsgint64(&buf);
	s->range_end = pq_getmsgint64(&buf);
	n = pq_getmsgint(&buf, 4);
	for (int i = 0; i < n; i++)
	{
		TimestampTz ts = pq_getmsgint64(&buf);

		samples_add(s, ts, pq_getmsgfloat8(&buf));
	}
	pq_getmsgend(&buf);
	PG_RETURN_POINTER(s);
}

static int
compare_samples(const void *a, const void *b)
{
	const Sample *x = a;
	const Sample *y = b;

	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	/* equal times (not Prometheus's): by value, for one answer whatever the order */
	return x->value < y->value ? -1 : x->value > y->value;
}

/* The samples in time order; NULL when fewer than two. */
static Samples *
ordered_samples(FunctionCallInfo fcinfo)
{
	Samples    *s;

	if (PG_ARGISNULL(0))
		return NULL;
	s = (Samples *) PG_GETARG_POINTER(0);
	if (s->n < 2)
		return NULL;
	qsort(s->items, s->n, sizeof(Sample), compare_samples);
	return s;
}

static double
seconds(TimestampTz usecs)
{
	return (double) usecs / USECS_PER_SEC;
}

/* Prometheus's extrapolatedRate for float samples. */
static Datum
extrapolated(FunctionCallInfo fcinfo, bool is_counter, bool is_rate)
{
	Samples    *s = ordered_samples(fcinfo);
	Sample	   *first;
	Sample	   *last;
	double		result;
	double		to_start;
	double		to_end;
	double		sampled;
	double		average;
	double		threshold;
	double		factor;

	if (s == NULL)
		PG_RETURN_NULL();
	if (!s->has_range)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("the range of a PromQL range function cannot be NULL")));
	first = &s->items[0];
	last = &s->items[s->n - 1];
	result = last->value - first->value;
	if (is_counter)
		for (int i = 1; i < s->n; i++)
			if (s->items[i].value < s->items[i - 1].value)
				result += s->items[i - 1].value;

	to_start = seconds(first->ts - s->range_start);
	to_end = seconds(s->range_end - last->ts);
	sampled = seconds(last->ts - first->ts);
	if (sampled <= 0)
		PG_RETURN_NULL();		/* every sample at one time */
	average = sampled / (s->n - 1);
	threshold = average * 1.1;
	if (to_start >= threshold)
		to_start = average / 2;
	if (is_counter && result > 0 && first->value >= 0)
	{
		/* a counter starts at zero: no extrapolation below it */
		double		to_zero = sampled * (first->value / result);

		if (to_zero < to_start)
			to_start = to_zero;
	}
	if (to_end >= threshold)
		to_end = average / 2;
	factor = (sampled + to_start + to_end) / sampled;
	if (is_rate)
		factor /= seconds(s->range_end - s->range_start);
	PG_RETURN_FLOAT8(result * factor);
}

Datum
flowpg_prom_rate_final(PG_FUNCTION_ARGS)
{
	return extrapolated(fcinfo, true, true);
}

Datum
flowpg_prom_increase_final(PG_FUNCTION_ARGS)
{
	return extrapolated(fcinfo, true, false);
}

Datum
flowpg_prom_delta_final(PG_FUNCTION_ARGS)
{
	return extrapolated(fcinfo, false, false);
}

/* Prometheus's instantValue for float samples: the last two. */
static Datum
instant(FunctionCallInfo fcinfo, bool is_rate)
{
	Samples    *s = ordered_samples(fcinfo);
	Sample	   *previous;
	Sample	   *last;
	double		result;

	if (s == NULL)
		PG_RETURN_NULL();
	previous = &s->items[s->n - 2];
	last = &s->items[s->n - 1];
	if (last->ts == previous->ts)
		PG_RETURN_NULL();
	/* after a counter's reset, the last value is the increase */
	result = is_rate && last->value < previous->value ? last->value :
		last->value - previous->value;
	if (is_rate)
		result /= seconds(last->ts - previous->ts);
	PG_RETURN_FLOAT8(result);
}

Datum
flowpg_prom_irate_final(PG_FUNCTION_ARGS)
{
	return instant(fcinfo, true);
}

Datum
flowpg_prom_idelta_final(PG_FUNCTION_ARGS)
{
	return instant(fcinfo, false);
}

/*
 * histogram_quantile(q, buckets) of one group of a classic histogram's
 * series: flowpg.prom_histogram_quantile(q, le, count) over the group's
 * buckets, as Prometheus's bucketQuantile: buckets ordered by their upper
 * bound le (text, '+Inf' too), equal bounds added up, counts made
 * non-decreasing; NaN without a +Inf bucket, with fewer than two buckets
 * or no observation; -Inf / +Inf for q below 0 / above 1; else the
 * bucket holding the rank q x count, interpolated linearly within it (the
 * +Inf bucket gives the bound below it; a first bucket whose bound is not
 * above 0 gives that bound).
 */
PG_FUNCTION_INFO_V1(flowpg_prom_buckets_trans);
PG_FUNCTION_INFO_V1(flowpg_prom_histogram_quantile_final);

Datum
flowpg_prom_buckets_trans(PG_FUNCTION_ARGS)
{
	MemoryContext aggcontext;
	Samples    *s;
	char	   *le;
	double		bound;

	if (!AggCheckCallContext(fcinfo, &aggcontext))
		elog(ERROR, "histogram_quantile called in a non-aggregate context");
	s = PG_ARGISNULL(0) ? samples_new(aggcontext) : (Samples *) PG_GETARG_POINTER(0);
	/* the quantile: the same in every row of a group (kept as the range's start) */
	if (!PG_ARGISNULL(1))
	{
		double		q = PG_GETARG_FLOAT8(1);
		int64		bits;

		memcpy(&bits, &q, sizeof(bits));
		set_range(s, true, bits, bits == PG_INT64_MAX ? bits : bits + 1);
	}
	if (PG_ARGISNULL(2) || PG_ARGISNULL(3))
		PG_RETURN_POINTER(s);
	le = TextDatumGetCString(PG_GETARG_DATUM(2));
	if (pg_strcasecmp(le, "+Inf") == 0 || pg_strcasecmp(le, "Inf") == 0)
		bound = get_float8_infinity();
	else
		bound = float8in_internal(le, NULL, "double precision", le);
	/* the bound as the sample's time: ordered and combined as samples are */
	{
		int64		key;

		memcpy(&key, &bound, sizeof(key));
		samples_add(s, key, PG_GETARG_FLOAT8(3));
		s->items[s->n - 1].ts = key;
	}
	PG_RETURN_POINTER(s);
}

static int
compare_buckets(const void *a, const void *b)
{
	double		x;
	double		y;

	memcpy(&x, &((const Sample *) a)->ts, sizeof(x));
	memcpy(&y, &((const Sample *) b)->ts, sizeof(y));
	return x < y ? -1 : x > y;
}

Datum
flowpg_prom_histogram_quantile_final(PG_FUNCTION_ARGS)
{
	Samples    *s;
	double	   *bounds;
	double	   *counts;
	int			n = 0;
	double		q;
	double		rank;
	double		start;
	double		count;
	int			b;

	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	s = (Samples *) PG_GETARG_POINTER(0);
	if (!s->has_range || s->n == 0)
		PG_RETURN_NULL();
	memcpy(&q, &s->range_start, sizeof(q));
	if (isnan(q))
		PG_RETURN_FLOAT8(get_float8_nan());
	if (q < 0)
		PG_RETURN_FLOAT8(-get_float8_infinity());
	if (q > 1)
		PG_RETURN_FLOAT8(get_float8_infinity());
	qsort(s->items, s->n, sizeof(Sample), compare_buckets);
	bounds = palloc(sizeof(double) * s->n);
	counts = palloc(sizeof(double) * s->n);
	for (int i = 0; i < s->n; i++)
	{
		double		bound;

		memcpy(&bound, &s->items[i].ts, sizeof(bound));
		if (n > 0 && bounds[n - 1] == bound)
			counts[n - 1] += s->items[i].value;		/* one bucket, twice */
		else
		{
			bounds[n] = bound;
			counts[n++] = s->items[i].value;
		}
	}
	if (n < 2 || !isinf(bounds[n - 1]) || bounds[n - 1] < 0)
		PG_RETURN_FLOAT8(get_float8_nan());
	for (int i = 1; i < n; i++)
		if (counts[i] < counts[i - 1])
			counts[i] = counts[i - 1];	/* non-decreasing, as Prometheus makes them */
	if (counts[n - 1] == 0)
		PG_RETURN_FLOAT8(get_float8_nan());
	rank = q * counts[n - 1];
	for (b = 0; b < n - 1 && counts[b] < rank; b++)
		;
	if (b == n - 1)
		PG_RETURN_FLOAT8(bounds[n - 2]);
	if (b == 0 && bounds[0] <= 0)
		PG_RETURN_FLOAT8(bounds[0]);
	start = b == 0 ? 0 : bounds[b - 1];
	count = counts[b];
	if (b > 0)
	{
		rank -= counts[b - 1];
		count -= counts[b - 1];
	}
	PG_RETURN_FLOAT8(start + (bounds[b] - start) * (rank / count));
}
