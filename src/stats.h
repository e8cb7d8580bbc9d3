/*-------------------------------------------------------------------------
 *
 * stats.h
 *	  Run statistics and error history of flows (flow_stats, flow_errors).
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLOWPG_STATS_H
#define FLOWPG_STATS_H

#include "utils/timestamp.h"

#include "batch.h"

/* A successful run; next_run 0 leaves the schedule as it is. */
extern void stats_record_run(int64 flow_id, BatchResult *result,
							 TimestampTz started, TimestampTz finished,
							 TimestampTz next_run);

/*
 * A failed run: counts it, keeps the error (the last few per flow), marks
 * the flow failed and returns how many runs in a row have failed.
 */
extern int	stats_record_failure(int64 flow_id, ErrorData *edata,
								 TimestampTz started, TimestampTz finished);

extern void stats_set_next_run(int64 flow_id, TimestampTz next_run);

#endif							/* FLOWPG_STATS_H */
