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

/* Bytes of streaming state in the area, all databases (flowpg.state_memory). */
extern pg_atomic_uint64 *shmem_state_total(void);

/* Is the state of all streaming flows above flowpg.state_memory (the soft limit)? */
extern bool shmem_state_exceeded(void);

#endif							/* FLOWPG_SHMEM_H */
