/*-------------------------------------------------------------------------
 *
 * key_limits.c
 *	  Whether a row's group key fits where a streaming flow keeps it: its
 *	  state (a key of at most 64kB, group_store.c) and a row of its sink's
 *	  unique index (BTMaxItemSize).
 *
 * The worker checks the keys of a batch's rows before it changes the
 * state: such a row sends its batch to the recompute, where the flow fails
 * naming the cause until the row is gone (deleting it is how it goes: the
 * row taken back goes to the recompute as well), instead of failing every
 * round at the merge or the sink write.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/heaptoast.h"
#include "access/itup.h"
#include "access/nbtree.h"
#include "access/toast_internals.h"

#include "key_limits.h"

/*
 * The most a row of a btree index takes (nbtree.h's BTMaxItemSize of a
 * page of BLCKSZ): a sink's unique index on the group keys refuses more.
 */
#define SINK_INDEX_ROW_MAX \
	(MAXALIGN_DOWN((BLCKSZ - MAXALIGN(SizeOfPageHeaderData + 3 * sizeof(ItemIdData)) - \
					MAXALIGN(sizeof(BTPageOpaqueData))) / 3) - MAXALIGN(sizeof(ItemPointerData)))

/*
 * The size of the key in the slot as a row of a btree index stores it
 * (index_form_tuple's rule: variable-length values past
 * TOAST_INDEX_TARGET compressed, when compress), a few bytes of alignment
 * aside; and in *raw its size in the flow's state (group_store.c).
 */
static Size
key_index_size(StreamGraph *graph, bool compress, Size *raw)
{
	TupleTableSlot *slot = graph->key_slot;
	Size		size = sizeof(IndexTupleData);

	*raw = 0;
	for (int k = 0; k < graph->nkeys; k++)
	{
		Form_pg_attribute attr = TupleDescAttr(graph->key_desc, k);
		Pointer		value = DatumGetPointer(slot->tts_values[k]);
		Size		len;

		*raw += 8;				/* group_store.c's header of a key value, at most */
		if (slot->tts_isnull[k])
			continue;
		len = attr->attlen == -1 ? VARSIZE_ANY(value) : Max(attr->attlen, 0);
		*raw += len;
		/* one compressed in its row already is kept so */
		if (compress && attr->attlen == -1 && len > TOAST_INDEX_TARGET &&
			len <= PG_UINT16_MAX && !VARATT_IS_COMPRESSED(value))
		{
			Datum		compressed = toast_compress_datum(slot->tts_values[k],
														  attr->attcompression);

			if (DatumGetPointer(compressed) != NULL)
			{
				len = Min(len, VARSIZE(DatumGetPointer(compressed)));
				pfree(DatumGetPointer(compressed));
			}
		}
		size = att_align_nominal(size, attr->attalign) + len;
	}
	return MAXALIGN(size);
}

/*
 * Refuses a group key the flow could not keep: the writer's statement
 * fails, naming the flow, instead of the flow failing for good when it
 * stores or writes the group.  Two limits: the state's (a key of at most
 * 64kB) and a row of the sink's unique index.  Compressing is tried only
 * for a key too large without it (index_form_tuple, which the index uses,
 * refuses outright a row past 8kB, so it is not called).
 */
void
key_limits_check(StreamGraph *graph)
{
	Size		raw;
	Size		size = key_index_size(graph, false, &raw);

	if (size > SINK_INDEX_ROW_MAX && raw <= PG_UINT16_MAX)
		size = key_index_size(graph, true, &raw);
	if (raw <= PG_UINT16_MAX && size <= SINK_INDEX_ROW_MAX)
		return;
	graph->key_too_large = true;
	ereport(ERROR,
			(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
			 errmsg("a row's group key is too large for streaming flow \"%s\"", graph->flow_name),
			 raw > PG_UINT16_MAX ?
			 errdetail("Its key takes %zu bytes; the flow's state holds keys of at most %d.",
					   raw, PG_UINT16_MAX) :
			 errdetail("Its key takes about %zu bytes in the sink's unique index, which holds at most %zu.",
					   size, (Size) SINK_INDEX_ROW_MAX),
			 errhint("Keep such values out of the source, or group by a shorter expression (left(value, 100), md5(value)).")));
}

