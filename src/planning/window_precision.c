/*-------------------------------------------------------------------------
 *
 * window_precision.c
 *	  How many fractional digits of a second a time window's values can have.
 *
 * A sink's key column of type timestamp(p) rounds what it is given to p
 * fractional digits.  Written into such a column, a window is unchanged --
 * and no two windows become one key -- when every value the window can
 * take is a multiple of 10^(6-p) microseconds.  window_time_digits proves
 * the smallest such p from the expression's shape, for the windows whose
 * values flowpg can bound:
 *
 *	- date_bin(stride, x, origin): origin + k * stride, so the digits of
 *	  the stride and of the origin (constants) bound it;
 *	- date_trunc('millisecond' ...) has 3 digits; date_trunc to the second
 *	  or coarser has none, with or without a time zone (every UTC offset
 *	  PostgreSQL knows is whole seconds);
 *	- a constant interval added or subtracted: the larger of the two counts
 *	  (months and days move whole seconds);
 *	- timestamp <-> timestamptz and AT TIME ZONE: whole-second shifts;
 *	- anything of a declared typmod p (a column of timestamp(3)) has p.
 *
 * Anything else may have all 6, which only timestamp(6) keeps.  The
 * window expression the planner stores is analysed, never its text.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "datatype/timestamp.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "parser/scansup.h"
#include "utils/builtins.h"
#include "utils/datetime.h"
#include "utils/fmgroids.h"

#include "window.h"

#define MAX_DIGITS 6

/* The fractional digits of a count of microseconds: 0 for whole seconds. */
static int
microsecond_digits(int64 usecs)
{
	int			digits = MAX_DIGITS;
	int64		unit = 1;

	while (digits > 0 && usecs % (unit * 10) == 0)
	{
		unit *= 10;
		digits--;
	}
	return digits;
}

static Const *
constant_arg(List *args, int n)
{
	Node	   *arg = list_length(args) > n ? list_nth(args, n) : NULL;

	while (arg && IsA(arg, RelabelType))
		arg = (Node *) ((RelabelType *) arg)->arg;
	if (arg && IsA(arg, Const) && !((Const *) arg)->constisnull)
		return (Const *) arg;
	return NULL;
}

static int
interval_digits(Const *c)
{
	Interval   *span;

	if (c == NULL || c->consttype != INTERVALOID)
		return MAX_DIGITS;
	span = DatumGetIntervalP(c->constvalue);
	return microsecond_digits(span->time);
}

static int
timestamp_digits(Const *c)
{
	if (c == NULL || (c->consttype != TIMESTAMPOID && c->consttype != TIMESTAMPTZOID))
		return MAX_DIGITS;
	if (TIMESTAMP_NOT_FINITE(DatumGetTimestamp(c->constvalue)))
		return MAX_DIGITS;
	return microsecond_digits(DatumGetTimestamp(c->constvalue));
}

/* date_trunc's unit: 6, 3 or 0 digits; MAX_DIGITS when not a constant. */
static int
trunc_unit_digits(Const *unit)
{
	char	   *lowunits;
	int			val;
	int			type;

	if (unit == NULL || unit->consttype != TEXTOID)
		return MAX_DIGITS;
	lowunits = downcase_truncate_identifier(TextDatumGetCString(unit->constvalue),
											VARSIZE_ANY_EXHDR(DatumGetPointer(unit->constvalue)),
											false);
	type = DecodeUnits(0, lowunits, &val);
	if (type != UNITS)
		return MAX_DIGITS;
	switch (val)
	{
		case DTK_MICROSEC:
			return MAX_DIGITS;
		case DTK_MILLISEC:
			return 3;
		case DTK_SECOND:
		case DTK_MINUTE:
		case DTK_HOUR:
		case DTK_DAY:
		case DTK_WEEK:
		case DTK_MONTH:
		case DTK_QUARTER:
		case DTK_YEAR:
		case DTK_DECADE:
		case DTK_CENTURY:
		case DTK_MILLENNIUM:
			return 0;
		default:
			return MAX_DIGITS;
	}
}

