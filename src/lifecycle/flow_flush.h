/*-------------------------------------------------------------------------
 *
 * flow_flush.h
 *	  flush_flow, for the SQL function and ADMIN FLUSH_FLOW.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLOWPG_FLOW_FLUSH_H
#define FLOWPG_FLOW_FLUSH_H

/*
 * Flushes the flow of that stored name (and the flows it reads from,
 * upstream first); returns the sink rows written.
 */
extern int64 flow_flush(const char *flow_name);

#endif							/* FLOWPG_FLOW_FLUSH_H */
