/*-------------------------------------------------------------------------
 *
 * privileged.h
 *	  Statements flowpg runs as its extension's owner: on its own tables,
 *	  and the DDL it makes for flows (capture triggers, dependency views).
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLOWPG_PRIVILEGED_H
#define FLOWPG_PRIVILEGED_H

#include "fmgr.h"

/* A caller's identity, settings and memory, kept while privileged. */
typedef struct PrivilegedAccess
{
	Oid			save_userid;
	int			save_sec_context;
	int			nestlevel;
	MemoryContext caller_context;
} PrivilegedAccess;

/*
 * Becomes the owner of flowpg's catalog, in a restricted security context
 * under a safe search_path, connected to SPI; privileged_end goes back.
 */
extern void privileged_begin(PrivilegedAccess *access);
extern void privileged_end(PrivilegedAccess *access);

/*
 * Runs a statement on flowpg's tables as the extension owner and leaves its
 * result in SPI_tuptable until privileged_query_end().
 */
extern void privileged_query(const char *sql, int nargs, Oid *argtypes,
									 Datum *args, const char *nulls);
extern void privileged_query_end(void);

/* True while privileged_execute runs: event triggers stand aside. */
extern bool privileged_own_ddl;

/* The same for a statement whose result is not needed. */
extern void privileged_execute(const char *sql, int nargs, Oid *argtypes,
									   Datum *args, const char *nulls);

/* The same for a statement whose one parameter $1 is a flow id. */
extern void privileged_execute_for_flow(const char *sql, int64 flow_id);

#endif							/* FLOWPG_PRIVILEGED_H */
