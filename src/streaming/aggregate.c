/*-------------------------------------------------------------------------
 *
 * aggregate.c
 *	  Where aggregate states are built, merged, shipped and finalized.
 *
 * Streaming flows compute aggregates the way parallel aggregation does:
 * the writer runs the aggregate's transition function over its rows, the
 * partial state crosses to the worker serialized (serialfn / deserialfn for
 * internal states, the type's own representation otherwise), the worker
 * merges it with the combine function, and the final function makes the
 * sink value.  Everything comes from pg_aggregate, so every aggregate with
 * a combine function works, built-in or not.  Strictness and initial values
 * follow nodeAgg.c: a strict transition function with a NULL initial value
 * takes the first non-NULL input as its state, NULL inputs are skipped, a
 * strict combine function skips NULL partials and adopts the first one.
 *
 * Functions reach their state memory through AggCheckCallContext, which
 * accepts a WindowAggState: we hand them one whose aggcontext is the memory
 * of the states.  Being a window context also tells final functions not to
 * modify the state, which the worker finalizes again after every change.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/detoast.h"
#include "common/int.h"
#include "catalog/pg_aggregate.h"
#include "catalog/pg_type.h"
#include "nodes/nodeFuncs.h"
#include "parser/parse_agg.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/expandeddatum.h"
#include "utils/float.h"
#include "utils/fmgroids.h"
#include "utils/memutils.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

#include "aggregate.h"

/* Does the function update an array state in place (not a by-value one)? */
static inline bool
inline_in_place(AggInlineFn fn)
{
	return fn == AGG_FN_FLOAT8_ACCUM || fn == AGG_FN_INT4_AVG_ACCUM || fn == AGG_FN_INT2_AVG_ACCUM;
}

/* The inline form of a strict built-in function with a by-value state. */
static AggInlineFn
inline_fn_for(Oid fnoid)
{
	switch (fnoid)
	{
		case F_INT8INC:
		case F_INT8INC_ANY:
			return AGG_FN_INT8INC;
		case F_INT8DEC:
		case F_INT8DEC_ANY:
			return AGG_FN_INT8DEC;
		case F_INT8PL:
			return AGG_FN_INT8PL;
		case F_FLOAT8PL:
			return AGG_FN_FLOAT8PL;
		case F_FLOAT8LARGER:
			return AGG_FN_FLOAT8_LARGER;
		case F_FLOAT8SMALLER:
			return AGG_FN_FLOAT8_SMALLER;
		case F_INT4LARGER:
			return AGG_FN_INT4_LARGER;
		case F_INT4SMALLER:
			return AGG_FN_INT4_SMALLER;
		case F_INT8LARGER:
		case F_TIMESTAMP_LARGER:
			return AGG_FN_INT64_LARGER;
		case F_INT8SMALLER:
		case F_TIMESTAMP_SMALLER:
			return AGG_FN_INT64_SMALLER;
		case F_INT4_SUM:
			return AGG_FN_INT4_SUM;
		case F_INT2_SUM:
			return AGG_FN_INT2_SUM;
		case F_FLOAT8_ACCUM:
			return AGG_FN_FLOAT8_ACCUM;
		case F_INT4_AVG_ACCUM:
			return AGG_FN_INT4_AVG_ACCUM;
		case F_INT2_AVG_ACCUM:
			return AGG_FN_INT2_AVG_ACCUM;
		default:
			return AGG_FN_CALL;
	}
}

/*
 * The calls' expressions, as nodeAgg.c gives them (fmgr_info_set_expr):
 * polymorphic support functions learn their argument types from them
 * (get_fn_expr_argtype).
 */
