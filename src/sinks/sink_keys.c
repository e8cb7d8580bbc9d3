/*-------------------------------------------------------------------------
 *
 * sink_keys.c
 *	  Which conversions into a sink's columns keep the flow's keys apart.
 *
 * An output goes into its sink column as INSERT converts it (an
 * assignment cast: sink_assignment_coercion).  A key may only take a
 * conversion that cannot make two keys one -- or one sink row would hold
 * two groups -- and only under a collation that keeps the flow's keys
 * apart.  sink_columns.c applies these rules to a sink's columns and
 * indexes.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_cast.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "nodes/nodeFuncs.h"
#include "parser/parse_coerce.h"
#include "pgtime.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
#include "utils/typcache.h"

#include "sink_columns.h"
#include "window.h"

/*
 * Assignment casts.  An output whose type differs from its sink column's
 * is converted as INSERT converts it: the parser's coercion of the output
 * to the column's type, typmod and domain in the assignment context
 * (coerce_to_target_type with COERCION_ASSIGNMENT), NULL when PostgreSQL
 * has no such cast, the input itself when nothing needs converting.  The
 * input is a CaseTestExpr standing for the output's value: the streaming
 * writes evaluate it over values in hand (sink_convert_*), the batching
 * refresh's INSERT ... SELECT applies the same coercion itself.
 */
Node *
sink_assignment_coercion(FlowOutput *out, Oid type, int32 typmod)
{
	CaseTestExpr *input = makeNode(CaseTestExpr);

	input->typeId = out->type;
	input->typeMod = out->typmod;
	input->collation = out->collation;
	return coerce_to_target_type(NULL, (Node *) input, out->type, type, typmod,
								 COERCION_ASSIGNMENT, COERCE_IMPLICIT_CAST, -1);
}

/* Does the flow's pinned TimeZone (the one in force) keep one UTC offset at all times? */
static bool
timezone_has_fixed_offset(void)
{
	long		gmtoff;

	return session_timezone != NULL && pg_get_timezone_offset(session_timezone, &gmtoff);
}

/*
 * The implicit casts known to keep different values apart: widening within
 * integers, integers into numeric, real into double precision, and a date
 * or a timestamp into a finer time.  (Sharing a btree operator family is
 * not enough: text -> name is implicit, in text's family, and cuts values
 * at 63 bytes.)
 */
static const struct
{
	Oid			source;
	Oid			target;
}			injective_casts[] =
{
	{INT2OID, INT4OID}, {INT2OID, INT8OID}, {INT4OID, INT8OID},
	{INT2OID, NUMERICOID}, {INT4OID, NUMERICOID}, {INT8OID, NUMERICOID},
	{FLOAT4OID, FLOAT8OID},
	{DATEOID, TIMESTAMPOID}, {DATEOID, TIMESTAMPTZOID}, {TIMESTAMPOID, TIMESTAMPTZOID},
};

static bool
cast_known_injective(Oid source, Oid target)
{
	for (int i = 0; i < lengthof(injective_casts); i++)
		if (injective_casts[i].source == source && injective_casts[i].target == target)
			return true;
	return false;
}

/*
 * A key's collation in the sink (its column's, or a unique index's) keeps
 * the flow's keys apart when it is the output's own or deterministic (equal
 * only when the bytes are): a case-insensitive collation would make 'A' and
 * 'a' one key.
 */
bool
sink_key_collation_keeps_keys(Oid collation, Oid output_collation)
{
	return !OidIsValid(collation) || collation == output_collation ||
		get_collation_isdeterministic(collation);
}

/*
 * Is func the rounding of a timestamp to p fractional digits with p at
 * least key_digits: then it changes no key (window_precision.c proves).
 */
static bool
is_timestamp_rounding(FuncExpr *func, int key_digits)
{
	Node	   *digits;

	if (func->funcid != F_TIMESTAMP_TIMESTAMP_INT4 &&
		func->funcid != F_TIMESTAMPTZ_TIMESTAMPTZ_INT4)
		return false;
	digits = lsecond(func->args);
	return IsA(digits, Const) && !((Const *) digits)->constisnull &&
		DatumGetInt32(((Const *) digits)->constvalue) >= key_digits;
}

/* The fractional digits of a second the values of output i can have. */
static int
output_time_digits(FlowPlan *plan, int i)
{
	if (i == plan->window_output)
		return window_time_digits(plan->window_expr);
	if (i == plan->tick_steps_output)
		return window_steps_digits(plan->tick_steps_start, plan->tick_steps_step);
	if (plan->outputs[i].typmod >= 0 && plan->outputs[i].typmod < 6)
		return plan->outputs[i].typmod;
	return 6;
}

