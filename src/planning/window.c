/*-------------------------------------------------------------------------
 *
 * window.c
 *	  Time windows: find a window's bounds by probing its expression.
 *
 * A flow's time window is a GROUP BY expression f(x) over one time (or
 * integer epoch) column x.  flowpg does not recognise date_trunc, date_bin
 * or any other function by name: it requires f to be non-decreasing in x
 * and finds the source range [start, end) of the window holding x by
 * evaluating f, first with exponentially growing steps and then by binary
 * search.  Any monotonic expression works, user functions included.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "common/int.h"

#include "catalog/pg_type.h"
#include "datatype/timestamp.h"
#include "executor/executor.h"
#include "nodes/nodeFuncs.h"
#include "nodes/params.h"
#include "optimizer/optimizer.h"
#include "access/xact.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/date.h"
#include "utils/datetime.h"
#include "utils/fmgrprotos.h"
#include "utils/lsyscache.h"
#include "utils/typcache.h"

#include "window.h"

bool
window_is_time_type(Oid typid)
{
	return typid == TIMESTAMPTZOID || typid == TIMESTAMPOID || typid == DATEOID;
}

bool
window_is_integer_type(Oid typid)
{
	return typid == INT2OID || typid == INT4OID || typid == INT8OID;
}

typedef struct ColumnParamContext
{
	Index		varno;
	AttrNumber	attno;
} ColumnParamContext;

static Node *
column_param_mutator(Node *node, ColumnParamContext *context)
{
	if (node == NULL)
		return NULL;
	if (IsA(node, Var))
	{
		Var		   *var = (Var *) node;

		if (var->varlevelsup == 0 && var->varno == context->varno &&
			var->varattno == context->attno)
		{
			Param	   *param = makeNode(Param);

			param->paramkind = PARAM_EXTERN;
			param->paramid = 1;
			param->paramtype = var->vartype;
			param->paramtypmod = var->vartypmod;
			param->paramcollid = var->varcollid;
			param->location = -1;
			return (Node *) param;
		}
	}
	return expression_tree_mutator(node, column_param_mutator, (void *) context);
}

Expr *
window_param_for_column(Expr *expr, Index varno, AttrNumber attno)
{
	ColumnParamContext context = {varno, attno};

	return (Expr *) column_param_mutator((Node *) copyObject(expr), &context);
}

/* Ordinal of year-month-day at midnight, in the unit of argtype. */
static int64
ordinal_of_date(Oid argtype, int year, int month, int day)
{
	int64		days = date2j(year, month, day) - POSTGRES_EPOCH_JDATE;

	return argtype == DATEOID ? days : days * USECS_PER_DAY;
}

static void
type_domain(Oid argtype, int64 *min, int64 *max)
{
	switch (argtype)
	{
		case TIMESTAMPTZOID:
		case TIMESTAMPOID:
			*min = MIN_TIMESTAMP;
			*max = END_TIMESTAMP - 1;
			break;
		case DATEOID:
			*min = DATETIME_MIN_JULIAN - POSTGRES_EPOCH_JDATE;
			*max = TIMESTAMP_END_JULIAN - POSTGRES_EPOCH_JDATE - 1;
			break;
		case INT2OID:
			*min = PG_INT16_MIN;
			*max = PG_INT16_MAX;
			break;
		case INT4OID:
			*min = PG_INT32_MIN;
			*max = PG_INT32_MAX;
			break;
		case INT8OID:
			*min = PG_INT64_MIN;
			*max = PG_INT64_MAX;
			break;
		default:
			elog(ERROR, "type %u cannot hold a time window", argtype);
	}
}

int64
window_datum_to_ordinal(Oid argtype, Datum value)
{
	switch (argtype)
	{
		case TIMESTAMPTZOID:
		case TIMESTAMPOID:
			return DatumGetTimestamp(value);
		case DATEOID:
			return DatumGetDateADT(value);
		case INT2OID:
			return DatumGetInt16(value);
		case INT4OID:
			return DatumGetInt32(value);
		case INT8OID:
			return DatumGetInt64(value);
		default:
			elog(ERROR, "type %u cannot hold a time window", argtype);
	}
	return 0;					/* keep compiler quiet */
}

