/*-------------------------------------------------------------------------
 *
 * eval_tick.h
 *	  EVAL INTERVAL ticks and the now() a flow's query sees.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLOWPG_EVAL_TICK_H
#define FLOWPG_EVAL_TICK_H

#include "datatype/timestamp.h"

/* Missed ticks: the newest this many run; older ones are skipped. */
#define EVAL_TICK_MAX_CATCHUP 3

/*
 * Bounds of an eval_interval: at least a second (each run is a transaction
 * and a recompute), at most about a century (tick arithmetic in µs stays far
 * from overflowing).  eval_interval_check raises the error for a new flow.
 */
#define EVAL_INTERVAL_MIN_USECS USECS_PER_SEC
#define EVAL_INTERVAL_MAX_DAYS 36500
#define EVAL_INTERVAL_MAX_USECS ((int64) EVAL_INTERVAL_MAX_DAYS * USECS_PER_DAY)

extern void eval_interval_check(const Interval *eval_interval);
extern int64 eval_interval_usecs(const Interval *eval_interval);
extern TimestampTz eval_tick_floor(const Interval *eval_interval, TimestampTz t);
extern TimestampTz eval_tick_after(const Interval *eval_interval, TimestampTz t);
extern TimestampTz eval_tick_to_run(const Interval *eval_interval, TimestampTz due,
									TimestampTz now);
extern void eval_tick_set(TimestampTz tick);
extern void eval_tick_clear(void);
extern TimestampTz eval_tick_now(void);
extern bool eval_tick_is_set(void);

#endif							/* FLOWPG_EVAL_TICK_H */
