/*-------------------------------------------------------------------------
 *
 * timescale.h
 *	  TimescaleDB's names in a flow's query (timescale.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLOWPG_TIMESCALE_H
#define FLOWPG_TIMESCALE_H

#include "nodes/parsenodes.h"

/* Before analysis: time_bucket, first and last, where nothing else has those names. */
extern void timescale_rewrite_raw(Node *stmt);

/* After analysis: the common forms of time_bucket as date_bin / date_trunc. */
extern Query *timescale_rewrite_query(Query *query);

#endif							/* FLOWPG_TIMESCALE_H */