Datum
window_ordinal_to_datum(Oid argtype, int64 ordinal)
{
	switch (argtype)
	{
		case TIMESTAMPTZOID:
		case TIMESTAMPOID:
			return TimestampGetDatum(ordinal);
		case DATEOID:
			return DateADTGetDatum((DateADT) ordinal);
		case INT2OID:
			return Int16GetDatum((int16) ordinal);
		case INT4OID:
			return Int32GetDatum((int32) ordinal);
		case INT8OID:
			return Int64GetDatum(ordinal);
		default:
			elog(ERROR, "type %u cannot hold a time window", argtype);
	}
	return (Datum) 0;			/* keep compiler quiet */
}

WindowProbe *
window_probe_create(Expr *expr, Oid argtype)
{
	WindowProbe *probe = palloc0(sizeof(WindowProbe));
	TypeCacheEntry *typentry;

	probe->argtype = argtype;
	type_domain(argtype, &probe->domain_min, &probe->domain_max);
	probe->expr = expression_planner(expr);
	probe->resulttype = exprType((Node *) expr);
	probe->collation = exprCollation((Node *) expr);

	typentry = lookup_type_cache(probe->resulttype, TYPECACHE_CMP_PROC_FINFO);
	if (!OidIsValid(typentry->cmp_proc_finfo.fn_oid))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_FUNCTION),
				 errmsg("time window type %s has no ordering",
						format_type_be(probe->resulttype)),
				 errhint("A time window expression must return a type with a btree ordering, such as timestamptz.")));
	probe->cmp = &typentry->cmp_proc_finfo;

	probe->params = makeParamList(1);
	probe->params->numParams = 1;
	probe->params->params[0].ptype = argtype;
	probe->params->params[0].pflags = PARAM_FLAG_CONST;
	probe->params->params[0].isnull = false;

	probe->econtext = CreateStandaloneExprContext();
	probe->econtext->ecxt_param_list_info = probe->params;
	probe->state = ExecInitExprWithParams(probe->expr, probe->params);
	return probe;
}

static char *
ordinal_text(WindowProbe *probe, int64 x)
{
	Oid			outfunc;
	bool		isvarlena;

	getTypeOutputInfo(probe->argtype, &outfunc, &isvarlena);
	return OidOutputFunctionCall(outfunc, window_ordinal_to_datum(probe->argtype, x));
}

Datum
window_probe_eval(WindowProbe *probe, int64 x)
{
	Datum		result;
	bool		isnull;

	probe->params->params[0].value = window_ordinal_to_datum(probe->argtype, x);
	result = ExecEvalExprSwitchContext(probe->state, probe->econtext, &isnull);
	if (isnull)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
				 errmsg("time window expression returns NULL for %s",
						ordinal_text(probe, x)),
				 errhint("A time window must map every non-NULL value of its column to a window.")));
	return result;
}

static int
probe_compare(WindowProbe *probe, Datum a, Datum b)
{
	return DatumGetInt32(FunctionCall2Coll(probe->cmp, probe->collation, a, b));
}

static void
report_not_monotonic(WindowProbe *probe, const char *exprtext, int64 x1, int64 x2)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
			 exprtext ? errmsg("time window expression %s is not monotonic", exprtext) :
			 errmsg("time window expression is not monotonic"),
			 errdetail("It maps %s to a later window than %s.",
					   ordinal_text(probe, x1), ordinal_text(probe, x2)),
			 errhint("A time window must be non-decreasing in its column, as date_trunc() and date_bin() are.")));
}

static uint64
next_step(uint64 step)
{
	return step > PG_UINT64_MAX / 2 ? PG_UINT64_MAX : step * 2;
}

/*
 * The smallest value of [dmin, x] that f maps to w, where f(x) = w: steps
 * down exponentially until f drops below w, then bisects.  Differences are
 * taken as unsigned, so the whole int64 range works.
 */
