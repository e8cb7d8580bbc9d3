/*-------------------------------------------------------------------------
 *
 * capture_graphs.h
 *	  A writer's compiled operator graphs of the streaming flows it feeds:
 *	  which columns of a table each flow reads.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLOWPG_CAPTURE_GRAPHS_H
#define FLOWPG_CAPTURE_GRAPHS_H

#include "utils/rel.h"

#include "operator.h"

/*
 * The flow's graph of this version, built as its owner under its settings;
 * valid until the next call for the flow.  Errors when it cannot be built.
 */
extern StreamGraph *capture_graph_get(int64 flow_id, uint32 version);

/* The columns of capture_graph_get's graph in a table of the flow (attribute numbers). */
extern AttrNumber *capture_graph_map(int64 flow_id, Relation rel);

#endif							/* FLOWPG_CAPTURE_GRAPHS_H */
