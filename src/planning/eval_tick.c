/*-------------------------------------------------------------------------
 *
 * eval_tick.c
 *	  EVAL INTERVAL ticks, as GreptimeDB defines them: a flow with an
 *	  eval_interval runs at the multiples of it since the Unix epoch (a
 *	  '1 minute' flow at whole minutes), and flowpg.now() in its query is
 *	  the time of the tick a run evaluates, not of the transaction.
 *
 * The tick belongs to the transaction that set it (the worker's run):
 * flowpg.now() anywhere else -- a session's flush_flow or refresh_flow
 * included, as GreptimeDB's ADMIN FLUSH_FLOW -- is now().  It is
 * PARALLEL RESTRICTED, so parallel workers never evaluate it without the
 * leader's tick.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "common/int.h"
#include "fmgr.h"
#include "storage/proc.h"
#include "utils/timestamp.h"

#include "eval_tick.h"

/* Unix epoch in PostgreSQL's timestamps (µs since 2000-01-01) */
#define UNIX_EPOCH_TS ((int64) (UNIX_EPOCH_JDATE - POSTGRES_EPOCH_JDATE) * USECS_PER_DAY)

static TimestampTz current_tick;
static LocalTransactionId tick_lxid = InvalidLocalTransactionId;

PG_FUNCTION_INFO_V1(flowpg_now);

/* The interval in µs; -1 when it overflows (months are refused at creation). */
static int64
interval_usecs_or_overflow(const Interval *eval_interval)
{
	int64		days;
	int64		usecs;

	if (pg_mul_s64_overflow((int64) eval_interval->day, USECS_PER_DAY, &days) ||
		pg_add_s64_overflow(days, eval_interval->time, &usecs))
		return -1;
	return usecs;
}

void
eval_interval_check(const Interval *eval_interval)
{
	int64		usecs = interval_usecs_or_overflow(eval_interval);

	if (usecs >= 0 && usecs < EVAL_INTERVAL_MIN_USECS)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("eval_interval must be at least 1 second"),
				 errdetail("Each run of the flow is a transaction that re-evaluates its query: "
						   "more often than once a second, one flow would keep a worker busy by itself."),
				 errhint("Use a streaming flow (no eval_interval) for results within a fraction of a second.")));
	if (usecs < 0 || usecs > EVAL_INTERVAL_MAX_USECS)
		ereport(ERROR,
				(errcode(ERRCODE_INTERVAL_FIELD_OVERFLOW),
				 errmsg("eval_interval must be at most %d days", EVAL_INTERVAL_MAX_DAYS),
				 errdetail("Ticks are multiples of the interval since the Unix epoch; a longer one would never fall within the range of timestamps.")));
}

int64
eval_interval_usecs(const Interval *eval_interval)
{
	int64		usecs = interval_usecs_or_overflow(eval_interval);

	/* checked at creation; a catalog edited by hand gets the nearest bound */
	if (usecs < 0 || usecs > EVAL_INTERVAL_MAX_USECS)
		return EVAL_INTERVAL_MAX_USECS;
	return Max(usecs, EVAL_INTERVAL_MIN_USECS);
}

/* The last tick at or before t. */
TimestampTz
eval_tick_floor(const Interval *eval_interval, TimestampTz t)
{
	int64		step = eval_interval_usecs(eval_interval);
	int64		since = t - UNIX_EPOCH_TS;
	int64		rem = since % step;

	if (rem < 0)
		rem += step;
	return t - rem;
}

/* The first tick after t. */
TimestampTz
eval_tick_after(const Interval *eval_interval, TimestampTz t)
{
	return eval_tick_floor(eval_interval, t) + eval_interval_usecs(eval_interval);
}

/*
 * The tick a run due at "due" evaluates at "now": the due one, unless ticks
 * were missed (a stopped server, a long run); then, as GreptimeDB's bounded
 * catch-up does, only the newest EVAL_TICK_MAX_CATCHUP of them, one run
 * each.  (GreptimeDB also skips missed ticks older than max(5 minutes,
 * three intervals): with three ticks kept, those are never among them.)
 */
TimestampTz
eval_tick_to_run(const Interval *eval_interval, TimestampTz due, TimestampTz now)
{
	TimestampTz last = eval_tick_floor(eval_interval, now);
	TimestampTz oldest = last - (EVAL_TICK_MAX_CATCHUP - 1) * eval_interval_usecs(eval_interval);

	due = eval_tick_floor(eval_interval, due);
	return due < oldest ? oldest : (due > last ? last : due);
}

void
eval_tick_set(TimestampTz tick)
{
	current_tick = tick;
	tick_lxid = MyProc->lxid;
}

static bool
eval_tick_get(TimestampTz *tick)
{
	if (tick_lxid != MyProc->lxid || tick_lxid == InvalidLocalTransactionId)
		return false;
	*tick = current_tick;
	return true;
}

void
eval_tick_clear(void)
{
	tick_lxid = InvalidLocalTransactionId;
}

bool
eval_tick_is_set(void)
{
	TimestampTz tick;

	return eval_tick_get(&tick);
}

/* What flowpg.now() returns now: the tick being evaluated, else the transaction's start. */
TimestampTz
eval_tick_now(void)
{
	TimestampTz tick;

	if (eval_tick_get(&tick))
		return tick;
	return GetCurrentTransactionStartTimestamp();
}

Datum
flowpg_now(PG_FUNCTION_ARGS)
{
	PG_RETURN_TIMESTAMPTZ(eval_tick_now());
}
