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

extern int64 eval_interval_usecs(const Interval *eval_interval);
extern TimestampTz eval_tick_floor(const Interval *eval_interval, TimestampTz t);
extern TimestampTz eval_tick_after(const Interval *eval_interval, TimestampTz t);
extern TimestampTz eval_tick_to_run(const Interval *eval_interval, TimestampTz due,
									TimestampTz now);
extern void eval_tick_set(TimestampTz tick);
extern void eval_tick_clear(void);

#endif							/* FLOWPG_EVAL_TICK_H */
