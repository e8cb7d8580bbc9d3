/*-------------------------------------------------------------------------
 *
 * ddl_suspend.h
 *	  Flows of flowpg.execute whose source or sink is dropped become
 *	  pending flows.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLOWPG_DDL_SUSPEND_H
#define FLOWPG_DDL_SUSPEND_H

/* A table about to be dropped: GreptimeDB's flows over it become pending. */
extern void ddl_suspend_flows(Oid relid);

#endif							/* FLOWPG_DDL_SUSPEND_H */