static void
set_call_expressions(AggSupport *agg, FlowAggregate *def, Form_pg_aggregate form)
{
	Aggref	   *aggref = def->aggref;
	Oid			input_types[FUNC_MAX_ARGS];
	int			ninputs = get_aggregate_argtypes(aggref, input_types);
	Oid			transtype = resolve_aggregate_transtype(aggref->aggfnoid, def->transtype,
														input_types, ninputs);
	Expr	   *transfn_expr;
	Expr	   *invtransfn_expr = NULL;
	Expr	   *expr;
	Oid			invtransfn = def->retract == FLOW_RETRACT_INVERSE ? def->minvtransfn : InvalidOid;

	build_aggregate_transfn_expr(input_types, ninputs, 0, aggref->aggvariadic,
								 transtype, aggref->inputcollid, def->transfn,
								 invtransfn, &transfn_expr, &invtransfn_expr);
	fmgr_info_set_expr((Node *) transfn_expr, &agg->transfn);
	if (invtransfn_expr)
		fmgr_info_set_expr((Node *) invtransfn_expr, &agg->invtransfn);
	invtransfn_expr = NULL;
	if (OidIsValid(def->combinefn))
	{
		/* a combine function is a transition function over the state type */
		build_aggregate_transfn_expr(&transtype, 1, 0, false, transtype,
									 aggref->inputcollid, def->combinefn,
									 InvalidOid, &expr, &invtransfn_expr);
		fmgr_info_set_expr((Node *) expr, &agg->combinefn);
	}
	if (OidIsValid(def->serialfn))
	{
		build_aggregate_serialfn_expr(def->serialfn, &expr);
		fmgr_info_set_expr((Node *) expr, &agg->serialfn);
	}
	if (OidIsValid(def->deserialfn))
	{
		build_aggregate_deserialfn_expr(def->deserialfn, &expr);
		fmgr_info_set_expr((Node *) expr, &agg->deserialfn);
	}
	if (OidIsValid(def->finalfn))
	{
		build_aggregate_finalfn_expr(input_types, form->aggfinalextra ? ninputs + 1 : 1,
									 transtype, aggref->aggtype, aggref->inputcollid,
									 def->finalfn, &expr);
		fmgr_info_set_expr((Node *) expr, &agg->finalfn);
	}
}

void
agg_support_init(AggSupport *agg, FlowAggregate *def, bool inline_functions)
{
	Aggref	   *aggref = def->aggref;
	HeapTuple	tuple = SearchSysCache1(AGGFNOID, ObjectIdGetDatum(aggref->aggfnoid));
	Form_pg_aggregate form;
	bool		isnull;
	Datum		initval;
	ListCell   *lc;

	if (!HeapTupleIsValid(tuple))
		elog(ERROR, "cache lookup failed for aggregate %u", aggref->aggfnoid);
	form = (Form_pg_aggregate) GETSTRUCT(tuple);

	memset(agg, 0, sizeof(AggSupport));
	agg->nargs = list_length(aggref->args);
	agg->arglens = palloc(sizeof(int16) * Max(agg->nargs, 1));
	agg->argbyvals = palloc(sizeof(bool) * Max(agg->nargs, 1));
	foreach(lc, aggref->args)
		get_typlenbyval(exprType((Node *) lfirst_node(TargetEntry, lc)->expr),
						&agg->arglens[foreach_current_index(lc)],
						&agg->argbyvals[foreach_current_index(lc)]);
	fmgr_info(def->transfn, &agg->transfn);
	fmgr_info(def->combinefn, &agg->combinefn);
	if (OidIsValid(def->serialfn))
		fmgr_info(def->serialfn, &agg->serialfn);
	if (OidIsValid(def->deserialfn))
		fmgr_info(def->deserialfn, &agg->deserialfn);
	agg->has_finalfn = OidIsValid(def->finalfn);
	if (agg->has_finalfn)
	{
		fmgr_info(def->finalfn, &agg->finalfn);
		agg->final_nargs = (def->moving ? form->aggmfinalextra : form->aggfinalextra) ?
			agg->nargs + 1 : 1;
	}
	agg->retract = def->retract;
	agg->counter = -1;
	if (def->retract == FLOW_RETRACT_INVERSE)
		fmgr_info(def->minvtransfn, &agg->invtransfn);
	else if (def->retract == FLOW_RETRACT_EXTREME)
		fmgr_info(get_opcode(def->sortop), &agg->sortopfn);
	agg->transtype = def->transtype;
	get_typlenbyval(agg->transtype, &agg->translen, &agg->transbyval);
	set_call_expressions(agg, def, form);
	if (inline_functions && agg->transbyval)
	{
		agg->trans_inline = inline_fn_for(def->transfn);
		agg->combine_inline = inline_fn_for(def->combinefn);
		if (def->retract == FLOW_RETRACT_INVERSE)
			agg->inv_inline = inline_fn_for(def->minvtransfn);
	}
	else if (inline_functions && inline_in_place(inline_fn_for(def->transfn)))
		agg->trans_inline = inline_fn_for(def->transfn);	/* its array, in place */
	initval = SysCacheGetAttr(AGGFNOID, tuple,
							  def->moving ? Anum_pg_aggregate_aggminitval : Anum_pg_aggregate_agginitval,
							  &isnull);
	agg->has_initval = !isnull;
	if (agg->has_initval)
	{
		Oid			input;
		Oid			ioparam;

		/* in the caller's (long-lived) memory; copied into each group */
		getTypeInputInfo(agg->transtype, &input, &ioparam);
		agg->initval = OidInputFunctionCall(input, TextDatumGetCString(initval), ioparam, -1);
	}
	agg->resulttype = aggref->aggtype;
	agg->collation = aggref->inputcollid;
	ReleaseSysCache(tuple);
}

