/*-------------------------------------------------------------------------
 *
 * batch_codec.h
 *	  The format of a queued batch, written by writers and read by
 *	  workers: per group its key, the time range of its rows and its
 *	  partial transition values, then rows as aggregate inputs (key, time
 *	  and arguments); or, for flows without aggregates, sink rows.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLOWPG_BATCH_CODEC_H
#define FLOWPG_BATCH_CODEC_H

#include "lib/stringinfo.h"

#include "operator.h"

/*
 * One aggregate's input of a shipped row: whether its FILTER kept the row,
 * and its arguments.
 */
typedef struct AggInput
{
	bool		skip;
	Datum	   *values;
	bool	   *nulls;
} AggInput;

/* Room for a row's inputs, in the current memory context. */
extern AggInput *codec_inputs_create(StreamGraph *graph);

/*
 * An aggregate batch starts with the number of its groups; the entries
 * after them are input rows.  reserve returns where the number goes.
 */
extern int	codec_reserve_groups(StringInfo buf);
extern void codec_set_groups(StringInfo buf, int at, int32 ngroups);
extern int32 codec_read_groups(char **cursor);

/* A group of a writer's partial (its key in group->key). */
extern void codec_write_group(StringInfo buf, StreamGraph *graph, GroupTable *table,
							  FlowGroup *group);

/*
 * The next group: key into graph->key_slot, the partials deserialized in
 * cxt's memory into trans (noinit: the group had no input for it) -- or
 * skipped when trans is NULL.
 */
extern void codec_read_group(char **cursor, StreamGraph *graph, AggContext *cxt,
							 int64 *time_lo, int64 *time_hi, AggTrans *trans);

/*
 * A row as aggregate inputs: its key (in key_slot, after graph_eval_row),
 * time range and sign (1 added, -1 taken back), then for each aggregate i
 * in turn whether its FILTER kept the row and, if so, its arguments (in
 * arg_values/arg_nulls, after graph_eval_agg_args).  Called in the row's memory (the graph's per-tuple
 * memory), where detoasted copies of the values go; the buffer grows in
 * its own.
 */
extern void codec_write_input_key(StringInfo buf, StreamGraph *graph, int64 time_lo,
								  int64 time_hi, int sign);
extern void codec_write_input_args(StringInfo buf, StreamGraph *graph, int i, bool kept);

/*
 * The next input row: key into graph->key_slot, inputs in cxt's memory;
 * sign 1 for a row added, -1 for a row taken back (an old row).
 */
extern void codec_read_input(char **cursor, StreamGraph *graph, AggContext *cxt,
							 int64 *time_lo, int64 *time_hi, int *sign, AggInput *inputs);

/* A sink row of a flow without aggregates. */
extern void codec_write_row(StringInfo buf, StreamGraph *graph, Datum *values, bool *nulls);
extern void codec_read_row(char **cursor, StreamGraph *graph, Datum *values, bool *nulls);

#endif							/* FLOWPG_BATCH_CODEC_H */
