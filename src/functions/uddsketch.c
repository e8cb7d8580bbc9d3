/*-------------------------------------------------------------------------
 *
 * uddsketch.c
 *	  GreptimeDB's UDDSketch: flowpg.uddsketch_state(buckets, error, x),
 *	  flowpg.uddsketch_merge(buckets, error, state) and
 *	  flowpg.uddsketch_calc(q, state), quantiles that roll up.
 *
 * UDDSketch (Epicoco et al., the algorithm of TimescaleDB Toolkit's
 * uddsketch, which GreptimeDB uses) counts values in logarithmic buckets:
 * with gamma = (1 + a) / (1 - a), a value v > 0 falls in bucket
 * ceil(ln v / ln gamma), a negative one in the bucket of -v among the
 * negative buckets, 0 in a bucket of its own.  A bucket's value is
 * gamma^(k-1) * (1 + a), within relative error a of every value in it.
 * When more buckets than the maximum are used, the sketch collapses:
 * bucket k goes into bucket ceil(k / 2), gamma becomes gamma^2 and a
 * becomes 2a / (1 + a^2).  The q-quantile is the value of the bucket that
 * holds the (floor(q n) + 1)-th value in order, the largest bucket's when
 * that is n or more (the Toolkit's rule, so the figures are GreptimeDB's).
 *
 * Merging collapses the less collapsed sketch to the other's level, adds
 * the counts and collapses while there are too many buckets: the result
 * is the sketch of all the values at that level, whatever the order of
 * rows or merges.  Sketches of different maximum bucket counts or initial
 * errors are refused.
 *
 * The state (internal) is the parameters, the counts and two sorted
 * arrays of buckets (negative and positive keys); serialized (the
 * aggregate's result, a sink column) as the same fields, flowpg's own
 * bytes.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "fmgr.h"
#include "common/int.h"
#include "libpq/pqformat.h"
#include "miscadmin.h"
#include "utils/builtins.h"

PG_FUNCTION_INFO_V1(flowpg_uddsketch_trans);
PG_FUNCTION_INFO_V1(flowpg_uddsketch_merge_trans);
PG_FUNCTION_INFO_V1(flowpg_uddsketch_combine);
PG_FUNCTION_INFO_V1(flowpg_uddsketch_serialize);
PG_FUNCTION_INFO_V1(flowpg_uddsketch_deserialize);
PG_FUNCTION_INFO_V1(flowpg_uddsketch_calc);

#define UDD_FORMAT 1
#define UDD_MAX_BUCKETS 65536

typedef struct Bucket
{
	int64		key;
	int64		count;
} Bucket;

typedef struct Buckets
{
	int			n;
	int			capacity;
	Bucket	   *items;			/* by key, ascending */
} Buckets;

typedef struct UddSketch
{
	int32		max_buckets;
	double		initial_error;
	int32		collapses;
	double		error;			/* a, after the collapses */
	int64		count;
	double		sum;
	int64		zeros;
	Buckets		negative;		/* keys of -v */
	Buckets		positive;
	MemoryContext memory;
} UddSketch;

static void
check_parameters(int32 max_buckets, double error)
{
	/* collapsing leaves up to 5 buckets (keys 0 and 1 of each sign, zero) */
	if (max_buckets < 5 || max_buckets > UDD_MAX_BUCKETS)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the bucket count of a UDDSketch must be between 5 and %d, not %d",
						UDD_MAX_BUCKETS, max_buckets)));
	if (!(error > 0 && error < 1))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the error rate of a UDDSketch must be between 0 and 1, not %g", error)));
}

static UddSketch *
sketch_create(MemoryContext memory, int32 max_buckets, double error)
{
	UddSketch  *sketch = MemoryContextAllocZero(memory, sizeof(UddSketch));

	check_parameters(max_buckets, error);
	sketch->max_buckets = max_buckets;
	sketch->initial_error = error;
	sketch->error = error;
	sketch->memory = memory;
	return sketch;
}

static double
gamma_of(UddSketch *sketch)
{
	return (1.0 + sketch->error) / (1.0 - sketch->error);
}

static int
bucket_count(UddSketch *sketch)
{
	return sketch->negative.n + sketch->positive.n + (sketch->zeros > 0);
}

