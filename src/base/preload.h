/*-------------------------------------------------------------------------
 *
 * preload.h
 *	  Whether flowpg was loaded through shared_preload_libraries, which its
 *	  shared memory, workers and settings need.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLOWPG_PRELOAD_H
#define FLOWPG_PRELOAD_H

/* _PG_init, while shared_preload_libraries loads flowpg. */
extern void preload_mark_loaded(void);

extern bool preload_loaded(void);

/* Errors out unless flowpg was loaded through shared_preload_libraries. */
extern void preload_require(void);

#endif							/* FLOWPG_PRELOAD_H */
