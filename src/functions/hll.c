/*-------------------------------------------------------------------------
 *
 * hll.c
 *	  GreptimeDB's HyperLogLog sketch: flowpg.hll(x), flowpg.hll_merge(state)
 *	  and flowpg.hll_count(state), distinct counts that roll up.
 *
 * hll(x) is an aggregate whose result is a sketch (bytea) of the distinct
 * values of x; hll_merge(state) merges sketches (a flow over a sink of
 * sketches: per-minute sketches into hourly ones); hll_count(state) is the
 * estimated number of distinct values.  Precision 14, as GreptimeDB's:
 * 2^14 registers, a standard error of about 0.8%.  While a sketch holds
 * few values it keeps them as HyperLogLog++ does, in 2^25 sparse
 * registers, counted almost exactly (a few thousand values).
 *
 * A value's hash is its type's extended hash (the one hash partitioning
 * uses), seed 0: values equal under the type's "=" are one value.  The
 * first 14 bits (25, sparse) choose the register; the register keeps the
 * largest position of the first 1 bit in the remaining bits.  Merging
 * keeps each register's largest value, so merged sketches equal the sketch
 * of all the values: exact per sketch, whatever the order of rows or
 * merges.
 *
 * The state (internal) is the registers; serialized (the aggregate's
 * result, a sink column) as a format byte, then either the sparse
 * registers as 4-byte (index, rank) entries in index order, or the 2^14
 * dense registers.  The sketches are flowpg's own bytes, not GreptimeDB's.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "fmgr.h"
#include "port/pg_bitutils.h"
#include "port/pg_bswap.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/typcache.h"

#define HLL_PRECISION 14
#define HLL_REGISTERS (1 << HLL_PRECISION)
#define HLL_SPARSE_PRECISION 25
#define HLL_SPARSE_MAX 4096		/* entries; then dense: 16 kB either way */
#define HLL_SPARSE 's'
#define HLL_DENSE 'd'

PG_FUNCTION_INFO_V1(flowpg_hll_trans);
PG_FUNCTION_INFO_V1(flowpg_hll_merge_trans);
PG_FUNCTION_INFO_V1(flowpg_hll_combine);
PG_FUNCTION_INFO_V1(flowpg_hll_serialize);
PG_FUNCTION_INFO_V1(flowpg_hll_deserialize);
PG_FUNCTION_INFO_V1(flowpg_hll_count);

/*
 * Sparse while few (HyperLogLog++'s sparse representation): a register
 * per 25-bit index, kept as (index << 6 | rank) in an open-addressing
 * table, which counts a few thousand values almost exactly; dense past
 * HLL_SPARSE_MAX of them.  Which representation a sketch has depends only
 * on its values, so a merged sketch is byte for byte the sketch of all.
 */
typedef struct HllState
{
	MemoryContext memory;
	int			nsparse;
	int			capacity;		/* of sparse, a power of two, at most half full */
	uint32	   *sparse;			/* 0: an empty slot */
	uint8	   *registers;		/* NULL while sparse */
} HllState;

static HllState *
state_new(MemoryContext memory)
{
	HllState   *state = MemoryContextAllocZero(memory, sizeof(HllState));

	state->memory = memory;
	state->capacity = 16;
	state->sparse = MemoryContextAllocZero(memory, sizeof(uint32) * state->capacity);
	return state;
}

static HllState *
state_create(FunctionCallInfo fcinfo)
{
	MemoryContext aggcontext;

	if (!AggCheckCallContext(fcinfo, &aggcontext))
		elog(ERROR, "flowpg.hll called in a non-aggregate context");
	return state_new(aggcontext);
}

/* The rank of the first 1 bit of the top bits of value (1 = the top bit). */
static uint8
rank_of(uint64 value)
{
	return (uint8) (pg_leftmost_one_pos64(value) ^ 63) + 1;
}

static void
dense_add(HllState *state, uint32 index, uint8 rank)
{
	if (rank > state->registers[index])
		state->registers[index] = rank;
}

/* A sparse register into the dense ones: its index's low bits rank first. */
static void
dense_add_sparse(HllState *state, uint32 entry)
{
	uint32		index = entry >> 6;
	uint32		low = index & ((1 << (HLL_SPARSE_PRECISION - HLL_PRECISION)) - 1);
	uint8		rank;

	if (low != 0)
		rank = rank_of((uint64) low << (64 - (HLL_SPARSE_PRECISION - HLL_PRECISION)));
	else
		rank = (HLL_SPARSE_PRECISION - HLL_PRECISION) + (entry & 0x3F);
	dense_add(state, index >> (HLL_SPARSE_PRECISION - HLL_PRECISION), rank);
}

static void
make_dense(HllState *state)
{
	state->registers = MemoryContextAllocZero(state->memory, HLL_REGISTERS);
	for (int i = 0; i < state->capacity; i++)
		if (state->sparse[i] != 0)
			dense_add_sparse(state, state->sparse[i]);
	pfree(state->sparse);
	state->sparse = NULL;
	state->capacity = 0;
	state->nsparse = 0;
}