static int
expr_digits(Expr *expr)
{
	int32		typmod;

	if (expr == NULL)
		return MAX_DIGITS;
	typmod = exprTypmod((Node *) expr);
	if (typmod >= 0 && typmod < MAX_DIGITS &&
		(exprType((Node *) expr) == TIMESTAMPOID || exprType((Node *) expr) == TIMESTAMPTZOID))
		return typmod;
	if (IsA(expr, RelabelType))
		return expr_digits(((RelabelType *) expr)->arg);
	if (IsA(expr, Const))
		return timestamp_digits((Const *) expr);
	if (IsA(expr, FuncExpr) || IsA(expr, OpExpr))
	{
		Oid			func = IsA(expr, FuncExpr) ? ((FuncExpr *) expr)->funcid :
			((OpExpr *) expr)->opfuncid;
		List	   *args = IsA(expr, FuncExpr) ? ((FuncExpr *) expr)->args :
			((OpExpr *) expr)->args;

		switch (func)
		{
			case F_DATE_BIN_INTERVAL_TIMESTAMP_TIMESTAMP:
			case F_DATE_BIN_INTERVAL_TIMESTAMPTZ_TIMESTAMPTZ:
				{
					Const	   *stride = constant_arg(args, 0);

					/* a stride of months is refused by date_bin itself */
					if (stride == NULL || DatumGetIntervalP(stride->constvalue)->month != 0)
						return MAX_DIGITS;
					return Max(microsecond_digits(DatumGetIntervalP(stride->constvalue)->time),
							   timestamp_digits(constant_arg(args, 2)));
				}
			case F_DATE_TRUNC_TEXT_TIMESTAMP:
			case F_DATE_TRUNC_TEXT_TIMESTAMPTZ:
			case F_DATE_TRUNC_TEXT_TIMESTAMPTZ_TEXT:
				return Min(trunc_unit_digits(constant_arg(args, 0)),
						   expr_digits(lsecond(args)));
			case F_TIMESTAMP_PL_INTERVAL:
			case F_TIMESTAMP_MI_INTERVAL:
			case F_TIMESTAMPTZ_PL_INTERVAL:
			case F_TIMESTAMPTZ_MI_INTERVAL:
				return Max(expr_digits(linitial(args)),
						   interval_digits(constant_arg(args, 1)));
			case F_INTERVAL_PL_TIMESTAMP:
			case F_INTERVAL_PL_TIMESTAMPTZ:
				return Max(interval_digits(constant_arg(args, 0)),
						   expr_digits(lsecond(args)));
			case F_TIMESTAMP_TIMESTAMPTZ:
			case F_TIMESTAMPTZ_TIMESTAMP:
				return expr_digits(linitial(args));
			case F_TIMEZONE_TEXT_TIMESTAMP:
			case F_TIMEZONE_TEXT_TIMESTAMPTZ:
				return expr_digits(lsecond(args));
			case F_TIMEZONE_INTERVAL_TIMESTAMP:
			case F_TIMEZONE_INTERVAL_TIMESTAMPTZ:
				return Max(interval_digits(constant_arg(args, 0)),
						   expr_digits(lsecond(args)));
			case F_TIMESTAMP_TIMESTAMP_INT4:
			case F_TIMESTAMPTZ_TIMESTAMPTZ_INT4:
				{
					Const	   *digits = constant_arg(args, 1);
					int			inner = expr_digits(linitial(args));

					if (digits && digits->consttype == INT4OID &&
						DatumGetInt32(digits->constvalue) >= 0)
						return Min(inner, DatumGetInt32(digits->constvalue));
					return inner;
				}
		}
	}
	return MAX_DIGITS;
}

int
window_time_digits(Expr *expr)
{
	/* constants such as GreptimeDB's '...'::TimestampNanosecond origin folded */
	return expr ? expr_digits((Expr *) eval_const_expressions(NULL, (Node *) copyObject(expr))) :
		MAX_DIGITS;
}

int
window_steps_digits(Expr *start, Expr *step)
{
	Node	   *folded = eval_const_expressions(NULL, (Node *) copyObject(step));

	return Max(window_time_digits(start),
			   IsA(folded, Const) ? interval_digits((Const *) folded) : MAX_DIGITS);
}