void
agg_support_init_counter(AggSupport *agg)
{
	memset(agg, 0, sizeof(AggSupport));
	agg->nargs = 0;
	fmgr_info(F_INT8INC, &agg->transfn);
	fmgr_info(F_INT8PL, &agg->combinefn);
	agg->trans_inline = AGG_FN_INT8INC;
	agg->combine_inline = AGG_FN_INT8PL;
	agg->retract = FLOW_RETRACT_INVERSE;
	fmgr_info(F_INT8DEC, &agg->invtransfn);
	agg->inv_inline = AGG_FN_INT8DEC;
	agg->counter = -1;
	agg->is_counter = true;
	agg->transtype = INT8OID;
	agg->translen = sizeof(int64);
	agg->transbyval = true;
	agg->has_initval = true;
	agg->initval = Int64GetDatum(0);
	agg->resulttype = INT8OID;
	agg->collation = InvalidOid;
}

AggContext *
agg_context_create(MemoryContext memory)
{
	return agg_context_create_in(memory, memory);
}

AggContext *
agg_context_create_in(MemoryContext node_memory, MemoryContext memory)
{
	AggContext *cxt = MemoryContextAlloc(node_memory, sizeof(AggContext));
	MemoryContext old = MemoryContextSwitchTo(node_memory);

	cxt->node = makeNode(WindowAggState);
	cxt->node->aggcontext = memory;
	cxt->node->curaggcontext = memory;	/* what AggCheckCallContext returns */
	cxt->memory = memory;
	MemoryContextSwitchTo(old);
	return cxt;
}

void
agg_init_trans(AggContext *cxt, AggSupport *aggs, int naggs, AggTrans *trans)
{
	MemoryContext old = MemoryContextSwitchTo(cxt->memory);

	for (int i = 0; i < naggs; i++)
	{
		AggSupport *agg = &aggs[i];

		if (agg->has_initval)
		{
			trans[i].value = datumCopy(agg->initval, agg->transbyval, agg->translen);
			trans[i].isnull = false;
			trans[i].noinit = false;
		}
		else
		{
			trans[i].value = (Datum) 0;
			trans[i].isnull = true;
			trans[i].noinit = true;
		}
	}
	MemoryContextSwitchTo(old);
}

/*
 * Keeps a new by-reference state in the states' memory and frees the old
 * one, as nodeAgg's ExecAggTransReparent does.
 */
static Datum
reparent_state(AggContext *cxt, AggSupport *agg, Datum newval, bool newnull,
			   Datum oldval, bool oldnull)
{
	if (agg->transbyval || DatumGetPointer(newval) == DatumGetPointer(oldval))
		return newval;
	if (!newnull)
	{
		if (DatumIsReadWriteExpandedObject(newval, false, agg->translen) &&
			MemoryContextGetParent(DatumGetEOHP(newval)->eoh_context) == cxt->memory)
			 /* already ours */ ;
		else
		{
			MemoryContext old = MemoryContextSwitchTo(cxt->memory);

			newval = datumCopy(newval, false, agg->translen);
			MemoryContextSwitchTo(old);
		}
	}
	if (!oldnull)
	{
		if (DatumIsReadWriteExpandedObject(oldval, false, agg->translen))
			DeleteExpandedObject(oldval);
		else
			pfree(DatumGetPointer(oldval));
	}
	return newval;
}

/*
 * An inline function on a non-NULL state and a non-NULL input: what the
 * function itself computes, with its overflow errors.
 */
