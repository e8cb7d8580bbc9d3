/*-------------------------------------------------------------------------
 *
 * capture_graphs.c
 *	  A writer's compiled operator graphs of the streaming flows it feeds.
 *
 * A writer evaluates none of a flow's expressions: it copies the columns
 * its table's flows read (stream_capture.c), and the worker runs the
 * flows.  What it needs of a flow -- the columns, the time column, whether
 * it can take rows back -- is its graph's, compiled once per backend (as
 * the flow's owner, under its settings, as everywhere) and again when the
 * flow's definition changes.  The columns' numbers in a table are matched
 * by name (a partition may number them differently) and forgotten when
 * the table changes.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/memutils.h"

#include "capture_graphs.h"
#include "catalog.h"
#include "settings.h"

typedef struct RelationMap
{
	Oid			relid;
	AttrNumber *map;
} RelationMap;

typedef struct GraphCacheEntry
{
	int64		flow_id;		/* hash key */
	StreamGraph *graph;
	List	   *maps;			/* RelationMap, in the graph's memory */
} GraphCacheEntry;

static HTAB *graph_cache = NULL;
static MemoryContext graph_cache_memory = NULL;

/* ALTER TABLE may renumber columns: maps into the table are made again. */
static void
maps_relcache_callback(Datum arg, Oid relid)
{
	HASH_SEQ_STATUS status;
	GraphCacheEntry *entry;

	hash_seq_init(&status, graph_cache);
	while ((entry = hash_seq_search(&status)) != NULL)
	{
		ListCell   *lc;

		foreach(lc, entry->maps)
		{
			RelationMap *rm = lfirst(lc);

			if (!OidIsValid(relid) || rm->relid == relid)
				rm->relid = InvalidOid; /* never found again */
		}
	}
}

static void
create_cache(void)
{
	HASHCTL		ctl;

	graph_cache_memory = AllocSetContextCreate(TopMemoryContext, "flowpg graphs",
											   ALLOCSET_SMALL_SIZES);
	ctl.keysize = sizeof(int64);
	ctl.entrysize = sizeof(GraphCacheEntry);
	ctl.hcxt = graph_cache_memory;
	graph_cache = hash_create("flowpg graphs", 16, &ctl,
							  HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	CacheRegisterRelcacheCallback(maps_relcache_callback, (Datum) 0);
}

StreamGraph *
capture_graph_get(int64 flow_id, uint32 version)
{
	GraphCacheEntry *entry;
	bool		found;
	FlowEntry  *flow;
	FlowIdentity identity;
	StreamGraph *graph;

	if (graph_cache == NULL)
		create_cache();
	entry = hash_search(graph_cache, &flow_id, HASH_FIND, NULL);
	if (entry && entry->graph->version == version)
		return entry->graph;

	flow = catalog_get_by_id(flow_id);
	if (flow == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("flowpg: flow %lld disappeared", (long long) flow_id)));
	flow_enter(&identity, flow->owner, flow->settings, false);
	graph = graph_build(flow, graph_cache_memory);
	flow_leave(&identity);

	entry = hash_search(graph_cache, &flow_id, HASH_ENTER, &found);
	if (found)
		graph_free(entry->graph);	/* its maps were in its memory */
	entry->graph = graph;
	entry->maps = NIL;
	return graph;
}

AttrNumber *
capture_graph_map(int64 flow_id, Relation rel)
{
	GraphCacheEntry *entry = hash_search(graph_cache, &flow_id, HASH_FIND, NULL);
	ListCell   *lc;
	RelationMap *rm;
	MemoryContext old;

	Assert(entry != NULL);
	foreach(lc, entry->maps)
	{
		rm = lfirst(lc);
		if (rm->relid == RelationGetRelid(rel))
			return rm->map;
		/* made stale by an invalidation: no caller holds it past its statement */
		if (!OidIsValid(rm->relid))
		{
			pfree(rm->map);
			pfree(rm);
			entry->maps = foreach_delete_current(entry->maps, lc);
		}
	}
	old = MemoryContextSwitchTo(entry->graph->memory);
	rm = palloc(sizeof(RelationMap));
	rm->map = graph_column_map(entry->graph, rel);
	rm->relid = RelationGetRelid(rel);
	entry->maps = lappend(entry->maps, rm);
	MemoryContextSwitchTo(old);
	return rm->map;
}
