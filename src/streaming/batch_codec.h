/*-------------------------------------------------------------------------
 *
 * batch_codec.h
 *	  The format of a queued batch, written by writers and read by
 *	  workers: per group its key, the time range of its rows and its
 *	  partial transition values; or, for flows without aggregates, sink
 *	  rows.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLOWPG_BATCH_CODEC_H
#define FLOWPG_BATCH_CODEC_H

#include "lib/stringinfo.h"

#include "operator.h"

/* A group of a writer's partial (its key in group->key). */
extern void codec_write_group(StringInfo buf, StreamGraph *graph, GroupTable *table,
							  FlowGroup *group);

/*
 * The next group: key into graph->key_slot, the partials deserialized in
 * cxt's memory into trans (noinit false) -- or skipped when trans is NULL.
 */
extern void codec_read_group(char **cursor, StreamGraph *graph, AggContext *cxt,
							 int64 *time_lo, int64 *time_hi, AggTrans *trans);

/* A sink row of a flow without aggregates. */
extern void codec_write_row(StringInfo buf, StreamGraph *graph, Datum *values, bool *nulls);
extern void codec_read_row(char **cursor, StreamGraph *graph, Datum *values, bool *nulls);

#endif							/* FLOWPG_BATCH_CODEC_H */
