/*-------------------------------------------------------------------------
 *
 * batch_codec.c
 *	  The queued-batch format, the one place that writes and reads it.
 *
 * An aggregate batch is an int32 count of groups, then the groups, then
 * input rows, all in datum_write form.  A group: the key columns, two
 * int64 time ordinals (lowest and highest row time, or an empty range),
 * then per aggregate a byte (1: no input yet, the state is nothing) and
 * its state as agg_serialize writes it (serialfn for internal states).
 * An input row: the key and the time range of one row, a byte (1: the
 * row is taken back, an UPDATE's or DELETE's old row), then per aggregate
 * a byte (1: its FILTER kept the row) followed, when 1, by its
 * arguments; hidden counts (operator.h) have no arguments of their own.
 * Rows taken back come after every added row.  A writer ships the rows
 * themselves when they are nearly all groups of their own
 * (stream_capture.c): the worker then runs the transitions instead of
 * combining one-row states.  A batch of a flow
 * without aggregates is its sink rows.  Writers build batches at commit;
 * workers read them with the same graph (a batch carries the graph
 * version it was computed with).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "batch_codec.h"

AggInput *
codec_inputs_create(StreamGraph *graph)
{
	AggInput   *inputs = palloc0(sizeof(AggInput) * Max(graph->naggs, 1));

	for (int i = 0; i < graph->naggs; i++)
	{
		inputs[i].values = palloc(sizeof(Datum) * Max(graph->aggs[i].nargs, 1));
		inputs[i].nulls = palloc(sizeof(bool) * Max(graph->aggs[i].nargs, 1));
		inputs[i].skip = graph->aggs[i].is_counter;	/* never shipped */
	}
	return inputs;
}

int
codec_reserve_groups(StringInfo buf)
{
	int32		zero = 0;
	int			at = buf->len;

	appendBinaryStringInfo(buf, (char *) &zero, sizeof(int32));
	return at;
}

void
codec_set_groups(StringInfo buf, int at, int32 ngroups)
{
	memcpy(buf->data + at, &ngroups, sizeof(int32));
}

int32
codec_read_groups(char **cursor)
{
	int32		ngroups;

	memcpy(&ngroups, *cursor, sizeof(int32));
	*cursor += sizeof(int32);
	return ngroups;
}

/* The key in key_slot and a time range: how a group and an input row begin. */
static void
write_key_and_times(StringInfo buf, StreamGraph *graph, int64 time_lo, int64 time_hi)
{
	for (int k = 0; k < graph->nkeys; k++)
	{
		Form_pg_attribute attr = TupleDescAttr(graph->key_desc, k);

		datum_write(buf, graph->key_slot->tts_values[k], graph->key_slot->tts_isnull[k],
					attr->attbyval, attr->attlen);
	}
	appendBinaryStringInfo(buf, (char *) &time_lo, sizeof(int64));
	appendBinaryStringInfo(buf, (char *) &time_hi, sizeof(int64));
}

static void
read_key_and_times(char **cursor, StreamGraph *graph, int64 *time_lo, int64 *time_hi)
{
	TupleTableSlot *keys = graph->key_slot;

	ExecClearTuple(keys);
	for (int k = 0; k < graph->nkeys; k++)
		keys->tts_values[k] = datum_read(cursor, &keys->tts_isnull[k]);
	ExecStoreVirtualTuple(keys);
	memcpy(time_lo, *cursor, sizeof(int64));
	*cursor += sizeof(int64);
	memcpy(time_hi, *cursor, sizeof(int64));
	*cursor += sizeof(int64);
}

void
codec_write_group(StringInfo buf, StreamGraph *graph, GroupTable *table, FlowGroup *group)
{
	if (graph->nkeys > 0)
		group_load_key(graph, group);
	write_key_and_times(buf, graph, group->time_lo, group->time_hi);
	for (int i = 0; i < graph->naggs; i++)
	{
		AggTrans	trans = group_get_trans(group, graph->naggs, i);

		/* "no input yet" is no NULL state: a combine must not see it */
		appendStringInfoChar(buf, trans.noinit ? 1 : 0);
		agg_serialize(table->aggcxt, &graph->aggs[i], &trans, buf);
	}
}

void
codec_read_group(char **cursor, StreamGraph *graph, AggContext *cxt,
				 int64 *time_lo, int64 *time_hi, AggTrans *trans)
{
	MemoryContext old = MemoryContextSwitchTo(cxt->memory);

	read_key_and_times(cursor, graph, time_lo, time_hi);
	for (int i = 0; i < graph->naggs; i++)
	{
		bool		isnull;
		bool		noinit = **cursor != 0;

		*cursor += 1;
		if (trans == NULL)
		{
			(void) datum_read(cursor, &isnull);
			continue;
		}
		trans[i].value = agg_deserialize(cxt, &graph->aggs[i], cursor, &isnull);
		trans[i].isnull = isnull;
		trans[i].noinit = noinit;
	}
	MemoryContextSwitchTo(old);
}

void
codec_write_input_key(StringInfo buf, StreamGraph *graph, int64 time_lo, int64 time_hi,
					  int sign)
{
	write_key_and_times(buf, graph, time_lo, time_hi);
	appendStringInfoChar(buf, sign < 0 ? 1 : 0);
}

void
codec_write_input_args(StringInfo buf, StreamGraph *graph, int i, bool kept)
{
	AggSupport *agg = &graph->aggs[i];

	appendStringInfoChar(buf, kept ? 1 : 0);
	if (kept)
		for (int a = 0; a < agg->nargs; a++)
			datum_write(buf, graph->arg_values[a], graph->arg_nulls[a],
						agg->argbyvals[a], agg->arglens[a]);
}

void
codec_read_input(char **cursor, StreamGraph *graph, AggContext *cxt,
				 int64 *time_lo, int64 *time_hi, int *sign, AggInput *inputs)
{
	MemoryContext old = MemoryContextSwitchTo(cxt->memory);

	read_key_and_times(cursor, graph, time_lo, time_hi);
	*sign = **cursor != 0 ? -1 : 1;
	*cursor += 1;
	for (int i = 0; i < graph->nuser_aggs; i++)
	{
		inputs[i].skip = **cursor == 0;
		*cursor += 1;
		if (inputs[i].skip)
			continue;
		for (int a = 0; a < graph->aggs[i].nargs; a++)
			inputs[i].values[a] = datum_read(cursor, &inputs[i].nulls[a]);
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