static int64
search_start(WindowProbe *probe, int64 x, Datum w)
{
	int64		dmin = probe->domain_min;
	int64		inside = x;
	int64		outside = 0;
	bool		found = false;

	for (uint64 step = 1; inside > dmin; step = next_step(step))
	{
		int64		cand = (uint64) (x - dmin) > step ? x - (int64) step : dmin;
		int			c = probe_compare(probe, window_probe_eval(probe, cand), w);

		if (c > 0)
			report_not_monotonic(probe, NULL, cand, x);
		if (c < 0)
		{
			outside = cand;
			found = true;
			break;
		}
		inside = cand;
	}
	while (found && (uint64) (inside - outside) > 1)
	{
		int64		mid = outside + (int64) ((uint64) (inside - outside) / 2);

		if (probe_compare(probe, window_probe_eval(probe, mid), w) < 0)
			outside = mid;
		else
			inside = mid;
	}
	return inside;
}

/* The smallest value of (x, dmax] that f maps above w; false if none. */
static bool
search_end(WindowProbe *probe, int64 x, Datum w, int64 *end)
{
	int64		dmax = probe->domain_max;
	int64		inside = x;
	int64		outside = 0;
	bool		found = false;

	for (uint64 step = 1; inside < dmax; step = next_step(step))
	{
		int64		cand = (uint64) (dmax - x) > step ? x + (int64) step : dmax;
		int			c = probe_compare(probe, window_probe_eval(probe, cand), w);

		if (c < 0)
			report_not_monotonic(probe, NULL, x, cand);
		if (c > 0)
		{
			outside = cand;
			found = true;
			break;
		}
		inside = cand;
	}
	while (found && (uint64) (outside - inside) > 1)
	{
		int64		mid = inside + (int64) ((uint64) (outside - inside) / 2);

		if (probe_compare(probe, window_probe_eval(probe, mid), w) > 0)
			outside = mid;
		else
			inside = mid;
	}
	*end = outside;
	return found;
}

void
window_bounds(WindowProbe *probe, int64 x, int64 *start, int64 *end,
			  bool *end_unbounded)
{
	int64		dmin = probe->domain_min;
	int64		dmax = probe->domain_max;
	Datum		w;
	int			c;

	ResetExprContext(probe->econtext);
	w = window_probe_eval(probe, x);

	/*
	 * Beyond the finite domain lie only the infinities: their window joins
	 * the last (first) finite window when f maps them alike.
	 */
	if (x > dmax)
	{
		c = probe_compare(probe, window_probe_eval(probe, dmax), w);
		if (c > 0)
			report_not_monotonic(probe, NULL, dmax, x);
		*start = c == 0 ? search_start(probe, dmax, w) : x;
		*end = x;
		*end_unbounded = true;
		return;
	}
	if (x < dmin)
	{
		c = probe_compare(probe, window_probe_eval(probe, dmin), w);
		if (c < 0)
			report_not_monotonic(probe, NULL, x, dmin);
		*start = x;
		*end = dmin;
		*end_unbounded = c == 0 && !search_end(probe, dmin, w, end);
		return;
	}
	*start = search_start(probe, x, w);
	*end_unbounded = !search_end(probe, x, w, end);
	if (*end_unbounded)
		*end = dmax;
}

WindowCache *
window_cache_create(WindowProbe *probe)
{
	WindowCache *cache;

	/* window values equal by comparison are then equal bit for bit */
	if (!window_is_time_type(probe->resulttype) && !window_is_integer_type(probe->resulttype))
		return NULL;
	cache = palloc0(sizeof(WindowCache));
	cache->probe = probe;
	return cache;
}

/* The window number of x for the learnt width and phase (floor division). */
static inline bool
window_number(WindowCache *cache, int64 x, int64 *n)
{
	int64		d;

	if (pg_sub_s64_overflow(x, cache->phase, &d))
		return false;
	*n = d / cache->width;
	if (d < 0 && *n * cache->width != d)
		(*n)--;
	return true;
}

bool
window_cache_lookup(WindowCache *cache, int64 x, Datum *value)
{
	WindowCacheSlot *slot;
	int64		n;

	cache->rows++;
	if (cache->width == 0 || !window_number(cache, x, &n))
		return false;
	slot = &cache->slots[(uint64) n % WINDOW_CACHE_SLOTS];
	if (x < slot->start || x >= slot->end)
		return false;
	*value = slot->value;
	return true;
}

/*
 * Is [start, start + width) exactly the window of value?  With f monotonic,
 * it is when f maps both ends to it and the values just outside elsewhere.
 */