/* Adds count to bucket key, keeping the keys sorted. */
static void
buckets_add(UddSketch *sketch, Buckets *buckets, int64 key, int64 count)
{
	int			lo = 0;
	int			hi = buckets->n;

	while (lo < hi)
	{
		int			mid = (lo + hi) / 2;

		if (buckets->items[mid].key < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < buckets->n && buckets->items[lo].key == key)
	{
		buckets->items[lo].count += count;
		return;
	}
	if (buckets->n == buckets->capacity)
	{
		buckets->capacity = Max(16, buckets->capacity * 2);
		buckets->items = buckets->items ?
			repalloc(buckets->items, sizeof(Bucket) * buckets->capacity) :
			MemoryContextAlloc(sketch->memory, sizeof(Bucket) * buckets->capacity);
	}
	memmove(&buckets->items[lo + 1], &buckets->items[lo], sizeof(Bucket) * (buckets->n - lo));
	buckets->items[lo].key = key;
	buckets->items[lo].count = count;
	buckets->n++;
}

/* ceil(k / 2), for either sign: the key's bucket once gamma is squared. */
static int64
collapsed_key(int64 key)
{
	return key > 0 ? (key + 1) / 2 : key / 2;
}

static void
buckets_collapse(Buckets *buckets)
{
	int			out = 0;

	for (int i = 0; i < buckets->n; i++)
	{
		int64		key = collapsed_key(buckets->items[i].key);

		if (out > 0 && buckets->items[out - 1].key == key)
			buckets->items[out - 1].count += buckets->items[i].count;
		else
		{
			buckets->items[out].key = key;
			buckets->items[out].count = buckets->items[i].count;
			out++;
		}
	}
	buckets->n = out;
}

static void
collapse(UddSketch *sketch)
{
	CHECK_FOR_INTERRUPTS();
	buckets_collapse(&sketch->negative);
	buckets_collapse(&sketch->positive);
	sketch->error = 2.0 * sketch->error / (1.0 + sketch->error * sketch->error);
	sketch->collapses++;
}

static void
add_value(UddSketch *sketch, double value)
{
	if (isnan(value) || isinf(value))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("a UDDSketch cannot hold %g", value)));
	sketch->count++;
	sketch->sum += value;
	if (value == 0)
		sketch->zeros++;
	else
		buckets_add(sketch, value < 0 ? &sketch->negative : &sketch->positive,
					(int64) ceil(log(fabs(value)) / log(gamma_of(sketch))), 1);
	while (bucket_count(sketch) > sketch->max_buckets)
		collapse(sketch);
}

static void
merge(UddSketch *sketch, const UddSketch *other)
{
	UddSketch	copy = *other;

	if (sketch->max_buckets != other->max_buckets || sketch->initial_error != other->initial_error)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("cannot merge UDDSketches of different parameters: %d buckets and error %g, %d buckets and error %g",
						sketch->max_buckets, sketch->initial_error,
						other->max_buckets, other->initial_error)));
	/* the other's buckets, at this sketch's level (collapsing a copy) */
	copy.negative.items = palloc(sizeof(Bucket) * Max(other->negative.n, 1));
	copy.positive.items = palloc(sizeof(Bucket) * Max(other->positive.n, 1));
	memcpy(copy.negative.items, other->negative.items, sizeof(Bucket) * other->negative.n);
	memcpy(copy.positive.items, other->positive.items, sizeof(Bucket) * other->positive.n);
	while (sketch->collapses < copy.collapses)
		collapse(sketch);
	while (copy.collapses < sketch->collapses)
		collapse(&copy);
	for (int i = 0; i < copy.negative.n; i++)
		buckets_add(sketch, &sketch->negative, copy.negative.items[i].key, copy.negative.items[i].count);
	for (int i = 0; i < copy.positive.n; i++)
		buckets_add(sketch, &sketch->positive, copy.positive.items[i].key, copy.positive.items[i].count);
	sketch->count += copy.count;
	sketch->sum += copy.sum;
	sketch->zeros += copy.zeros;
	while (bucket_count(sketch) > sketch->max_buckets)
		collapse(sketch);
}

static bytea *
serialize(UddSketch *sketch)
{
	StringInfoData buf;

	pq_begintypsend(&buf);
	pq_sendint8(&buf, UDD_FORMAT);
	pq_sendint32(&buf, sketch->max_buckets);
	pq_sendfloat8(&buf, sketch->initial_error);
	pq_sendint32(&buf, sketch->collapses);
	pq_sendfloat8(&buf, sketch->error);
	pq_sendint64(&buf, sketch->count);
	pq_sendfloat8(&buf, sketch->sum);
	pq_sendint64(&buf, sketch->zeros);
	pq_sendint32(&buf, sketch->negative.n);
	pq_sendint32(&buf, sketch->positive.n);
	for (int i = 0; i < sketch->negative.n; i++)
	{
		pq_sendint64(&buf, sketch->negative.items[i].key);
		pq_sendint64(&buf, sketch->negative.items[i].count);
	}
	for (int i = 0; i < sketch->positive.n; i++)
	{
		pq_sendint64(&buf, sketch->positive.items[i].key);
		pq_sendint64(&buf, sketch->positive.items[i].count);
	}
	return pq_endtypsend(&buf);
}