static inline Datum
call_inline(AggInlineFn fn, Datum state, Datum arg)
{
	int64		r;

	switch (fn)
	{
		case AGG_FN_INT8INC:
			if (unlikely(pg_add_s64_overflow(DatumGetInt64(state), 1, &r)))
				ereport(ERROR,
						(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
						 errmsg("bigint out of range")));
			return Int64GetDatum(r);
		case AGG_FN_INT8DEC:
			if (unlikely(pg_sub_s64_overflow(DatumGetInt64(state), 1, &r)))
				ereport(ERROR,
						(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
						 errmsg("bigint out of range")));
			return Int64GetDatum(r);
		case AGG_FN_INT8PL:
			if (unlikely(pg_add_s64_overflow(DatumGetInt64(state), DatumGetInt64(arg), &r)))
				ereport(ERROR,
						(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
						 errmsg("bigint out of range")));
			return Int64GetDatum(r);
		case AGG_FN_FLOAT8PL:
			return Float8GetDatum(float8_pl(DatumGetFloat8(state), DatumGetFloat8(arg)));
		case AGG_FN_FLOAT8_LARGER:
			return Float8GetDatum(float8_max(DatumGetFloat8(state), DatumGetFloat8(arg)));
		case AGG_FN_FLOAT8_SMALLER:
			return Float8GetDatum(float8_min(DatumGetFloat8(state), DatumGetFloat8(arg)));
		case AGG_FN_INT4_LARGER:
			return DatumGetInt32(state) > DatumGetInt32(arg) ? state : arg;
		case AGG_FN_INT4_SMALLER:
			return DatumGetInt32(state) < DatumGetInt32(arg) ? state : arg;
		case AGG_FN_INT64_LARGER:
			return DatumGetInt64(state) > DatumGetInt64(arg) ? state : arg;
		case AGG_FN_INT64_SMALLER:
			return DatumGetInt64(state) < DatumGetInt64(arg) ? state : arg;
		case AGG_FN_INT4_SUM:
			/* int4_sum adds without an overflow check: an int8 holds the sum */
			return Int64GetDatum(DatumGetInt64(state) + (int64) DatumGetInt32(arg));
		case AGG_FN_INT2_SUM:
			return Int64GetDatum(DatumGetInt64(state) + (int64) DatumGetInt16(arg));
		case AGG_FN_CALL:
		case AGG_FN_FLOAT8_ACCUM:	/* in place: update_in_place */
		case AGG_FN_INT4_AVG_ACCUM:
		case AGG_FN_INT2_AVG_ACCUM:
			break;
	}
	pg_unreachable();
}

/*
 * float8_accum's state, {N, sum(X), sum((X - mean)^2) * N}, and one more
 * input: the Youngs-Cramer update, in the order PostgreSQL computes it (so
 * the same bits), with its overflow error and NaN rules; updated in place,
 * as the function itself does when called by an aggregate.  False when the
 * state is not a plain 3-element float8 array: the function is called then.
 */
static bool
float8_accum_inline(Datum state, float8 x)
{
	ArrayType  *array = (ArrayType *) DatumGetPointer(state);
	float8	   *values;
	float8		n;
	float8		sx;
	float8		sxx;

	if (VARATT_IS_EXTENDED(array) || ARR_NDIM(array) != 1 || ARR_DIMS(array)[0] != 3 ||
		ARR_HASNULL(array) || ARR_ELEMTYPE(array) != FLOAT8OID)
		return false;
	values = (float8 *) ARR_DATA_PTR(array);
	n = values[0] + 1.0;
	sx = values[1] + x;
	sxx = values[2];
	if (values[0] > 0.0)
	{
		float8		d = x * n - sx;

		sxx += d * d / (n * values[0]);
		/* infinite from finite: an overflow; from an infinite input: NaN */
		if (isinf(sx) || isinf(sxx))
		{
			if (!isinf(values[1]) && !isinf(x))
				float_overflow_error();
			sxx = get_float8_nan();
		}
	}
	else if (isnan(x) || isinf(x))
		sxx = get_float8_nan();	/* the first input: only a non-finite one matters */
	values[0] = n;
	values[1] = sx;
	values[2] = sxx;
	return true;
}

/*
 * int4_avg_accum's and int2_avg_accum's state, {count, sum} as an int8
 * array, and one more input: counted and added (without an overflow
 * check, as they do), in place.  False when the state is not that array.
 */