static bool
guess_holds(WindowProbe *probe, int64 start, int64 width, Datum value)
{
	int64		end;

	if (pg_add_s64_overflow(start, width, &end) ||
		start <= probe->domain_min || end > probe->domain_max)
		return false;
	return probe_compare(probe, window_probe_eval(probe, start), value) == 0 &&
		probe_compare(probe, window_probe_eval(probe, end - 1), value) == 0 &&
		probe_compare(probe, window_probe_eval(probe, start - 1), value) < 0 &&
		probe_compare(probe, window_probe_eval(probe, end), value) > 0;
}

void
window_cache_learn(WindowCache *cache, int64 x, Datum value)
{
	WindowProbe *probe = cache->probe;
	int64		start;
	int64		end;
	bool		unbounded;
	int64		n;

	/* probing costs at most a sixteenth of an evaluation per row, after a start */
	if (cache->probe_cost > cache->rows / 16 + 256)
		return;
	ResetExprContext(probe->econtext);
	if (cache->width > 0)
	{
		if (!window_number(cache, x, &n) ||
			pg_mul_s64_overflow(n, cache->width, &start) ||
			pg_add_s64_overflow(start, cache->phase, &start))
			return;
		cache->probe_cost += 4;
		if (!guess_holds(probe, start, cache->width, value))
			return;				/* another width here: evaluate such rows */
		end = start + cache->width;
	}
	else
	{
		cache->probe_cost += 128;
		window_bounds(probe, x, &start, &end, &unbounded);
		if (unbounded || end <= start || x < probe->domain_min || x > probe->domain_max)
			return;
		if (pg_sub_s64_overflow(end, start, &cache->width))
		{
			cache->width = 0;
			return;
		}
		cache->phase = start % cache->width;
		if (!window_number(cache, x, &n))
			return;
	}
	cache->slots[(uint64) n % WINDOW_CACHE_SLOTS] = (WindowCacheSlot)
	{
		.start = start,.end = end,.value = value
	};
}

typedef struct ProbeErrorContext
{
	WindowProbe *probe;
	const char *exprtext;
	int64		x;
} ProbeErrorContext;

static void
probe_error_callback(void *arg)
{
	ProbeErrorContext *ctx = (ProbeErrorContext *) arg;

	errcontext("checking time window expression %s at %s",
			   ctx->exprtext, ordinal_text(ctx->probe, ctx->x));
}

static int
compare_int64(const void *a, const void *b)
{
	int64		x = *(const int64 *) a;
	int64		y = *(const int64 *) b;

	return (x > y) - (x < y);
}

bool
window_find_decrease(WindowProbe *probe, const char *exprtext, int64 lo, int64 hi,
					 int64 *x1, int64 *x2)
{
	/* Offsets near each base point, catching periodic expressions. */
	static const int64 usec_offsets[] = {
		0, 1, 2, 999, 1000, 999999, 1000000, 59999999, 60000000,
		3599999999, 3600000000, 86399999999, 86400000000
	};
	static const int64 unit_offsets[] = {
		0, 1, 2, 6, 7, 27, 28, 30, 31, 59, 60, 99, 100, 365, 366, 999, 1000,
		3599, 3600, 86399, 86400
	};
	const int	nbase = 97;
	const int64 *offsets;
	int			noffsets;
	int64	   *points;
	int			npoints = 0;
	ProbeErrorContext ctx;
	ErrorContextCallback callback;
	Datum		prev = (Datum) 0;
	int64		prevx = 0;
	bool		found = false;

	if (probe->argtype == TIMESTAMPTZOID || probe->argtype == TIMESTAMPOID)
	{
		offsets = usec_offsets;
		noffsets = lengthof(usec_offsets);
	}
	else
	{
		offsets = unit_offsets;
		noffsets = lengthof(unit_offsets);
	}
	if (lo > hi)
	{
		if (window_is_time_type(probe->argtype))
		{
			lo = ordinal_of_date(probe->argtype, 1970, 1, 1);
			hi = ordinal_of_date(probe->argtype, 2100, 1, 1);
		}
		else
		{
			lo = 0;
			hi = Min(probe->domain_max, (int64) 4000000000);
		}
	}
	lo = Max(lo, probe->domain_min);
	hi = Min(hi, probe->domain_max);

	points = palloc(sizeof(int64) * nbase * noffsets);
	for (int i = 0; i < nbase; i++)
	{
		/* irregular spacing, so no period of the expression lines up */
		int64		base = lo + (int64) ((double) (hi - lo) * (i * 0.010309 + (i % 7) * 0.000137));

		for (int j = 0; j < noffsets; j++)
		{
			int64		p = base + offsets[j];

			if (p >= lo && p <= hi)
				points[npoints++] = p;
		}
	}
	qsort(points, npoints, sizeof(int64), compare_int64);

	ctx.probe = probe;
	ctx.exprtext = exprtext;
	callback.callback = probe_error_callback;
	callback.arg = &ctx;
	callback.previous = error_context_stack;
	error_context_stack = &callback;

	for (int i = 0; i < npoints && !found; i++)
	{
		Datum		cur;

		if (i > 0 && points[i] == points[i - 1])
			continue;
		ctx.x = points[i];
		cur = window_probe_eval(probe, points[i]);
		if (i > 0 && probe_compare(probe, prev, cur) > 0)
		{
			*x1 = prevx;
			*x2 = points[i];
			found = true;
			break;
		}
		/* keep the previous result alive across the context reset */
		if ((i & 63) == 0)
		{
			int16		typlen;
			bool		typbyval;

			get_typlenbyval(probe->resulttype, &typlen, &typbyval);
			cur = datumCopy(cur, typbyval, typlen);
			ResetExprContext(probe->econtext);
		}
		prev = cur;
		prevx = points[i];
	}
	error_context_stack = callback.previous;
	pfree(points);
	return found;
}

