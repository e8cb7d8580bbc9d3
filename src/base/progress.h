/*-------------------------------------------------------------------------
 *
 * progress.h
 *	  What each backend is doing for a flow right now: flowpg.flow_progress,
 *	  the running columns of flowpg.flow_stats and the label of the
 *	  statements a run executes.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLOWPG_PROGRESS_H
#define FLOWPG_PROGRESS_H

#include "datatype/timestamp.h"

/* The work a backend does for a flow (flowpg.flow_progress.command). */
typedef enum ProgressCommand
{
	PROGRESS_NONE,
	PROGRESS_REFRESH,			/* batching: the dirty windows */
	PROGRESS_RECOMPUTE,			/* refresh_flow, a whole recompute */
	PROGRESS_BACKFILL,			/* a piece of an online backfill */
	PROGRESS_STREAM_ROUND,		/* a streaming round */
	PROGRESS_VERIFY,			/* verify_flow */
	PROGRESS_EXPLAIN			/* explain_flow */
} ProgressCommand;

/* Shared memory (called by flowpg.c) and the abort callback (_PG_init). */
extern void progress_shmem_request(void);
extern void progress_shmem_startup(void);
extern void progress_register_callbacks(void);

/*
 * This backend starts working for the flow: a row of flowpg.flow_progress
 * until progress_end (or the transaction's abort).  Nested begins (a flush running
 * a refresh) keep the outer command, with the inner's phase.
 */
extern void progress_begin(int64 flow_id, ProgressCommand command);
extern void progress_end(void);

/*
 * Ends the outermost begin, whatever was nested in it: for work begun
 * outside a transaction (a streaming round), whose nested runs an error
 * may have left unended.
 */
extern void progress_end_all(void);

/* Where the work is, and how far: -1 leaves a count as it is. */
extern void progress_phase(const char *phase);
extern void progress_counts(int64 windows_done, int64 windows_total, int64 rows_read,
							int64 rows_written);
extern void progress_add_rows_read(int64 rows);

/* A statement run for the flow, prefixed with a comment naming it. */
extern char *progress_label_sql(const char *flow_name, const char *sql);

#endif							/* FLOWPG_PROGRESS_H */