/*
 * Is the conversion of a key injective: can two different keys of the flow
 * never become one value of the sink column (then one sink row would hold
 * two groups)?  Proven, or false with *why saying what could merge:
 *  - nothing converted, a domain check, or a binary-coercible relabelling
 *    between types whose equality is the same operator;
 *  - an implicit cast of injective_casts by an immutable function (int ->
 *    bigint, date -> timestamp, real -> double precision);
 *  - the same for a stable implicit cast (timestamp -> timestamptz, date ->
 *    timestamptz: they read TimeZone) when the flow's pinned TimeZone has a
 *    fixed offset (UTC): elsewhere the local times of a DST gap become one
 *    instant.
 *  - a timestamp's rounding to p fractional digits (timestamp(p)) when
 *    every key is a multiple of 10^(6-p) microseconds: key_digits, the
 *    digits the keys can have (window_time_digits), is at most p.
 * Other length coercions (numeric -> numeric(10,2), text -> varchar(n): they
 * round or trim), assignment-only casts (numeric -> integer, timestamptz
 * -> timestamp), implicit casts across families (bigint -> double
 * precision: 2^53 and 2^53 + 1 become one), I/O conversions and anything
 * else are not proven.
 */
static bool
coercion_is_injective(Node *expr, int key_digits, const char **why)
{
	while (!IsA(expr, CaseTestExpr))
	{
		if (IsA(expr, CoerceToDomain))
			expr = (Node *) ((CoerceToDomain *) expr)->arg;
		else if (IsA(expr, RelabelType))
		{
			Node	   *arg = (Node *) ((RelabelType *) expr)->arg;
			TypeCacheEntry *from = lookup_type_cache(exprType(arg), TYPECACHE_EQ_OPR);
			TypeCacheEntry *to = lookup_type_cache(((RelabelType *) expr)->resulttype,
												   TYPECACHE_EQ_OPR);

			if (from->eq_opr != to->eq_opr)
			{
				*why = "the two types compare values by different equality operators";
				return false;
			}
			expr = arg;
		}
		else if (IsA(expr, FuncExpr) && ((FuncExpr *) expr)->args != NIL)
		{
			FuncExpr   *func = (FuncExpr *) expr;
			Node	   *arg = linitial(func->args);
			Oid			source = exprType(arg);
			Oid			target = func->funcresulttype;
			HeapTuple	tuple;
			char		context;
			char		volatility = func_volatile(func->funcid);

			if (source == target && is_timestamp_rounding(func, key_digits))
			{
				expr = arg;
				continue;
			}
			if (source == target)
			{
				*why = (target == TIMESTAMPOID || target == TIMESTAMPTZOID) ?
					psprintf("the column rounds to fewer fractional digits of a second than the keys can have (%d); "
							 "a window whose every value fits the column (date_trunc to its unit or coarser, a date_bin whose stride and origin are multiples of it) would be accepted",
							 key_digits) :
					"the conversion to the column's typmod rounds or trims values";
				return false;
			}
			tuple = SearchSysCache2(CASTSOURCETARGET, ObjectIdGetDatum(source),
									ObjectIdGetDatum(target));
			if (!HeapTupleIsValid(tuple))
			{
				*why = "the conversion is not a cast of the catalog";
				return false;
			}
			context = ((Form_pg_cast) GETSTRUCT(tuple))->castcontext;
			ReleaseSysCache(tuple);
			if (context != COERCION_CODE_IMPLICIT)
			{
				*why = "the cast is an assignment cast, which may round, truncate or shift values";
				return false;
			}
			if (!cast_known_injective(source, target))
			{
				*why = "flowpg cannot show that the cast keeps different values apart (it may trim or round them)";
				return false;
			}
			if (volatility == PROVOLATILE_STABLE && !timezone_has_fixed_offset())
			{
				*why = "the cast depends on the flow's TimeZone, which has daylight saving or other offset changes: the local times of a gap become one instant";
				return false;
			}
			if (volatility == PROVOLATILE_VOLATILE)
			{
				*why = "the cast is volatile";
				return false;
			}
			expr = arg;
		}
		else
		{
			*why = IsA(expr, CoerceViaIO) ? "the cast converts through the types' text, which may map different values to one" :
				"flowpg cannot show that the conversion keeps different values apart";
			return false;
		}
	}
	return true;
}


bool
sink_key_conversion_keeps_keys(Node *coerce, FlowPlan *plan, int output, const char **why)
{
	return coercion_is_injective(coerce, output_time_digits(plan, output), why);
}
