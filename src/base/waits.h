/*-------------------------------------------------------------------------
 *
 * waits.h
 *	  Why a due batching flow waits for a worker (see waits.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLOWPG_WAITS_H
#define FLOWPG_WAITS_H

#include "pool.h"

extern void waits_shmem_request(void);
extern void waits_shmem_startup(void);

/* In a worker: the flow, due, could not be claimed, for that reason. */
extern void waits_record(int64 flow_id, PoolWaitReason reason, int held, int capacity);

/* In a worker: the flow runs now (it waits no more). */
extern void waits_clear(int64 flow_id);

#endif							/* FLOWPG_WAITS_H */