static void
refuse_sketch(const char *why)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
			 errmsg("invalid UDDSketch: %s", why),
			 errhint("Pass a value made by flowpg.uddsketch_state or flowpg.uddsketch_merge.")));
}

static void
read_buckets(StringInfo buf, UddSketch *sketch, Buckets *buckets, int n)
{
	int64		previous = PG_INT64_MIN;

	for (int i = 0; i < n; i++)
	{
		int64		key = pq_getmsgint64(buf);
		int64		count = pq_getmsgint64(buf);

		if (key <= previous || count <= 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
					 errmsg("invalid UDDSketch: its buckets are out of order or empty"),
					 errhint("Pass a value made by flowpg.uddsketch_state or flowpg.uddsketch_merge.")));
		previous = key;
		buckets_add(sketch, buckets, key, count);
	}
}

static UddSketch *
deserialize(MemoryContext memory, bytea *bytes)
{
	StringInfoData buf;
	UddSketch  *sketch;
	int32		max_buckets;
	double		initial_error;
	int			nnegative;
	int			npositive;

	buf.data = VARDATA_ANY(bytes);
	buf.len = VARSIZE_ANY_EXHDR(bytes);
	buf.maxlen = buf.len;
	buf.cursor = 0;
	if (buf.len < 1 || pq_getmsgint(&buf, 1) != UDD_FORMAT)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
				 errmsg("invalid UDDSketch: unknown format"),
				 errhint("Pass a value made by flowpg.uddsketch_state or flowpg.uddsketch_merge.")));
	max_buckets = pq_getmsgint(&buf, 4);
	initial_error = pq_getmsgfloat8(&buf);
	sketch = sketch_create(memory, max_buckets, initial_error);
	sketch->collapses = pq_getmsgint(&buf, 4);
	(void) pq_getmsgfloat8(&buf);	/* the error, derived below */
	sketch->count = pq_getmsgint64(&buf);
	sketch->sum = pq_getmsgfloat8(&buf);
	sketch->zeros = pq_getmsgint64(&buf);
	if (sketch->collapses < 0 || sketch->collapses > 64 || sketch->count < 0 || sketch->zeros < 0)
		refuse_sketch("its counts are out of range");
	for (int i = 0; i < sketch->collapses; i++)
		sketch->error = 2.0 * sketch->error / (1.0 + sketch->error * sketch->error);
	nnegative = pq_getmsgint(&buf, 4);
	npositive = pq_getmsgint(&buf, 4);
	if (nnegative < 0 || npositive < 0 || nnegative + npositive > max_buckets)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
				 errmsg("invalid UDDSketch: more buckets than its maximum")));
	read_buckets(&buf, sketch, &sketch->negative, nnegative);
	read_buckets(&buf, sketch, &sketch->positive, npositive);
	pq_getmsgend(&buf);
	{
		/* the counts add up: uddsketch_calc walks the buckets by them */
		int64		total = sketch->zeros;

		for (int i = 0; i < sketch->negative.n; i++)
			if (pg_add_s64_overflow(total, sketch->negative.items[i].count, &total))
				refuse_sketch("its counts are out of range");
		for (int i = 0; i < sketch->positive.n; i++)
			if (pg_add_s64_overflow(total, sketch->positive.items[i].count, &total))
				refuse_sketch("its counts are out of range");
		if (total != sketch->count)
			refuse_sketch("its bucket counts do not add up to its count");
	}
	return sketch;
}

static MemoryContext
aggregate_memory(FunctionCallInfo fcinfo)
{
	MemoryContext aggcontext;

	if (!AggCheckCallContext(fcinfo, &aggcontext))
		elog(ERROR, "a UDDSketch aggregate called in a non-aggregate context");
	return aggcontext;
}

/* uddsketch_state(buckets, error, x): NULL values are not counted. */
Datum
flowpg_uddsketch_trans(PG_FUNCTION_ARGS)
{
	UddSketch  *sketch;

	if (PG_ARGISNULL(1) || PG_ARGISNULL(2))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("the bucket count and error rate of a UDDSketch cannot be NULL")));
	sketch = PG_ARGISNULL(0) ?
		sketch_create(aggregate_memory(fcinfo), PG_GETARG_INT32(1), PG_GETARG_FLOAT8(2)) :
		(UddSketch *) PG_GETARG_POINTER(0);
	if (!PG_ARGISNULL(3))
		add_value(sketch, PG_GETARG_FLOAT8(3));
	PG_RETURN_POINTER(sketch);
}

