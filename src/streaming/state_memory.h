/*-------------------------------------------------------------------------
 *
 * state_memory.h
 *	  The state DSA area of streaming flows, and each database's fair
 *	  share of flowpg.state_memory.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLOWPG_STATE_MEMORY_H
#define FLOWPG_STATE_MEMORY_H

#include "port/atomics.h"
#include "utils/dsa.h"

/*
 * Its fixed part: reserved in the shmem_request hook, initialized in the
 * shmem_startup hook under AddinShmemInitLock (flowpg.c calls both).
 */
extern void state_memory_shmem_request(void);
extern void state_memory_shmem_startup(void);

/* The state area (created on first use, kept until the server stops). */
extern dsa_area *state_memory_area(void);

/*
 * Bytes of streaming state, counted for the whole server (flowpg.state_memory)
 * and per database: state_memory_database gives a database's entry (-1 when
 * all are taken: then it is counted in the total only), state_memory_charge
 * counts an allocation (delta > 0) or a free, state_memory_admit says whether
 * an allocation of size may be made (the fair share), state_memory_has_room
 * whether a database's degraded flows may load their state again (half of
 * flowpg.state_memory free, or the database under half its share).
 */
extern int	state_memory_database(Oid dboid);
extern void state_memory_charge(int database, int64 delta);
extern bool state_memory_admit(int database, Size size);
extern bool state_memory_has_room(Oid dboid);

/*
 * A 53200 raised because the state area refused an allocation (admission
 * or DSA) is noted, so that a failed round tells it from any other
 * out-of-memory error: take returns and clears the note.
 */
extern void state_memory_note_refusal(void);
extern bool state_memory_take_refusal(void);

/* Is the state of all streaming flows at flowpg.state_memory (the soft limit)? */
extern bool state_memory_exceeded(void);

/*
 * flowpg.memory: the state a database holds, all databases together, and
 * the database's fair share of flowpg.state_memory now.
 */
extern void state_memory_usage(Oid dboid, int64 *database_bytes, int64 *server_bytes,
							  int64 *share);

#endif							/* FLOWPG_STATE_MEMORY_H */
