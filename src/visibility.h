/*-------------------------------------------------------------------------
 *
 * visibility.h
 *	  Recomputing flows when what their owners may see changes
 *	  (policies, row-level security, ownership, roles).
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLOWPG_VISIBILITY_H
#define FLOWPG_VISIBILITY_H

#include "nodes/nodes.h"

/* After a utility statement (flowpg's ProcessUtility hook). */
extern void visibility_after_utility(Node *stmt);

/*
 * In a worker's transaction: when roles changed since *seen_epoch (in any
 * database), the flows over tables with row-level security are recomputed.
 */
extern void visibility_recheck_if_roles_changed(uint64 *seen_epoch);

#endif							/* FLOWPG_VISIBILITY_H */
