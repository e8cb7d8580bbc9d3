/*-------------------------------------------------------------------------
 *
 * ddl_guards.h
 *	  Changes to tables that PostgreSQL's dependencies say too little
 *	  about, checked before they run (ddl_guards.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLOWPG_DDL_GUARDS_H
#define FLOWPG_DDL_GUARDS_H

#include "nodes/parsenodes.h"

/*
 * ALTER COLUMN ... TYPE of a column that flows read (of relid, or of its
 * partitions and children, to which it recurses): refused, naming every
 * flow and the way out.
 */
extern void ddl_refuse_column_retype(Oid relid, const char *column);

/*
 * Partition relid leaves a sink (what: DROP, DETACH, TRUNCATE): the flows
 * writing the sink recompute their maintained windows; the session and
 * flowpg.flow_errors hear of the rows lost below the horizon.
 */
extern void ddl_sink_partition_leaves(Oid relid, const char *what);

/* DROP EXTENSION flowpg without CASCADE while flows exist: refused, saying so. */
extern void ddl_refuse_drop_extension(DropStmt *drop);

#endif							/* FLOWPG_DDL_GUARDS_H */
