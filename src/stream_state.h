/*-------------------------------------------------------------------------
 *
 * stream_state.h
 *	  The worker's side of streaming flows: group state, applying queued
 *	  batches of committed transactions, writing changed groups to sinks.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLOWPG_STREAM_STATE_H
#define FLOWPG_STREAM_STATE_H

/*
 * One round over the database's streaming flows (in the worker, outside a
 * transaction).  Returns how long the worker may sleep, in milliseconds.
 */
extern long stream_run(void);

#endif							/* FLOWPG_STREAM_STATE_H */
