/*-------------------------------------------------------------------------
 *
 * registry.h
 *	  The registry of streaming flows in shared memory: a slot per flow
 *	  that has been written to (or flushed), with the flags writers and
 *	  callers set for its worker, the counters the worker publishes for
 *	  flow_stats, the flush handshake, the pointer to its state and the head
 *	  of its batch queue (whose batches queue.c keeps).
 *
 * Locking: the registry LWLock guards taking and freeing slots, held
 * exclusively only to do that; looking a slot up takes it shared.  A slot's
 * spinlock guards its fields, held for a few assignments.  Neither is held
 * across a call that could wait or fail.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLOWPG_REGISTRY_H
#define FLOWPG_REGISTRY_H

#include "datatype/timestamp.h"
#include "guc.h"
#include "nodes/pg_list.h"
#include "storage/spin.h"
#include "utils/dsa.h"

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
	TimestampTz oldest_unwritten;	/* of the changes applied, not in the sink yet, 0 none */
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
	bool		degraded_whole; /* all of it */
	int64		degrades;
	int64		evictions;
	/* windows before it are not in the state (0: all are), as a time */
	TimestampTz state_from;
} StreamStats;

#define STREAM_STATUS_NONE 0
#define STREAM_STATUS_RECOVERING 1
#define STREAM_STATUS_ACTIVE 2

/*
 * A flow's batch queue, as its slot holds it: the chain of batches in the
 * queue area, oldest first.  queue.c links and unlinks batches and counts
 * them (stats.queued_batches, queued_bytes); registry.c only resets these
 * fields with the slot and reads them to answer registry_round_wanted,
 * registry_worker_behind and flow_stats.  Under the slot's spinlock.
 */
typedef struct BatchQueue
{
	dsa_pointer head;			/* oldest batch */
	dsa_pointer tail;
	int64		last_seq;
	TimestampTz oldest_queued_at;	/* the head's, 0 when empty */
	TimestampTz last_take;		/* when the worker last drained the queue */
	TimestampTz behind_until;	/* a batch found no room: see registry_worker_behind */
} BatchQueue;

typedef struct FlowSlot
{
	slock_t		mutex;
	bool		in_use;
	Oid			dboid;
	int64		flow_id;
	Oid			owner;			/* the flow's, once known (InvalidOid before) */
	TransactionId reserved_by;	/* the transaction that created the flow */
	BatchQueue	queue;
	int64		flush_requests; /* flush_flow calls so far */
	int64		flushes_done;	/* requests the worker has completed */
	int64		flushes_failed; /* requests whose round failed */
	int			flush_waiters;	/* flush_flow calls waiting now */
	bool		dirty;			/* new dirty log entries */
	bool		reset;			/* the sink was rewritten: reload the state */
	bool		evict;			/* state memory is short: this flow gives up windows */
	bool		paused;			/* pause_flow: writers log their windows dirty */
	dsa_pointer flow_state;		/* the streaming state (stream_state.c) */
	StreamStats stats;
} FlowSlot;

extern void registry_shmem_request(void);
extern void registry_shmem_startup(void);

/* Is flowpg's shared memory there (loaded through shared_preload_libraries)? */
extern bool registry_available(void);

/*
 * The flow's slot in this database; when create and it has none, a free
 * slot is taken for it (NULL when none is free: writers fall back to the
 * dirty log).  A slot can be freed and taken by another flow as soon as
 * this returns: registry_slot_is, under the slot's spinlock, tells whether
 * it is still the flow's.  registry_lock_slot does both: the flow's slot
 * with its spinlock held, or NULL.
 */
extern FlowSlot *registry_find(int64 flow_id, bool create);

/*
 * A slot for a streaming flow this transaction creates, of owner: taken now,
 * so that a flow that cannot have one is refused at creation (an ERROR)
 * rather than failing later.  The server's slots are shared by every
 * database; flowpg.max_streaming_flows_per_role bounds what one role (not a
 * superuser) holds of them, counted in every database.  Until the
 * transaction ends, the worker's sync leaves the slot alone.  With
 * missing_ok (a batching flow that may keep partial states), false instead
 * of the ERROR; false also when flowpg is not preloaded.
 */
extern bool registry_reserve(int64 flow_id, Oid owner, bool missing_ok);

/* The flow's slot, taken if it has none, records owner; false: no slot free. */
extern bool registry_claim(int64 flow_id, Oid owner);
extern bool registry_slot_is(FlowSlot *slot, Oid dboid, int64 flow_id);
extern FlowSlot *registry_lock_slot(int64 flow_id, bool create);

/*
 * Frees the slot of that flow of that database; returns its state, and in
 * *queue_head the chain of batches it held, for the caller to free.
 */
extern dsa_pointer registry_release(Oid dboid, int64 flow_id, dsa_pointer *queue_head);

/* The flows with a slot in that database. */
extern List *registry_flows(Oid dboid);

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
#define QUEUE_HURRY_BYTES ((int64) flowpg_queue_memory_kb * 1024 / QUEUE_HURRY_FRACTION)

extern QueueWant registry_round_wanted(int64 flow_id);

/* The flow's streaming state in the state area (stream_state.c's). */
extern dsa_pointer registry_get_flow_state(int64 flow_id);
extern bool registry_set_flow_state(int64 flow_id, dsa_pointer dp);

/* State memory is short: the flow with the most state gives up windows. */
extern void registry_request_evict_largest(void);
extern bool registry_take_evict(int64 flow_id);

/*
 * A paused flow keeps no partials: writers log their windows dirty instead
 * (pause_flow sets it, the worker keeps it in line with the catalog).
 */
extern void registry_set_paused(int64 flow_id, bool paused);

/* The worker publishes its view of the flow. */
extern void registry_publish(int64 flow_id, StreamStats *stats, int64 flush_done, bool failed);
extern void registry_count_fallback(int64 flow_id, int64 n);
extern bool registry_get_stats(int64 flow_id, StreamStats *stats);

/*
 * flush_flow: asks the worker to bring the sink up to the batches queued
 * so far and waits for it; FLUSH_NO_WORKER when no worker serves the flow.
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

extern FlushOutcome registry_flush_and_wait(int64 flow_id, int64 *rows_written);

/* The worker: does a flush_flow wait for any flow of this database? */
extern bool registry_any_flush_requested(void);

/* The worker: flush requests pending for the flow (0: none). */
extern int64 registry_flush_requested(int64 flow_id);

/*
 * Writers: the flow has new dirty log entries (set before commit).  False
 * when the flow has no slot (a batching flow, or a streaming one that was
 * never written to), which its schedule finds.
 */
extern bool registry_note_dirty(int64 flow_id);

/* Sets dirty_log_commit_hook to registry_note_dirty; called in _PG_init. */
extern void registry_install_hooks(void);
extern bool registry_take_dirty(int64 flow_id);

/*
 * Has a batch of the flow lately found no room in the queue (within two
 * seconds)?  Then the worker is behind: writers send their rows of the flow
 * to the recompute at once, capturing only time ranges (as batching does)
 * instead of computing partials that would not fit either, and the worker
 * recomputes those windows every flowpg.min_refresh_interval rather than at
 * every fallback -- the flow degrades to batching until it has caught up.
 */
extern bool registry_worker_behind(int64 flow_id);

/* refresh_flow rewrote a streaming flow's sink: the worker reloads it. */
extern void registry_request_reset(int64 flow_id);
extern bool registry_take_reset(int64 flow_id);

#endif							/* FLOWPG_REGISTRY_H */