static bool
int_avg_accum_inline(Datum state, int64 x)
{
	ArrayType  *array = (ArrayType *) DatumGetPointer(state);
	int64	   *values;

	if (VARATT_IS_EXTENDED(array) || ARR_HASNULL(array) ||
		ARR_SIZE(array) != ARR_OVERHEAD_NONULLS(1) + 2 * sizeof(int64))
		return false;
	values = (int64 *) ARR_DATA_PTR(array);
	values[0]++;
	values[1] += x;
	return true;
}

/* An array state updated in place by an inline function; false: call it. */
static bool
update_in_place(AggInlineFn fn, Datum state, Datum arg)
{
	switch (fn)
	{
		case AGG_FN_FLOAT8_ACCUM:
			return float8_accum_inline(state, DatumGetFloat8(arg));
		case AGG_FN_INT4_AVG_ACCUM:
			return int_avg_accum_inline(state, DatumGetInt32(arg));
		case AGG_FN_INT2_AVG_ACCUM:
			return int_avg_accum_inline(state, DatumGetInt16(arg));
		default:
			return false;
	}
}

/* Calls a transition, combine or inverse function on trans and one more input. */
static void
call_transition(AggContext *cxt, AggSupport *agg, FmgrInfo *fn, AggTrans *trans,
				int nargs, Datum *args, bool *argnulls)
{
	LOCAL_FCINFO(fcinfo, FUNC_MAX_ARGS);
	Datum		newval;
	AggInlineFn inline_fn = fn == &agg->transfn ? agg->trans_inline :
		fn == &agg->invtransfn ? agg->inv_inline : agg->combine_inline;

	/* every inline function is strict: NULLs were dealt with by our callers */
	if (inline_in_place(inline_fn))
	{
		if (!trans->isnull && !argnulls[0] && update_in_place(inline_fn, trans->value, args[0]))
		{
			trans->noinit = false;
			return;
		}
	}
	else if (inline_fn != AGG_FN_CALL && !trans->isnull && (nargs == 0 || !argnulls[0]))
	{
		trans->value = call_inline(inline_fn, trans->value, nargs > 0 ? args[0] : (Datum) 0);
		trans->noinit = false;
		return;
	}

	InitFunctionCallInfoData(*fcinfo, fn, nargs + 1, agg->collation,
							 (Node *) cxt->node, NULL);
	fcinfo->args[0].value = trans->value;
	fcinfo->args[0].isnull = trans->isnull;
	for (int i = 0; i < nargs; i++)
	{
		fcinfo->args[i + 1].value = args[i];
		fcinfo->args[i + 1].isnull = argnulls[i];
	}
	newval = FunctionCallInvoke(fcinfo);
	trans->value = reparent_state(cxt, agg, newval, fcinfo->isnull,
								  trans->value, trans->isnull);
	trans->isnull = fcinfo->isnull;
	trans->noinit = false;
}

bool
agg_advance(AggContext *cxt, AggSupport *agg, AggTrans *trans,
			Datum *args, bool *argnulls)
{
	if (agg->transfn.fn_strict)
	{
		for (int i = 0; i < agg->nargs; i++)
			if (argnulls[i])
				return false;
		if (trans->noinit)
		{
			/* the first input is the state (its type is the state type) */
			MemoryContext old = MemoryContextSwitchTo(cxt->memory);

			trans->value = datumCopy(args[0], agg->transbyval, agg->translen);
			trans->isnull = false;
			trans->noinit = false;
			MemoryContextSwitchTo(old);
			return true;
		}
		if (trans->isnull)
			return true;		/* a strict function keeps a NULL state NULL */
	}
	call_transition(cxt, agg, &agg->transfn, trans, agg->nargs, args, argnulls);
	return true;
}