static void sparse_add(HllState *state, uint32 entry);

static void
sparse_grow(HllState *state)
{
	uint32	   *old = state->sparse;
	int			old_capacity = state->capacity;

	state->capacity *= 2;
	state->sparse = MemoryContextAllocZero(state->memory, sizeof(uint32) * state->capacity);
	state->nsparse = 0;
	for (int i = 0; i < old_capacity; i++)
		if (old[i] != 0)
			sparse_add(state, old[i]);
	pfree(old);
}

static void
sparse_add(HllState *state, uint32 entry)
{
	uint32		index = entry >> 6;
	uint32		slot;

	if (state->registers)
	{
		dense_add_sparse(state, entry);
		return;
	}
	slot = (index * 2654435761u) & (state->capacity - 1);
	while (state->sparse[slot] != 0 && (state->sparse[slot] >> 6) != index)
		slot = (slot + 1) & (state->capacity - 1);
	if (state->sparse[slot] == 0)
	{
		state->sparse[slot] = entry;
		if (++state->nsparse > HLL_SPARSE_MAX)
			make_dense(state);
		else if (state->nsparse * 2 > state->capacity)
			sparse_grow(state);
	}
	else if ((entry & 0x3F) > (state->sparse[slot] & 0x3F))
		state->sparse[slot] = entry;
}

static void
add_hash(HllState *state, uint64 hash)
{
	uint32		index = (uint32) (hash >> (64 - HLL_SPARSE_PRECISION));
	uint64		rest = (hash << HLL_SPARSE_PRECISION) | ((uint64) 1 << (HLL_SPARSE_PRECISION - 1));

	sparse_add(state, (index << 6) | rank_of(rest));
}

static void
merge_state(HllState *state, HllState *other)
{
	if (other->registers)
	{
		if (!state->registers)
			make_dense(state);
		for (int i = 0; i < HLL_REGISTERS; i++)
			dense_add(state, i, other->registers[i]);
	}
	else
		for (int i = 0; i < other->capacity; i++)
			if (other->sparse[i] != 0)
				sparse_add(state, other->sparse[i]);
}

static void
refuse_sketch(const char *why)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
			 errmsg("invalid HyperLogLog sketch: %s", why),
			 errhint("Pass a value made by flowpg.hll or flowpg.hll_merge.")));
}

/* Merges serialized sketch bytes into state. */
static void
merge_bytes(HllState *state, bytea *sketch)
{
	const uint8 *data = (const uint8 *) VARDATA_ANY(sketch);
	Size		len = VARSIZE_ANY_EXHDR(sketch);

	if (len < 1)
		refuse_sketch("it is empty");
	if (data[0] == HLL_DENSE)
	{
		if (len != 1 + HLL_REGISTERS)
			refuse_sketch("a dense sketch has the wrong length");
		if (!state->registers)
			make_dense(state);
		for (int i = 0; i < HLL_REGISTERS; i++)
		{
			if (data[1 + i] > 64 - HLL_PRECISION + 1)
				refuse_sketch("a register is out of range");
			dense_add(state, i, data[1 + i]);
		}
	}
	else if (data[0] == HLL_SPARSE)
	{
		if ((len - 1) % 4 != 0)
			refuse_sketch("a sparse sketch has the wrong length");
		for (Size p = 1; p < len; p += 4)
		{
			uint32		entry;

			memcpy(&entry, data + p, sizeof(entry));	/* unaligned */
			entry = pg_ntoh32(entry);
			if ((entry >> 6) >= (1U << HLL_SPARSE_PRECISION) ||
				(entry & 0x3F) == 0 || (entry & 0x3F) > 64 - HLL_SPARSE_PRECISION + 1)
				refuse_sketch("a register is out of range");
			sparse_add(state, entry);
		}
	}
	else
		refuse_sketch("unknown format");
}

static int
compare_entries(const void *a, const void *b)
{
	uint32		x = *(const uint32 *) a;
	uint32		y = *(const uint32 *) b;

	return x < y ? -1 : x > y;
}

static bytea *
serialize(HllState *state)
{
	bytea	   *result;
	uint8	   *out;

	if (state->registers)
	{
		result = palloc(VARHDRSZ + 1 + HLL_REGISTERS);
		SET_VARSIZE(result, VARHDRSZ + 1 + HLL_REGISTERS);
		out = (uint8 *) VARDATA(result);
		out[0] = HLL_DENSE;
		memcpy(out + 1, state->registers, HLL_REGISTERS);
	}
	else
	{
		uint32	   *entries = palloc(sizeof(uint32) * Max(state->nsparse, 1));
		int			n = 0;

		for (int i = 0; i < state->capacity; i++)
			if (state->sparse[i] != 0)
				entries[n++] = state->sparse[i];
		/* in index order: one set of registers, one byte string */
		qsort(entries, n, sizeof(uint32), compare_entries);
		result = palloc(VARHDRSZ + 1 + n * 4);
		SET_VARSIZE(result, VARHDRSZ + 1 + n * 4);
		out = (uint8 *) VARDATA(result);
		*out++ = HLL_SPARSE;
		for (int i = 0; i < n; i++)
		{
			uint32		be = pg_hton32(entries[i]);

			memcpy(out + i * 4, &be, 4);
		}
	}
	return result;
}

