/*-------------------------------------------------------------------------
 *
 * capture_graphs.h
 *	  A writer's compiled operator graphs of the streaming flows it feeds,
 *	  and what each flow's transactions have shown about shipping rows.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLOWPG_CAPTURE_GRAPHS_H
#define FLOWPG_CAPTURE_GRAPHS_H

#include "utils/array.h"
#include "utils/rel.h"

#include "operator.h"

/* A compiled graph of this backend, and column maps of the tables it reads. */
typedef struct GraphCacheEntry
{
	int64		flow_id;		/* hash key */
	StreamGraph *graph;
	Oid			owner;
	ArrayType  *settings;
	List	   *maps;			/* RelationMap */

	/*
	 * The owner's rights to run the flow's query (SELECT on its columns,
	 * EXECUTE on its functions), and whether row-level security filters its
	 * sources for the owner: checked by the capture once, again after a
	 * change of ACLs, policies, roles or functions (this file's
	 * invalidation callbacks clear rights_checked).
	 */
	bool		rights_checked;
	bool		row_security;	/* rows go to the recompute, which applies it */

	/* streaming_ship = auto: the last measure, and transactions since */
	bool		rows_pay;
	int			since_measure;
} GraphCacheEntry;

/*
 * The flow's graph of this version, built as its owner under its settings
 * (the graph it replaces lives on until the transaction ends).
 */
extern GraphCacheEntry *capture_graph_get(int64 flow_id, uint32 version);

/* The cached graph of that version, NULL when none is built yet (no error). */
extern StreamGraph *capture_graph_cached(int64 flow_id, uint32 version);

/* The graph's columns in a table of the flow (by attribute number). */
extern AttrNumber *capture_graph_map(GraphCacheEntry *entry, Relation rel);

/* Whether a transaction's new partial of the flow ships rows or groups. */
extern bool capture_graph_ship_rows(GraphCacheEntry *entry);

/* A shipped partial that had groups: its entries for its accepted rows. */
extern void capture_graph_measure(int64 flow_id, StreamGraph *graph, int64 entries,
								  int64 naccepted);

/* At the end of a transaction: graphs replaced during it. */
extern void capture_graphs_free_retired(void);

#endif							/* FLOWPG_CAPTURE_GRAPHS_H */