/* uddsketch_merge(buckets, error, state): NULL states are skipped. */
Datum
flowpg_uddsketch_merge_trans(PG_FUNCTION_ARGS)
{
	MemoryContext memory = aggregate_memory(fcinfo);
	UddSketch  *sketch;

	if (PG_ARGISNULL(1) || PG_ARGISNULL(2))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("the bucket count and error rate of a UDDSketch cannot be NULL")));
	sketch = PG_ARGISNULL(0) ?
		sketch_create(memory, PG_GETARG_INT32(1), PG_GETARG_FLOAT8(2)) :
		(UddSketch *) PG_GETARG_POINTER(0);
	if (!PG_ARGISNULL(3))
	{
		/* read in the call's memory; the buckets grow in the sketch's own */
		merge(sketch, deserialize(CurrentMemoryContext, PG_GETARG_BYTEA_PP(3)));
	}
	PG_RETURN_POINTER(sketch);
}

Datum
flowpg_uddsketch_combine(PG_FUNCTION_ARGS)
{
	MemoryContext memory = aggregate_memory(fcinfo);
	UddSketch  *other;
	UddSketch  *sketch;

	if (PG_ARGISNULL(1))
		PG_RETURN_DATUM(PG_GETARG_DATUM(0));
	other = (UddSketch *) PG_GETARG_POINTER(1);
	if (PG_ARGISNULL(0))
		sketch = sketch_create(memory, other->max_buckets, other->initial_error);
	else
		sketch = (UddSketch *) PG_GETARG_POINTER(0);
	merge(sketch, other);
	PG_RETURN_POINTER(sketch);
}

/* The serialization, and the final function. */
Datum
flowpg_uddsketch_serialize(PG_FUNCTION_ARGS)
{
	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	PG_RETURN_BYTEA_P(serialize((UddSketch *) PG_GETARG_POINTER(0)));
}

Datum
flowpg_uddsketch_deserialize(PG_FUNCTION_ARGS)
{
	PG_RETURN_POINTER(deserialize(CurrentMemoryContext, PG_GETARG_BYTEA_PP(0)));
}

/* uddsketch_calc(q, state): NULL for a sketch of no value. */
Datum
flowpg_uddsketch_calc(PG_FUNCTION_ARGS)
{
	double		q = PG_GETARG_FLOAT8(0);
	UddSketch  *sketch = deserialize(CurrentMemoryContext, PG_GETARG_BYTEA_PP(1));
	double		gamma = gamma_of(sketch);
	int64		remaining;

	if (!(q >= 0 && q <= 1))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("a quantile must be between 0 and 1, not %g", q)));
	if (sketch->count == 0)
		PG_RETURN_NULL();
	remaining = (int64) (sketch->count * q) + 1;
	/* the largest bucket's value: the positive, zero or negative end */
	if (remaining >= sketch->count)
	{
		if (sketch->positive.n > 0)
			PG_RETURN_FLOAT8(pow(gamma, sketch->positive.items[sketch->positive.n - 1].key - 1) *
							 (1.0 + sketch->error));
		if (sketch->zeros > 0)
			PG_RETURN_FLOAT8(0.0);
		PG_RETURN_FLOAT8(-pow(gamma, sketch->negative.items[0].key - 1) * (1.0 + sketch->error));
	}
	/* negative buckets from the largest magnitude, zero, positive ascending */
	for (int i = sketch->negative.n - 1; i >= 0; i--)
	{
		if (remaining <= sketch->negative.items[i].count)
			PG_RETURN_FLOAT8(-pow(gamma, sketch->negative.items[i].key - 1) * (1.0 + sketch->error));
		remaining -= sketch->negative.items[i].count;
	}
	if (sketch->zeros > 0)
	{
		if (remaining <= sketch->zeros)
			PG_RETURN_FLOAT8(0.0);
		remaining -= sketch->zeros;
	}
	for (int i = 0; i < sketch->positive.n; i++)
	{
		if (remaining <= sketch->positive.items[i].count)
			PG_RETURN_FLOAT8(pow(gamma, sketch->positive.items[i].key - 1) * (1.0 + sketch->error));
		remaining -= sketch->positive.items[i].count;
	}
	elog(ERROR, "a UDDSketch's counts do not add up");
	PG_RETURN_NULL();
}