bool
agg_retract(AggContext *cxt, AggSupport *agg, AggTrans *trans, AggTrans *counter,
			Datum *args, bool *argnulls)
{
	switch (agg->retract)
	{
		case FLOW_RETRACT_NONE:
			return false;
		case FLOW_RETRACT_EXTREME:
			/* aggregates with a sort operator ignore NULLs, as min/max */
			if (argnulls[0])
				return true;
			if (trans->noinit || trans->isnull)
				return false;

			/*
			 * The sort operator says "state before value" (max: state >
			 * value): the value is not the extreme and the state stands.
			 * Equal, or NaN-like, or after: the extreme may have gone.
			 */
			return DatumGetBool(FunctionCall2Coll(&agg->sortopfn, agg->collation,
												  trans->value, args[0]));
		case FLOW_RETRACT_INVERSE:
			if (agg->invtransfn.fn_strict)
				for (int i = 0; i < agg->nargs; i++)
					if (argnulls[i])
						return true;	/* never counted */
			if (counter != NULL)
			{
				int64		inputs = DatumGetInt64(counter->value);

				if (inputs <= 0)
					return false;
				counter->value = Int64GetDatum(inputs - 1);
				if (inputs == 1)
				{
					/* the last input: back to the initial state, not the inverse's */
					agg_init_trans(cxt, agg, 1, trans);
					return true;
				}
			}
			if (trans->noinit || trans->isnull)
				return false;
			call_transition(cxt, agg, &agg->invtransfn, trans, agg->nargs, args, argnulls);
			/* NULL from an inverse: "cannot take this one back" (nodeWindowAgg.c) */
			return !trans->isnull;
	}
	pg_unreachable();
}

static Datum call_serialfn(AggContext *cxt, AggSupport *agg, Datum state);
static Datum call_deserialfn(AggContext *cxt, AggSupport *agg, Datum bytes);

void
agg_combine(AggContext *cxt, AggSupport *agg, AggTrans *trans, Datum value, bool isnull,
			bool transient)
{
	if (agg->combinefn.fn_strict)
	{
		if (isnull)
			return;
		if (trans->noinit || trans->isnull)
		{
			/* adopt the partial, in our memory */
			MemoryContext old = MemoryContextSwitchTo(cxt->memory);

			if (agg->transtype != INTERNALOID)
				trans->value = datumCopy(value, agg->transbyval, agg->translen);
			else if (transient)
				trans->value = call_deserialfn(cxt, agg, call_serialfn(cxt, agg, value));
			else
				trans->value = value;
			trans->isnull = false;
			trans->noinit = false;
			MemoryContextSwitchTo(old);
			return;
		}
	}
	call_transition(cxt, agg, &agg->combinefn, trans, 1, &value, &isnull);
}

static Datum
call_serialfn(AggContext *cxt, AggSupport *agg, Datum state)
{
	LOCAL_FCINFO(fcinfo, 1);
	Datum		result;

	InitFunctionCallInfoData(*fcinfo, &agg->serialfn, 1, InvalidOid,
							 (Node *) cxt->node, NULL);
	fcinfo->args[0].value = state;
	fcinfo->args[0].isnull = false;
	result = FunctionCallInvoke(fcinfo);
	if (fcinfo->isnull)
		elog(ERROR, "serialization function %u returned NULL", agg->serialfn.fn_oid);
	return result;
}

/* Deserializes in the current memory context. */
static Datum
call_deserialfn(AggContext *cxt, AggSupport *agg, Datum bytes)
{
	LOCAL_FCINFO(fcinfo, 2);
	Datum		result;

	InitFunctionCallInfoData(*fcinfo, &agg->deserialfn, 2, InvalidOid,
							 (Node *) cxt->node, NULL);
	fcinfo->args[0].value = bytes;
	fcinfo->args[0].isnull = false;
	fcinfo->args[1].value = (Datum) 0;
	fcinfo->args[1].isnull = false;
	result = FunctionCallInvoke(fcinfo);
	if (fcinfo->isnull)
		elog(ERROR, "deserialization function %u returned NULL", agg->deserialfn.fn_oid);

	/*
	 * PostgreSQL 15's numeric_deserialize and numeric_poly_deserialize
	 * make states that no longer add squares (calcSumX2 false), fixed
	 * upstream in commit 6a93535: parallel query only ever combines
	 * them, but the worker also runs the transition and inverse functions
	 * of variance and stddev on deserialized states.  The flag is the
	 * first member of both state structs (numeric.c); set it as the fixed
	 * functions do.
	 */
	if (agg->deserialfn.fn_oid == F_NUMERIC_DESERIALIZE ||
		agg->deserialfn.fn_oid == F_NUMERIC_POLY_DESERIALIZE)
		*(bool *) DatumGetPointer(result) = true;
	return result;
}

