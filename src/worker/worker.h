/*-------------------------------------------------------------------------
 *
 * worker.h
 *	  flowpg's background workers: the launcher, and the workers that run a
 *	  database's flows (their shared pool is pool.h's).
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLOWPG_WORKER_H
#define FLOWPG_WORKER_H

/* At load in the postmaster: the launcher. */
extern void worker_register(void);

#endif							/* FLOWPG_WORKER_H */
