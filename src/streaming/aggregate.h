/*-------------------------------------------------------------------------
 *
 * aggregate.h
 *	  Where partial aggregate states are built, merged, shipped and
 *	  finalized: pg_aggregate's support functions, called as nodeAgg.c does.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLOWPG_AGGREGATE_H
#define FLOWPG_AGGREGATE_H

#include "fmgr.h"
#include "lib/stringinfo.h"
#include "nodes/execnodes.h"

#include "planner.h"

/*
 * Built-in transition and combine functions computed inline instead of
 * through fmgr (count, sum and min/max of float8, int4, int8, timestamps
 * and sum of int2/int4 over by-value states; avg, variance and stddev of
 * float8 and avg of int2/int4 on their arrays, updated in place as the
 * functions themselves do under an aggregate): the same arithmetic, the
 * same errors.
 */
typedef enum AggInlineFn
{
	AGG_FN_CALL,				/* call the function */
	AGG_FN_INT8INC,				/* count */
	AGG_FN_INT8DEC,				/* count's inverse */
	AGG_FN_INT8PL,				/* count's combine */
	AGG_FN_FLOAT8PL,
	AGG_FN_FLOAT8_LARGER,
	AGG_FN_FLOAT8_SMALLER,
	AGG_FN_INT4_LARGER,
	AGG_FN_INT4_SMALLER,
	AGG_FN_INT64_LARGER,		/* int8, timestamp and timestamptz */
	AGG_FN_INT64_SMALLER,
	AGG_FN_INT4_SUM,			/* sum(int4): an int8 state, no overflow check */
	AGG_FN_INT2_SUM,
	AGG_FN_FLOAT8_ACCUM,		/* avg, var_*, stddev_* of float8: in place */
	AGG_FN_INT4_AVG_ACCUM,		/* avg(int4): {count, sum}, in place */
	AGG_FN_INT2_AVG_ACCUM
} AggInlineFn;

/* The support functions of one aggregate call, looked up once. */
typedef struct AggSupport
{
	int			nargs;			/* inputs of the aggregate */
	int16	   *arglens;		/* their types' length and by-value-ness */
	bool	   *argbyvals;
	FmgrInfo	transfn;
	FmgrInfo	combinefn;
	AggInlineFn trans_inline;
	AggInlineFn combine_inline;

	/*
	 * Taking a row back (retract_plan.c).  counter: the hidden aggregate
	 * that counts this one's inputs, -1 when none: removing the last input
	 * reinitializes the state instead of calling the inverse, as
	 * nodeWindowAgg.c does.  is_counter: this is such a hidden count, fed
	 * by its aggregate's inputs (or by the group's rows), never evaluated.
	 */
	FlowRetract retract;
	FmgrInfo	invtransfn;		/* FLOW_RETRACT_INVERSE */
	AggInlineFn inv_inline;
	FmgrInfo	sortopfn;		/* FLOW_RETRACT_EXTREME */
	int			counter;
	bool		is_counter;

	FmgrInfo	serialfn;		/* internal states only */
	FmgrInfo	deserialfn;
	FmgrInfo	finalfn;
	bool		has_finalfn;
	int			final_nargs;	/* 1 + the inputs when aggfinalextra */
	Oid			transtype;
	int16		translen;
	bool		transbyval;
	bool		has_initval;
	Datum		initval;		/* agginitval, parsed once */
	Oid			resulttype;
	Oid			collation;		/* the aggregate call's input collation */
} AggSupport;

/* One aggregate's transition value within a group. */
typedef struct AggTrans
{
	Datum		value;
	bool		isnull;
	bool		noinit;			/* strict transfn, no input yet (nodeAgg's
								 * noTransValue) */
} AggTrans;

/*
 * Where states live: the memory context handed to aggregate functions by
 * AggCheckCallContext (through a minimal WindowAggState, so final functions
 * know not to modify the state).
 */
typedef struct AggContext
{
	WindowAggState *node;
	MemoryContext memory;
} AggContext;

/* Looks the aggregate up; inline_functions: may AGG_FN_* be used. */
extern void agg_support_init(AggSupport *agg, FlowAggregate *def, bool inline_functions);

/* A hidden count of inputs or rows (count(*)'s functions, inline). */
extern void agg_support_init_counter(AggSupport *agg);
extern AggContext *agg_context_create(MemoryContext memory);

/* The same with states in memory (which may be reset) and the node elsewhere. */
extern AggContext *agg_context_create_in(MemoryContext node_memory, MemoryContext memory);

/* Initial transition values of a new group, in the context's memory. */
extern void agg_init_trans(AggContext *cxt, AggSupport *aggs, int naggs, AggTrans *trans);

/*
 * One input row: transfn with nodeAgg's strictness rules; false when a
 * strict function skipped it (a NULL input: not counted).
 */
extern bool agg_advance(AggContext *cxt, AggSupport *agg, AggTrans *trans,
						Datum *args, bool *argnulls);

/*
 * Takes one input row back out of trans (its inputs counted in counter,
 * NULL when the aggregate has none).  False when the state cannot say what
 * it is without the row: the extreme was removed, the inverse declined, or
 * the state never had the row -- the group must be recomputed.
 */
extern bool agg_retract(AggContext *cxt, AggSupport *agg, AggTrans *trans, AggTrans *counter,
						Datum *args, bool *argnulls);

/*
 * Merges a partial state into trans with combinefn; a transient internal
 * partial (in memory about to be freed) is copied when adopted.
 */
extern void agg_combine(AggContext *cxt, AggSupport *agg, AggTrans *trans,
						Datum value, bool isnull, bool transient);

/* Appends a state to buf (serialfn for internal states). */
extern void agg_serialize(AggContext *cxt, AggSupport *agg, AggTrans *trans, StringInfo buf);

/* Reads a state written by agg_serialize, in the current memory context. */
extern Datum agg_deserialize(AggContext *cxt, AggSupport *agg, char **cursor, bool *isnull);

/* A copy of a state in another context (serialized for internal states). */
extern void agg_copy(AggContext *from, AggContext *to, AggSupport *agg,
					 AggTrans *src, AggTrans *dst);

/* The aggregate's result, in the current memory context. */
extern Datum agg_finalize(AggContext *cxt, AggSupport *agg, AggTrans *trans, bool *isnull);

/* Appends a datum of a key or output column to buf; reads it back. */
extern void datum_write(StringInfo buf, Datum value, bool isnull, bool typbyval, int16 typlen);
extern Datum datum_read(char **cursor, bool *isnull);

#endif							/* FLOWPG_AGGREGATE_H */
