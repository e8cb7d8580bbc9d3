/*-------------------------------------------------------------------------
 *
 * batch_codec.c
 *	  The queued-batch format, the one place that writes and reads it.
 *
 * A batch is a sequence of groups (or rows) in datum_write form: the key
 * columns, then two int64 time ordinals (lowest and highest row time, or
 * an empty range), then one state per aggregate as agg_serialize writes
 * it (serialfn for internal states).  Writers build it at commit from
 * their partials; workers read it with the same graph (a batch carries
 * the graph version it was computed with).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "batch_codec.h"

void
codec_write_group(StringInfo buf, StreamGraph *graph, GroupTable *table, FlowGroup *group)
{
	if (graph->nkeys > 0)
	{
		group_load_key(graph, group);
		for (int k = 0; k < graph->nkeys; k++)
		{
			Form_pg_attribute attr = TupleDescAttr(graph->key_desc, k);

			datum_write(buf, graph->key_slot->tts_values[k], graph->key_slot->tts_isnull[k],
						attr->attbyval, attr->attlen);
		}
	}
	appendBinaryStringInfo(buf, (char *) &group->time_lo, sizeof(int64));
	appendBinaryStringInfo(buf, (char *) &group->time_hi, sizeof(int64));
	for (int i = 0; i < graph->naggs; i++)
	{
		AggTrans	trans = group_get_trans(group, graph->naggs, i);

		agg_serialize(table->aggcxt, &graph->aggs[i], &trans, buf);
	}
}

void
codec_read_group(char **cursor, StreamGraph *graph, AggContext *cxt,
				 int64 *time_lo, int64 *time_hi, AggTrans *trans)
{
	TupleTableSlot *keys = graph->key_slot;
	MemoryContext old = MemoryContextSwitchTo(cxt->memory);

	ExecClearTuple(keys);
	for (int k = 0; k < graph->nkeys; k++)
		keys->tts_values[k] = datum_read(cursor, &keys->tts_isnull[k]);
	ExecStoreVirtualTuple(keys);
	memcpy(time_lo, *cursor, sizeof(int64));
	*cursor += sizeof(int64);
	memcpy(time_hi, *cursor, sizeof(int64));
	*cursor += sizeof(int64);
	for (int i = 0; i < graph->naggs; i++)
	{
		bool		isnull;

		if (trans == NULL)
		{
			(void) datum_read(cursor, &isnull);
			continue;
		}
		trans[i].value = agg_deserialize(cxt, &graph->aggs[i], cursor, &isnull);
		trans[i].isnull = isnull;
		trans[i].noinit = false;
	}
	MemoryContextSwitchTo(old);
}

void
codec_write_row(StringInfo buf, StreamGraph *graph, Datum *values, bool *nulls)
{
	for (int o = 0; o < graph->noutputs; o++)
		datum_write(buf, values[o], nulls[o], graph->output_byvals[o], graph->output_lens[o]);
}

void
codec_read_row(char **cursor, StreamGraph *graph, Datum *values, bool *nulls)
{
	for (int o = 0; o < graph->noutputs; o++)
		values[o] = datum_read(cursor, &nulls[o]);
}
