/*-------------------------------------------------------------------------
 *
 * shmem.h
 *	  flowpg's shared memory: reserved and initialized in one place, and
 *	  the state DSA area of streaming flows.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLOWPG_SHMEM_H
#define FLOWPG_SHMEM_H

#include "port/atomics.h"
#include "utils/dsa.h"

/* From _PG_init in the postmaster: installs the shared memory hooks. */
extern void shmem_install_hooks(void);

/* The state area (created on first use, kept until the server stops). */
extern dsa_area *shmem_state_area(void);

/*
 * Bytes of streaming state, counted for the whole server (flowpg.state_memory)
 * and per database: shmem_state_database gives a database's entry (-1 when
 * all are taken: then it is counted in the total only), shmem_state_charge
 * counts an allocation (delta > 0) or a free, shmem_state_admit says whether
 * an allocation of size may be made (the fair share), shmem_state_has_room
 * whether a database's degraded flows may load their state again (half of
 * flowpg.state_memory free, or the database under half its share).
 */
extern int	shmem_state_database(Oid dboid);
extern void shmem_state_charge(int database, int64 delta);
extern bool shmem_state_admit(int database, Size size);
extern bool shmem_state_has_room(Oid dboid);

/*
 * A 53200 raised because the state area refused an allocation (admission
 * or DSA) is noted, so that a failed round tells it from any other
 * out-of-memory error: take returns and clears the note.
 */
extern void shmem_state_note_refusal(void);
extern bool shmem_state_take_refusal(void);

/* Is the state of all streaming flows at flowpg.state_memory (the soft limit)? */
extern bool shmem_state_exceeded(void);

/*
 * flowpg.memory: the state a database holds, all databases together, and
 * the database's fair share of flowpg.state_memory now.
 */
extern void shmem_state_usage(Oid dboid, int64 *database_bytes, int64 *server_bytes,
							  int64 *share);

#endif							/* FLOWPG_SHMEM_H */