/* The value's 64-bit hash by its type's extended hash function (fn_extra). */
static uint64
value_hash(FunctionCallInfo fcinfo, Datum value)
{
	FmgrInfo   *hash = fcinfo->flinfo->fn_extra;

	if (hash == NULL)
	{
		Oid			type = get_fn_expr_argtype(fcinfo->flinfo, 1);
		TypeCacheEntry *entry = lookup_type_cache(type, TYPECACHE_HASH_EXTENDED_PROC_FINFO);

		if (!OidIsValid(entry->hash_extended_proc))
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_FUNCTION),
					 errmsg("flowpg.hll cannot hash type %s", format_type_be(type)),
					 errhint("Cast the value to a type with a hash operator class, such as text.")));
		hash = MemoryContextAlloc(fcinfo->flinfo->fn_mcxt, sizeof(FmgrInfo));
		fmgr_info_copy(hash, &entry->hash_extended_proc_finfo, fcinfo->flinfo->fn_mcxt);
		fcinfo->flinfo->fn_extra = hash;
	}
	return DatumGetUInt64(FunctionCall2Coll(hash, PG_GET_COLLATION(), value, UInt64GetDatum(0)));
}

/* hll(x): NULL values are not counted. */
Datum
flowpg_hll_trans(PG_FUNCTION_ARGS)
{
	HllState   *state = PG_ARGISNULL(0) ? state_create(fcinfo) : (HllState *) PG_GETARG_POINTER(0);

	if (!PG_ARGISNULL(1))
		add_hash(state, value_hash(fcinfo, PG_GETARG_DATUM(1)));
	PG_RETURN_POINTER(state);
}

/* hll_merge(state): NULL sketches are skipped. */
Datum
flowpg_hll_merge_trans(PG_FUNCTION_ARGS)
{
	HllState   *state = PG_ARGISNULL(0) ? state_create(fcinfo) : (HllState *) PG_GETARG_POINTER(0);

	if (!PG_ARGISNULL(1))
		merge_bytes(state, PG_GETARG_BYTEA_PP(1));
	PG_RETURN_POINTER(state);
}

Datum
flowpg_hll_combine(PG_FUNCTION_ARGS)
{
	HllState   *state;

	if (PG_ARGISNULL(1))
		PG_RETURN_DATUM(PG_GETARG_DATUM(0));
	state = PG_ARGISNULL(0) ? state_create(fcinfo) : (HllState *) PG_GETARG_POINTER(0);
	merge_state(state, (HllState *) PG_GETARG_POINTER(1));
	PG_RETURN_POINTER(state);
}

/* The serialization, and the final function (the sketch of no value when none). */
Datum
flowpg_hll_serialize(PG_FUNCTION_ARGS)
{
	if (PG_ARGISNULL(0))
	{
		PG_RETURN_BYTEA_P(serialize(state_new(CurrentMemoryContext)));
	}
	PG_RETURN_BYTEA_P(serialize((HllState *) PG_GETARG_POINTER(0)));
}

Datum
flowpg_hll_deserialize(PG_FUNCTION_ARGS)
{
	HllState   *state = state_new(CurrentMemoryContext);

	merge_bytes(state, PG_GETARG_BYTEA_PP(0));
	PG_RETURN_POINTER(state);
}

/*
 * The estimate.  Sparse: linear counting over the 2^25 registers, nearly
 * exact.  Dense: linear counting over the empty registers while it is the
 * better one (below 2.5 m), the harmonic mean of the registers above.
 */
Datum
flowpg_hll_count(PG_FUNCTION_ARGS)
{
	HllState   *state = state_new(CurrentMemoryContext);
	const double m = HLL_REGISTERS;
	double		inverse_sum = 0;
	int			zeros = 0;
	double		estimate;

	merge_bytes(state, PG_GETARG_BYTEA_PP(0));
	if (!state->registers)
	{
		const double sparse_m = (double) (1 << HLL_SPARSE_PRECISION);

		PG_RETURN_INT64((int64) rint(sparse_m * log(sparse_m / (sparse_m - state->nsparse))));
	}
	for (int i = 0; i < HLL_REGISTERS; i++)
	{
		inverse_sum += ldexp(1.0, -state->registers[i]);
		zeros += state->registers[i] == 0;
	}
	estimate = (0.7213 / (1.0 + 1.079 / m)) * m * m / inverse_sum;
	if (estimate <= 2.5 * m && zeros > 0)
		estimate = m * log(m / zeros);
	PG_RETURN_INT64((int64) rint(estimate));
}