void
datum_write(StringInfo buf, Datum value, bool isnull, bool typbyval, int16 typlen)
{
	Size		size;
	char	   *start;

	/* by value or NULL: what datumSerialize writes (-1 or -2, then the Datum) */
	if (typbyval || isnull)
	{
		int			header = isnull ? -2 : -1;

		enlargeStringInfo(buf, sizeof(int) + sizeof(Datum));
		memcpy(buf->data + buf->len, &header, sizeof(int));
		buf->len += sizeof(int);
		if (!isnull)
		{
			memcpy(buf->data + buf->len, &value, sizeof(Datum));
			buf->len += sizeof(Datum);
		}
		buf->data[buf->len] = '\0';
		return;
	}

	/* a value read from a table may point into TOAST: ship the bytes */
	if (!isnull && typlen == -1 && VARATT_IS_EXTERNAL(DatumGetPointer(value)) &&
		!VARATT_IS_EXTERNAL_EXPANDED(DatumGetPointer(value)))
		value = PointerGetDatum(detoast_external_attr((struct varlena *) DatumGetPointer(value)));
	size = datumEstimateSpace(value, isnull, typbyval, typlen);
	enlargeStringInfo(buf, size);
	start = buf->data + buf->len;
	datumSerialize(value, isnull, typbyval, typlen, &start);
	buf->len += size;
	buf->data[buf->len] = '\0';
}

Datum
datum_read(char **cursor, bool *isnull)
{
	return datumRestore(cursor, isnull);
}

void
agg_serialize(AggContext *cxt, AggSupport *agg, AggTrans *trans, StringInfo buf)
{
	if (agg->transtype == INTERNALOID)
	{
		bytea	   *bytes = trans->isnull ? NULL :
			DatumGetByteaPP(call_serialfn(cxt, agg, trans->value));

		datum_write(buf, PointerGetDatum(bytes), trans->isnull, false, -1);
	}
	else
		datum_write(buf, trans->value, trans->isnull, agg->transbyval, agg->translen);
}

Datum
agg_deserialize(AggContext *cxt, AggSupport *agg, char **cursor, bool *isnull)
{
	Datum		value = datum_read(cursor, isnull);

	if (*isnull || agg->transtype != INTERNALOID)
		return value;
	return call_deserialfn(cxt, agg, value);
}

void
agg_copy(AggContext *from, AggContext *to, AggSupport *agg, AggTrans *src, AggTrans *dst)
{
	*dst = *src;
	if (src->isnull)
		return;
	if (agg->transtype == INTERNALOID)
	{
		MemoryContext old = MemoryContextSwitchTo(to->memory);

		dst->value = call_deserialfn(to, agg, call_serialfn(from, agg, src->value));
		MemoryContextSwitchTo(old);
	}
	else if (!agg->transbyval)
	{
		MemoryContext old = MemoryContextSwitchTo(to->memory);

		dst->value = datumCopy(src->value, false, agg->translen);
		MemoryContextSwitchTo(old);
	}
}

Datum
agg_finalize(AggContext *cxt, AggSupport *agg, AggTrans *trans, bool *isnull)
{
	LOCAL_FCINFO(fcinfo, FUNC_MAX_ARGS);
	Datum		result;

	if (!agg->has_finalfn)
	{
		*isnull = trans->isnull;
		if (trans->isnull)
			return (Datum) 0;
		return datumCopy(trans->value, agg->transbyval, agg->translen);
	}
	InitFunctionCallInfoData(*fcinfo, &agg->finalfn, agg->final_nargs, agg->collation,
							 (Node *) cxt->node, NULL);
	fcinfo->args[0].value = trans->value;
	fcinfo->args[0].isnull = trans->isnull;
	/* the extra arguments of aggfinalextra are NULLs of the input types */
	for (int i = 1; i < agg->final_nargs; i++)
	{
		fcinfo->args[i].value = (Datum) 0;
		fcinfo->args[i].isnull = true;
	}
	if (agg->finalfn.fn_strict)
	{
		for (int i = 0; i < agg->final_nargs; i++)
			if (fcinfo->args[i].isnull)
			{
				*isnull = true;
				return (Datum) 0;
			}
	}
	result = FunctionCallInvoke(fcinfo);
	*isnull = fcinfo->isnull;
	return result;
}
