/*-------------------------------------------------------------------------
 *
 * queue.h
 *	  The input queues of streaming flows: each flow's transaction batches,
 *	  in a DSA area of flowpg.queue_memory; their heads are in the flows'
 *	  registry slots (registry.h).
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

extern void queue_shmem_request(void);
extern void queue_shmem_startup(void);

/* A flow a transaction's rows are queued for. */
typedef struct QueueTarget
{
	int64		flow_id;
	uint32		version;		/* of the flow the rows were captured for */
	int64		nrows;			/* its rows among them */
	bool		queued;			/* out */
} QueueTarget;

/*
 * Appends a transaction's rows (one copy) to the queues of the target
 * flows.  Waits up to a short while for room (the worker drains); a target
 * whose queued stays false got nothing (no room, no flow slot, paused).
 * *wake tells whether the worker should be woken at commit: a queue was
 * empty, or it has just grown past QUEUE_HURRY_FRACTION of the queue memory.
 */
extern void queue_append(QueueTarget *targets, int ntargets, TransactionId xid,
						 StringInfo data, bool *wake);

/*
 * The flow's queued batches, oldest first, their rows read in place in
 * shared memory.  They stay queued
 * until queue_remove, once the round that applied them has committed: a
 * worker that dies meanwhile loses none.
 */
extern List *queue_peek(int64 flow_id);

/*
 * Bytes of transactions' rows the queue area holds now, each counted once
 * whatever the number of flows waiting for it (the server's, all databases).
 */
extern uint64 queue_rows_bytes(void);
extern void queue_remove(int64 flow_id, List *batches);

/* Frees the flow's slot and queue (the flow is gone); returns its state. */
extern dsa_pointer queue_forget(int64 flow_id);

/* The same for every flow of a dropped database (dsa_pointer * list). */
extern List *queue_forget_database(Oid dboid);

#endif							/* FLOWPG_QUEUE_H */
