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
 * In a worker: did roles change (in any database) since this database's
 * flows were last rechecked?  In a worker's transaction: if so, the flows
 * over tables with row-level security are recomputed.  The database's pool
 * keeps what it has seen, so a change made while it had no worker is
 * rechecked by the next one (a server restart forgets: see docs/limits.md).
 */
extern bool visibility_roles_changed(void);
extern void visibility_recheck_if_roles_changed(void);

#endif							/* FLOWPG_VISIBILITY_H */
