/*-------------------------------------------------------------------------
 *
 * stream_state.h
 *	  What the rest of flowpg may do with streaming flows' state and
 *	  rounds: run the rounds (stream_round.c), follow the catalog and free
 *	  what a dropped flow or database left (stream_state.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLOWPG_STREAM_STATE_H
#define FLOWPG_STREAM_STATE_H

/*
 * Runs the rounds due of the database's streaming flows that no other
 * worker runs (in a worker, outside a transaction); *worked is set when it
 * ran one.  Returns how long the worker may sleep, in milliseconds.
 * (stream_round.c)
 */
extern long stream_run(bool *worked);

/* After DROP DATABASE: the queues and state of its flows are freed. */
extern void stream_forget_database(Oid dboid);

/* Frees the queues and state of this database's flows that are gone (a worker leaving). */
extern void stream_sync(void);

#endif							/* FLOWPG_STREAM_STATE_H */
