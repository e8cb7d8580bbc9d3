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

/* A run's counts, as flowpg.flow_run adds them up. */
typedef struct RunResult
{
	uint64		rows_out;		/* sink rows written */
	int64		rows_in;		/* source rows the consumed log entries covered */
	int			log_entries;	/* dirty log entries consumed */
	bool		more_pending;	/* the log held more than one run may take */
	int64		window_usecs;	/* width of the flow's current window, 0 if none */
} RunResult;

/* A successful run; next_run 0 leaves the schedule as it is. */
extern void stats_record_run(int64 flow_id, RunResult *result,
							 TimestampTz started, TimestampTz finished,
							 TimestampTz next_run);

/*
 * A streaming flow's rounds since the last record, summed in result; the
 * last of them ran from last_started to last_finished.
 */
extern void stats_record_rounds(int64 flow_id, RunResult *result, int64 rounds,
								TimestampTz last_started, TimestampTz last_finished);

/*
 * A failed run: counts it, keeps the error (the last few per flow), marks
 * the flow failed and returns how many runs in a row have failed.
 */
extern void stats_record_flush(int64 flow_id, TimestampTz at);
extern int	stats_record_failure(int64 flow_id, ErrorData *edata,
								 TimestampTz started, TimestampTz finished);

/*
 * Something a flow's owner must hear of that is not a failure of the flow
 * (a partition of its sink dropped): kept in flowpg.flow_error as errors
 * are, the flow's state unchanged.
 */
extern void stats_record_warning(int64 flow_id, int sqlerrcode, const char *message,
								 const char *detail);

/* An error kept in flowpg.flow_error (flowpg.flow_errors shows them). */
typedef struct FlowErrorRecord
{
	TimestampTz at;
	char	   *sqlstate;
	char	   *message;
	char	   *detail;			/* NULL when it had none */
} FlowErrorRecord;

/*
 * The flow's most recent error, NULL when none is kept.  Its texts can
 * quote data: for roles that may act for the flow's owner only.
 */
extern FlowErrorRecord *stats_last_error(int64 flow_id);

extern void stats_set_next_run(int64 flow_id, TimestampTz next_run);
extern bool stats_next_run(int64 flow_id, TimestampTz *next_run);

/*
 * The time a recording rule's query was last evaluated at (a tick, or a
 * flush's or refresh's now()); false when it never was.
 */
extern void stats_set_last_tick(int64 flow_id, TimestampTz tick);
extern bool stats_last_tick(int64 flow_id, TimestampTz *tick);

/* Deletes the counters and errors of a flow that is dropped. */
extern void stats_forget(int64 flow_id);

/* Has the flow ever completed a run (so its sink was written)? */
extern bool stats_ever_ran(int64 flow_id, TimestampTz since);


#endif							/* FLOWPG_STATS_H */
