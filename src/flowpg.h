/*-------------------------------------------------------------------------
 *
 * flowpg.h
 *	  The preload check of flowpg (its settings are guc.h's).
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLOWPG_H
#define FLOWPG_H

/* Errors out unless flowpg was loaded through shared_preload_libraries. */
extern void flowpg_require_preload(void);

#endif							/* FLOWPG_H */