void
window_check_monotonic(WindowProbe *probe, const char *exprtext,
					   int64 lo, int64 hi)
{
	int64		x1;
	int64		x2;

	if (window_find_decrease(probe, exprtext, lo, hi, &x1, &x2))
		report_not_monotonic(probe, exprtext, x1, x2);
}

int64
window_ordinal_from_timestamptz(Oid argtype, TimestampTz t)
{
	Datum		value = TimestampTzGetDatum(t);

	/* timestamp and date columns hold local time: convert in the pinned zone */
	switch (argtype)
	{
		case TIMESTAMPTZOID:
			break;
		case TIMESTAMPOID:
			value = DirectFunctionCall1(timestamptz_timestamp, value);
			break;
		case DATEOID:
			value = DirectFunctionCall1(timestamptz_date, value);
			break;
		default:
			/* integer epochs are taken as seconds since 1970 */
			return (int64) (t / USECS_PER_SEC) +
				(POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * SECS_PER_DAY;
	}
	return window_datum_to_ordinal(argtype, value);
}

TimestampTz
window_ordinal_to_timestamptz(Oid argtype, int64 x)
{
	Datum		value = window_ordinal_to_datum(argtype, x);

	switch (argtype)
	{
		case TIMESTAMPTZOID:
			return DatumGetTimestampTz(value);
		case TIMESTAMPOID:
			return DatumGetTimestampTz(DirectFunctionCall1(timestamp_timestamptz, value));
		case DATEOID:
			return DatumGetTimestampTz(DirectFunctionCall1(date_timestamptz, value));
		default:
			return (TimestampTz) (x - (int64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * SECS_PER_DAY) *
				USECS_PER_SEC;
	}
}

bool
window_ordinal_minus_seconds(Oid argtype, int64 x, int64 seconds, int64 *result)
{
	int64		units;

	switch (argtype)
	{
		case TIMESTAMPTZOID:
		case TIMESTAMPOID:
			if (pg_mul_s64_overflow(seconds, USECS_PER_SEC, &units))
				return false;
			break;
		case DATEOID:
			units = seconds / SECS_PER_DAY;
			break;
		default:
			units = seconds;
	}
	return !pg_sub_s64_overflow(x, units, result);
}

int64
window_expiry_cutoff(WindowProbe *probe, Interval *expire_after)
{
	Datum		limit = DirectFunctionCall2(timestamptz_mi_interval,
											TimestampTzGetDatum(GetCurrentTransactionStartTimestamp()),
											IntervalPGetDatum(expire_after));
	int64		start;
	int64		end;
	bool		unbounded;

	window_bounds(probe, window_ordinal_from_timestamptz(probe->argtype,
														 DatumGetTimestampTz(limit)),
				  &start, &end, &unbounded);
	return start;
}
