/*-------------------------------------------------------------------------
 *
 * batch_codec.h
 *	  The format of a queued batch, written by writers and read by
 *	  workers: chunks of source rows, each with the physical layout of its
 *	  rows and where the flow's columns are in them.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLOWPG_BATCH_CODEC_H
#define FLOWPG_BATCH_CODEC_H

#include "access/htup_details.h"
#include "access/tupdesc.h"
#include "executor/tuptable.h"
#include "lib/stringinfo.h"

/*
 * The columns a writer copies of a table's rows: the table's own attribute
 * numbers (whole rows when copy_whole), with what a reader needs to deform
 * them.
 */
typedef struct ChunkLayout
{
	Oid			relid;			/* the table whose trigger captured the rows */
	bool		copy_whole;		/* rows as stored: every attribute, in order */
	int16		natts;
	AttrNumber *attnos;
	Oid		   *typids;			/* InvalidOid: a dropped attribute */
	int16	   *lens;
	bool	   *byvals;
	char	   *aligns;
	TupleDesc	desc;			/* the writer's, to form projected rows */
} ChunkLayout;

/* The layout of the given attributes of a table (all of them: NULL). */
extern ChunkLayout *codec_layout_create(Relation rel, List *attnos);
extern bool codec_layout_equal(const ChunkLayout *a, const ChunkLayout *b);

/* Appends one row (sign 1: added, -1: taken back) in the layout to rows. */
extern void codec_append_row(StringInfo rows, const ChunkLayout *layout,
							 TupleTableSlot *slot, int sign);

/* A flow a chunk's rows are for, and where its columns are in the layout. */
typedef struct ChunkMember
{
	int64		flow_id;
	int16		nmap;
	const int16 *map;			/* the layout position of each of its columns */
} ChunkMember;

/*
 * Appends a chunk to a transaction's batch: the layout, the flows the rows
 * are for with their columns in it, then the rows appended by
 * codec_append_row.
 */
extern void codec_append_chunk(StringInfo batch, const ChunkLayout *layout,
							   const ChunkMember *members, int nmembers, int32 nrows,
							   const char *rows, Size rows_len);

/* Reading a batch, chunk by chunk, row by row. */
typedef struct ChunkReader
{
	char	   *next;			/* the next chunk */
	char	   *end;
	int64		flow_id;		/* whose chunks are read (0: every chunk) */
	/* the current chunk */
	TupleDesc	desc;			/* deforms its rows */
	const Oid  *typids;
	int16		nmap;
	const int16 *map;
	int32		nrows;
	int32		row;
	char	   *cursor;
	TupleTableSlot *slot;		/* the current row */
	TransactionId share_xid;	/* codec_reader_share: the batch's writer */
	struct DecodedChunk *decoded;	/* the current chunk, deformed once */
	char	   *layout_bytes;	/* the layout desc and slot were made for */
	Size		layout_len;
	MemoryContext memory;		/* where descriptors are made */
} ChunkReader;

extern void codec_reader_init(ChunkReader *reader, char *data, Size len, int64 flow_id,
							  MemoryContext memory);

/* The next chunk of the reader's flow (its map in reader->map): false at the end. */
extern bool codec_next_chunk(ChunkReader *reader);

/* A reader of rows appended by codec_append_row, in a descriptor of their layout. */
extern void codec_reader_rows(ChunkReader *reader, TupleDesc desc, char *rows, int32 nrows,
							  MemoryContext memory);

/* The type of a column of the current chunk (InvalidOid: dropped). */
extern Oid codec_column_type(ChunkReader *reader, int column);

/* The chunk's next row in reader->slot (NULL after the last), and its sign. */
extern TupleTableSlot *codec_next_row(ChunkReader *reader, int *sign);

/*
 * Decoding once for all the flows of a table: after codec_reader_share, a
 * chunk that several flows are members of is deformed by the first of
 * them to read it since the last codec_decoded_reset, and its columns kept
 * for the others.  xid (the writer's) and the chunk's address name it: a
 * batch is freed only once all its flows took it, and a batch made later
 * at the same address is another transaction's.  The reset comes between
 * the worker's passes over its flows.
 */
extern void codec_reader_share(ChunkReader *reader, TransactionId xid);
extern void codec_decoded_reset(void);

/*
 * The chunk's next row as the values and nulls of its layout's columns
 * (false after the last), and its sign: read where it was deformed once,
 * or deformed now.
 */
extern bool codec_next_row_values(ChunkReader *reader, Datum **values, bool **isnull,
								  int *sign);
extern void codec_reader_end(ChunkReader *reader);

/*
 * The lowest and highest time ordinal of the current chunk's remaining
 * rows in a column; false, stopping there, at a row without one.
 */
extern bool codec_rows_time_range(ChunkReader *reader, int column, Oid time_type,
								  int64 *lo, int64 *hi);

#endif							/* FLOWPG_BATCH_CODEC_H */
