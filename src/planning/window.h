/*-------------------------------------------------------------------------
 *
 * window.h
 *	  Time windows: probing a monotonic window expression for its bounds.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLOWPG_WINDOW_H
#define FLOWPG_WINDOW_H

#include "nodes/execnodes.h"
#include "nodes/primnodes.h"
#include "utils/timestamp.h"

/*
 * A window expression f(x) over one source column x, compiled for repeated
 * evaluation.  Values of x are handled as int64 "ordinals" in the column's
 * own unit (microseconds for timestamps, days for dates, integers as is).
 */
typedef struct WindowProbe
{
	Expr	   *expr;			/* f with x as PARAM_EXTERN $1 */
	Oid			argtype;		/* type of x */
	int64		domain_min;		/* ordinals probed stay in this range */
	int64		domain_max;
	Oid			resulttype;
	Oid			collation;
	FmgrInfo   *cmp;			/* btree comparison of f's result type */
	ExprState  *state;
	ExprContext *econtext;
	ParamListInfo params;
} WindowProbe;

/*
 * The windows of recent rows, so that a row in a known window needs no
 * evaluation of the window expression: a direct-mapped table of [start,
 * end) ranges by window number, for windows of one fixed width (minutes,
 * hours, date_bin strides; calendar months or DST days just miss).  A
 * window's bounds are learnt by probing: four evaluations that check a
 * guess from the width, or a full search; the probing done is bounded by
 * a share of the rows seen, so a load that never repeats a window costs
 * little more than evaluating each row.  Only by-value window types.
 */
#define WINDOW_CACHE_SLOTS 1024

typedef struct WindowCacheSlot
{
	int64		start;
	int64		end;			/* start == end: empty */
	Datum		value;
} WindowCacheSlot;

typedef struct WindowCache
{
	WindowProbe *probe;
	int64		width;			/* 0: not known yet */
	int64		phase;			/* a window starts at phase + k * width */
	int64		rows;			/* rows looked up */
	int64		probe_cost;		/* expression evaluations spent probing */
	WindowCacheSlot slots[WINDOW_CACHE_SLOTS];
} WindowCache;

/* A cache over the probe's expression; NULL for by-reference window types. */
extern WindowCache *window_cache_create(WindowProbe *probe);

/* The window of ordinal x when the cache knows it. */
extern bool window_cache_lookup(WindowCache *cache, int64 x, Datum *value);

/* After evaluating f(x) = value for a miss: learn x's window if affordable. */
extern void window_cache_learn(WindowCache *cache, int64 x, Datum value);

/* True for the column types a time window can be over. */
extern bool window_is_time_type(Oid typid);
extern bool window_is_integer_type(Oid typid);

/* Replace every Var (varno, attno) in expr by the probe parameter $1. */
extern Expr *window_param_for_column(Expr *expr, Index varno, AttrNumber attno);

/* Compile a probe; expr refers to the column as $1 of type argtype. */
extern WindowProbe *window_probe_create(Expr *expr, Oid argtype);

/* f(x); the result lives until the probe's next window_bounds call. */
extern Datum window_probe_eval(WindowProbe *probe, int64 x);

extern int64 window_datum_to_ordinal(Oid argtype, Datum value);
extern Datum window_ordinal_to_datum(Oid argtype, int64 ordinal);

/*
 * The window of x: [*start, *end) holds exactly the ordinals that f maps to
 * f(x).  *end_unbounded is set when no larger value leaves the window.
 */
extern void window_bounds(WindowProbe *probe, int64 x, int64 *start,
						  int64 *end, bool *end_unbounded);

/*
 * Looks for a decrease of f over sample points spread across [lo, hi] (or
 * a default range for the type when lo > hi): true, with f(x1) > f(x2) and
 * x1 < x2, when it finds one.  Errors of f itself are raised.
 */
extern bool window_find_decrease(WindowProbe *probe, const char *exprtext,
								 int64 lo, int64 hi, int64 *x1, int64 *x2);

/*
 * Checks that f is non-decreasing and never NULL over sample points spread
 * across [lo, hi] (or a default range for the type when lo > hi); errors
 * out naming the first pair of values where it is not.
 */
extern void window_check_monotonic(WindowProbe *probe, const char *exprtext,
								   int64 lo, int64 hi);

/*
 * A point in time as an ordinal of a time column of type argtype: local
 * time in the current TimeZone for timestamp and date, seconds since 1970
 * for integers.
 */
extern int64 window_ordinal_from_timestamptz(Oid argtype, TimestampTz t);

/* The inverse: an ordinal as the point in time it stands for. */
extern TimestampTz window_ordinal_to_timestamptz(Oid argtype, int64 x);

/* x minus that many seconds, in the ordinal's units; false on overflow. */
extern bool window_ordinal_minus_seconds(Oid argtype, int64 x, int64 seconds, int64 *result);

/*
 * The start of the window holding now() - expire_after: windows from there
 * on are maintained, older ones are expired.  Evaluate under the flow's
 * pinned settings.
 */
extern int64 window_expiry_cutoff(WindowProbe *probe, Interval *expire_after);

/*
 * The fractional digits of a second every value of a timestamp window
 * expression is known to fit in (0 to 6): a timestamp(p) with p at least
 * that keeps every window as it is (window_precision.c).
 */
extern int	window_time_digits(Expr *expr);

/* The same for the steps generate_series(start, end, step) yields: start + k * step. */
extern int	window_steps_digits(Expr *start, Expr *step);

#endif							/* FLOWPG_WINDOW_H */
