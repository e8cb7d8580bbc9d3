/*-------------------------------------------------------------------------
 *
 * queue.h
 *	  flowpg's shared memory for streaming: the registry of flows (a slot
 *	  per flow with its counters) and their input queues of transaction
 *	  batches, allocated in a DSA area of flowpg.queue_memory.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLOWPG_QUEUE_H
#define FLOWPG_QUEUE_H

#include "datatype/timestamp.h"
#include "lib/stringinfo.h"
#include "nodes/pg_list.h"
#include "utils/dsa.h"

/* One committed-or-not transaction's partial result for one flow. */
typedef struct QueuedBatch
{
	int64		seq;			/* order of arrival in the flow's queue */
	TransactionId xid;			/* the writer's top-level transaction */
	uint32		version;		/* graph version it was computed with */
	int32		count;			/* groups (aggregates) or rows */
	int64		nrows;			/* source rows it summarizes */
	TimestampTz queued_at;
	Size		len;
	char	   *data;
} QueuedBatch;

/* What flow_stats shows of a flow's streaming side. */
typedef struct StreamStats
{
	int64		state_groups;
	int64		state_bytes;
	int64		queued_batches;
	int64		queued_bytes;
	int64		batches_applied;
	int64		batches_dropped;	/* rolled back */
	int64		fallbacks;		/* windows handed to the recompute */
	int64		freshness_us;	/* commit to sink of the last flush, -1 none */
	TimestampTz last_flush_at;
	int			status;			/* STREAM_STATUS_* */
	int64		round_rows;		/* sink rows the last round wrote */
	TimestampTz oldest_queued_at;	/* of the batches not taken yet, 0 none */
	int64		refills;		/* state loaded whole from the source */
	int64		repairs;		/* unfinished rounds recomputed */
	pid_t		last_worker;	/* the worker of the last round */
	/* rounds not yet added to flowpg.flow_run, and the last one's timing */
	int64		unrecorded_runs;
	int64		unrecorded_rows_in;
	int64		unrecorded_rows_out;
	TimestampTz last_round_at;	/* when the last round that did work ended */
	int64		last_round_us;	/* and how long it ran */
	TimestampTz retry_at;		/* the next attempt of a failed flow, 0 none */
	/* flowpg.memory: what memory limits took from the state */
	bool		degraded;		/* recomputed (all or older windows) for now */
	int64		degrades;
	int64		evictions;
} StreamStats;

#define STREAM_STATUS_NONE 0
#define STREAM_STATUS_RECOVERING 1
#define STREAM_STATUS_ACTIVE 2

extern void queue_shmem_request(void);

/* Is flowpg's shared memory there (loaded through shared_preload_libraries)? */
extern bool queue_available(void);
extern void queue_shmem_startup(void);

/*
 * Appends a batch to the flow's queue.  Waits up to a short while for room
 * (the worker drains); false when there is none, or no flow slot is free.
 * *wake tells whether the worker should be woken at commit: the queue was
 * empty, or it has just grown past QUEUE_HURRY_FRACTION of the queue memory.
 */
extern bool queue_append(int64 flow_id, TransactionId xid, uint32 version,
						 int32 count, int64 nrows, StringInfo data, bool *wake);

/*
 * Copies of the flow's queued batches, oldest first.  They stay queued
 * until queue_remove, once the round that applied them has committed: a
 * worker that dies meanwhile loses none.
 */
extern List *queue_peek(int64 flow_id);
extern void queue_remove(int64 flow_id, List *batches);

/*
 * What a round of the flow would find: nothing; only batches, which can wait
 * for the flow's next sink write (flowpg.flush_interval after the last), as
 * the sink shows nothing sooner; or something that wants a round now (dirt,
 * a flush_flow call, a reset, eviction, or a queue past its hurry mark).
 */
typedef enum QueueWant
{
	QUEUE_WANT_NONE,
	QUEUE_WANT_BATCHES,
	QUEUE_WANT_NOW
} QueueWant;

/* A queue holding more than this share of the queue memory is drained at once. */
#define QUEUE_HURRY_FRACTION 8

extern QueueWant queue_round_wanted(int64 flow_id);

/* The flow's streaming state in the state area (stream_state.c's). */
extern dsa_pointer queue_get_flow_state(int64 flow_id);
extern bool queue_set_flow_state(int64 flow_id, dsa_pointer dp);

/* State memory is short: the flow with the most state gives up windows. */
extern void queue_request_evict_largest(void);
extern bool queue_take_evict(int64 flow_id);

/* Frees the flow's slot and queue (the flow is gone); returns its state. */
extern dsa_pointer queue_forget(int64 flow_id);

/* The same for every flow of a dropped database (dsa_pointer * list). */
extern List *queue_forget_database(Oid dboid);

/* The flows with a slot in this database. */
extern List *queue_flows(void);

/*
 * A paused flow keeps no partials: writers log their windows dirty instead
 * (pause_flow sets it, the worker keeps it in line with the catalog).
 */
extern void queue_set_paused(int64 flow_id, bool paused);

/* The worker publishes its view of the flow. */
extern void queue_publish(int64 flow_id, StreamStats *stats, int64 flush_done, bool failed);
extern void queue_count_fallback(int64 flow_id, int64 n);
extern bool queue_get_stats(int64 flow_id, StreamStats *stats);

/*
 * flush_flow: asks the worker to bring the sink up to the batches queued
 * so far and waits for it; false when no worker serves the flow.
 */
typedef enum FlushOutcome
{
	FLUSH_NO_WORKER,
	FLUSH_DONE,
	FLUSH_FAILED,
	FLUSH_WORKER_BLOCKED,		/* the worker waits for a lock the caller holds */
	FLUSH_TIMED_OUT,			/* no answer within flowpg.query_timeout */
	FLUSH_PAUSED				/* pause_flow came first */
} FlushOutcome;

extern FlushOutcome queue_flush_and_wait(int64 flow_id, int64 *rows_written);

/* The worker: does a flush_flow wait for any flow of this database? */
extern bool stream_flush_requested(void);

/* The worker: flush requests pending for the flow (0: none). */
extern int64 queue_flush_requested(int64 flow_id);

/* Writers: the flow has new dirty log entries (set after commit). */
extern void queue_note_dirty(int64 flow_id);
extern bool queue_take_dirty(int64 flow_id);

/*
 * Has a batch of the flow lately found no room in the queue (within two
 * seconds)?  Then the worker is behind: writers send their rows of the flow
 * to the recompute at once, capturing only time ranges (as batching does)
 * instead of computing partials that would not fit either, and the worker
 * recomputes those windows every flowpg.min_refresh_interval rather than at
 * every fallback -- the flow degrades to batching until it has caught up.
 */
extern bool queue_worker_behind(int64 flow_id);

/* refresh_flow rewrote a streaming flow's sink: the worker reloads it. */
extern void queue_request_reset(int64 flow_id);
extern bool queue_take_reset(int64 flow_id);

#endif							/* FLOWPG_QUEUE_H */
