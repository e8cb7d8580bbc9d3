/*-------------------------------------------------------------------------
 *
 * greptime.h
 *	  GreptimeDB's flow statements (flowpg.execute): what other components
 *	  call of them -- the run of a pending flow's statement, by its start
 *	  (pending_flow.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLOWPG_GREPTIME_H
#define FLOWPG_GREPTIME_H

#include "funcapi.h"
#include "utils/array.h"

/*
 * Parses and runs the statements of the text, in order; with
 * pending_settings, the one CREATE FLOW of a pending flow starting (its
 * result rows go nowhere): true when it was created.
 */
extern bool greptime_run_statement(const char *statement, ReturnSetInfo *rsinfo,
								   ArrayType *pending_settings);

#endif							/* FLOWPG_GREPTIME_H */
