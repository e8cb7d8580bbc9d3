/*-------------------------------------------------------------------------
 *
 * restore.h
 *	  Flows that arrive through a restore: re-planned, held in state
 *	  'restoring' until their tables are complete, then recomputed once.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLOWPG_RESTORE_H
#define FLOWPG_RESTORE_H

#include "catalog.h"

/*
 * For a flow in state 'restoring': when everything it needs is restored,
 * makes it active and logs it dirty as a whole, and returns true; else
 * records what it waits for (or, with error_if_not, raises an error).
 */
extern bool restore_finish(FlowEntry *entry, bool error_if_not);

#endif							/* FLOWPG_RESTORE_H */
