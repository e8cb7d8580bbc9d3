/*-------------------------------------------------------------------------
 *
 * batch_codec.c
 *	  The queued-batch format, the one place that writes and reads it.
 *
 * A writer copies each captured row once, whatever the number of flows
 * of its table: the columns any of them reads, as a MinimalTuple -- the
 * row as the transition table stores it when they read every column (a
 * copy of its bytes), else a tuple of just those columns -- with values
 * stored out of line in TOAST fetched, since the worker may read the row
 * after the source row is gone.  A transaction's batch, one in shared
 * memory for all the flows it feeds, is a sequence of chunks:
 *
 *	  uint32 chunk length, Oid relid, int16 natts, int16 nmembers,
 *	  int32 nrows; per attribute: Oid type (InvalidOid: dropped), int16
 *	  length, char byval, char align; per flow the rows are for: int64
 *	  flow id, int16 ncolumns, per column its int16 position, padding to
 *	  MAXALIGN; then per row: int32 sign (1 added, -1 taken back), uint32
 *	  length, the MinimalTuple, padding to MAXALIGN.
 *
 * Chunks begin at MAXALIGNed offsets of a palloc'd batch, so the tuples
 * are read in place.  The physical layout travels with the rows: the
 * worker deforms them as they were written, whatever DDL ran since, and
 * checks each column's type against its graph's.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/detoast.h"
#include "access/transam.h"
#include "access/tupdesc_details.h"
#include "catalog/pg_type.h"
#include "utils/lsyscache.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "batch_codec.h"
#include "window.h"

typedef struct ChunkHeader
{
	uint32		len;
	Oid			relid;
	int16		natts;
	int16		nmembers;
	int32		nrows;
} ChunkHeader;

typedef struct MemberHeader
{
	int64		flow_id;
	int16		nmap;
	/* the map follows */
} MemberHeader;

#define MEMBER_SIZE(n) MAXALIGN(offsetof(MemberHeader, nmap) + sizeof(int16) * (1 + (n)))

typedef struct ChunkAttribute
{
	Oid			typid;
	int16		len;
	char		byval;
	char		align;
} ChunkAttribute;

typedef struct RowHeader
{
	int32		sign;
	uint32		len;
} RowHeader;

/* A chunk deformed once (codec_reader_share), for all its flows. */
typedef struct DecodedKey
{
	const char *chunk;			/* where it begins in the batch */
	TransactionId xid;			/* the batch's writer */
} DecodedKey;

typedef struct DecodedChunk
{
	DecodedKey	key;
	int			natts;
	int32		nrows;
	int32	   *signs;
	Datum	   *values;			/* nrows * natts; by-reference ones point into the batch */
	bool	   *isnull;
} DecodedChunk;

/* What the deformed chunks of a pass may take; beyond, flows deform their own. */
#define DECODED_MAX_BYTES ((Size) 32 * 1024 * 1024)

static HTAB *decoded_chunks;
static MemoryContext decoded_memory;
static Size decoded_bytes;

ChunkLayout *
codec_layout_create(Relation rel, List *attnos)
{
	TupleDesc	reldesc = RelationGetDescr(rel);
	ChunkLayout *layout = palloc0(sizeof(ChunkLayout));
	int			n = attnos ? list_length(attnos) : reldesc->natts;

	layout->relid = RelationGetRelid(rel);
	layout->copy_whole = attnos == NIL;
	layout->natts = n;
	layout->attnos = palloc(sizeof(AttrNumber) * Max(n, 1));
	layout->typids = palloc(sizeof(Oid) * Max(n, 1));
	layout->lens = palloc(sizeof(int16) * Max(n, 1));
	layout->byvals = palloc(sizeof(bool) * Max(n, 1));
	layout->aligns = palloc(sizeof(char) * Max(n, 1));
	layout->desc = layout->copy_whole ? reldesc : CreateTemplateTupleDesc(Max(n, 1));
	for (int i = 0; i < n; i++)
	{
		AttrNumber	attno = attnos ? (AttrNumber) list_nth_int(attnos, i) : i + 1;
		Form_pg_attribute attr = TupleDescAttr(reldesc, attno - 1);

		layout->attnos[i] = attno;
		layout->typids[i] = attr->attisdropped ? InvalidOid : attr->atttypid;
		layout->lens[i] = attr->attlen;
		layout->byvals[i] = attr->attbyval;
		layout->aligns[i] = attr->attalign;
		if (!layout->copy_whole)
			TupleDescCopyEntry(layout->desc, i + 1, reldesc, attno);
	}
	if (layout->copy_whole)
		layout->desc = CreateTupleDescCopy(reldesc);
	return layout;
}

bool
codec_layout_equal(const ChunkLayout *a, const ChunkLayout *b)
{
	if (a == b)
		return true;
	if (a->relid != b->relid || a->natts != b->natts || a->copy_whole != b->copy_whole)
		return false;
	for (int i = 0; i < a->natts; i++)
		if (a->attnos[i] != b->attnos[i] || a->typids[i] != b->typids[i] ||
			a->lens[i] != b->lens[i])
			return false;
	return true;
}

/* A value stored out of line, fetched: the worker reads it later. */
static Datum
fetched(Datum value, int16 len)
{
	if (len == -1 && VARATT_IS_EXTERNAL(DatumGetPointer(value)))
		return PointerGetDatum(detoast_external_attr((struct varlena *) DatumGetPointer(value)));
	return value;
}

void
codec_append_row(StringInfo rows, const ChunkLayout *layout, TupleTableSlot *slot, int sign)
{
	MinimalTuple tuple;
	bool		should_free = false;
	RowHeader	header;
	Size		padded;

	if (layout->copy_whole)
	{
		tuple = ExecFetchSlotMinimalTuple(slot, &should_free);

		/*
		 * Values stored out of line are fetched; a row stored before an
		 * ADD COLUMN ... DEFAULT has fewer attributes than the table, whose
		 * defaults the worker's descriptor does not know: formed again.
		 */
		if ((tuple->t_infomask & HEAP_HASEXTERNAL) ||
			(tuple->t_infomask2 & HEAP_NATTS_MASK) < layout->natts)
		{
			Datum	   *values = palloc(sizeof(Datum) * layout->natts);

			slot_getallattrs(slot);
			for (int i = 0; i < layout->natts; i++)
				values[i] = slot->tts_isnull[i] ? (Datum) 0 :
					fetched(slot->tts_values[i], layout->lens[i]);
			if (should_free)
				pfree(tuple);
			tuple = heap_form_minimal_tuple(layout->desc, values, slot->tts_isnull);
			should_free = true;
		}
	}
	else
	{
		Datum	   *values = palloc(sizeof(Datum) * Max(layout->natts, 1));
		bool	   *nulls = palloc(sizeof(bool) * Max(layout->natts, 1));

		for (int i = 0; i < layout->natts; i++)
		{
			values[i] = slot_getattr(slot, layout->attnos[i], &nulls[i]);
			if (!nulls[i])
				values[i] = fetched(values[i], layout->lens[i]);
		}
		tuple = heap_form_minimal_tuple(layout->desc, values, nulls);
		should_free = true;
	}
	header.sign = sign;
	header.len = tuple->t_len;
	padded = MAXALIGN(tuple->t_len);
	enlargeStringInfo(rows, sizeof(RowHeader) + padded);
	memcpy(rows->data + rows->len, &header, sizeof(RowHeader));
	memcpy(rows->data + rows->len + sizeof(RowHeader), tuple, tuple->t_len);
	memset(rows->data + rows->len + sizeof(RowHeader) + tuple->t_len, 0,
		   padded - tuple->t_len);
	rows->len += sizeof(RowHeader) + padded;
	if (should_free)
		pfree(tuple);
}

void
codec_append_chunk(StringInfo batch, const ChunkLayout *layout, const ChunkMember *members,
				   int nmembers, int32 nrows, const char *rows, Size rows_len)
{
	ChunkHeader header;
	Size		head_len = MAXALIGN(sizeof(ChunkHeader) + sizeof(ChunkAttribute) * layout->natts);
	Size		at;
	int			start;

	StaticAssertStmt(sizeof(RowHeader) == MAXALIGN(sizeof(RowHeader)),
					 "rows must stay aligned");
	Assert(batch->len == MAXALIGN(batch->len));
	for (int m = 0; m < nmembers; m++)
		head_len += MEMBER_SIZE(members[m].nmap);
	header.len = head_len + rows_len;
	header.relid = layout->relid;
	header.natts = layout->natts;
	header.nmembers = nmembers;
	header.nrows = nrows;
	enlargeStringInfo(batch, header.len);
	start = batch->len;
	memset(batch->data + start, 0, head_len);
	memcpy(batch->data + start, &header, sizeof(ChunkHeader));
	at = start + sizeof(ChunkHeader);
	for (int i = 0; i < layout->natts; i++)
	{
		ChunkAttribute attr;

		attr.typid = layout->typids[i];
		attr.len = layout->lens[i];
		attr.byval = layout->byvals[i];
		attr.align = layout->aligns[i];
		memcpy(batch->data + at, &attr, sizeof(ChunkAttribute));
		at += sizeof(ChunkAttribute);
	}
	at = start + MAXALIGN(sizeof(ChunkHeader) + sizeof(ChunkAttribute) * layout->natts);
	for (int m = 0; m < nmembers; m++)
	{
		MemberHeader member;

		member.flow_id = members[m].flow_id;
		member.nmap = members[m].nmap;
		memcpy(batch->data + at, &member, offsetof(MemberHeader, nmap) + sizeof(int16));
		memcpy(batch->data + at + offsetof(MemberHeader, nmap) + sizeof(int16), members[m].map,
			   sizeof(int16) * members[m].nmap);
		at += MEMBER_SIZE(members[m].nmap);
	}
	memcpy(batch->data + start + head_len, rows, rows_len);
	batch->len += header.len;
	batch->data[batch->len] = '\0';
}

void
codec_reader_init(ChunkReader *reader, char *data, Size len, int64 flow_id,
				  MemoryContext memory)
{
	memset(reader, 0, sizeof(ChunkReader));
	reader->next = data;
	reader->end = data + len;
	reader->flow_id = flow_id;
	reader->memory = memory;
}

void
codec_reader_share(ChunkReader *reader, TransactionId xid)
{
	reader->share_xid = xid;
}

void
codec_decoded_reset(void)
{
	if (decoded_memory == NULL)
		return;
	MemoryContextReset(decoded_memory);
	decoded_chunks = NULL;
	decoded_bytes = 0;
}

/*
 * The current chunk, deformed: found, or deformed now and kept (NULL when
 * the pass's deformed chunks are full: the reader deforms row by row).
 */
static DecodedChunk *
decode_chunk(ChunkReader *reader, const char *chunk)
{
	DecodedKey	key;
	DecodedChunk *d;
	Size		bytes = (Size) reader->nrows * (reader->desc->natts * (sizeof(Datum) + sizeof(bool)) +
											sizeof(int32));
	bool		found;
	char	   *cursor = reader->cursor;
	int32		row = reader->row;
	int			sign;
	MemoryContext old;

	memset(&key, 0, sizeof(key));
	key.chunk = chunk;
	key.xid = reader->share_xid;
	if (decoded_chunks)
	{
		d = hash_search(decoded_chunks, &key, HASH_FIND, NULL);
		if (d)
			return d;
	}
	if (decoded_bytes + bytes > DECODED_MAX_BYTES)
		return NULL;
	if (decoded_memory == NULL)
		decoded_memory = AllocSetContextCreate(TopMemoryContext, "flowpg decoded chunks",
											   ALLOCSET_DEFAULT_SIZES);
	if (decoded_chunks == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(DecodedKey);
		ctl.entrysize = sizeof(DecodedChunk);
		ctl.hcxt = decoded_memory;
		decoded_chunks = hash_create("flowpg decoded chunks", 64, &ctl,
									 HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	}

	/* deformed whole before it is entered: an error leaves no half of it */
	old = MemoryContextSwitchTo(decoded_memory);
	{
		int			natts = reader->desc->natts;
		int32	   *signs = palloc(sizeof(int32) * Max(reader->nrows, 1));
		Datum	   *values = palloc(sizeof(Datum) * Max((Size) reader->nrows * natts, 1));
		bool	   *isnull = palloc(sizeof(bool) * Max((Size) reader->nrows * natts, 1));
		TupleTableSlot *slot;
		int32		n = 0;

		MemoryContextSwitchTo(old);
		while ((slot = codec_next_row(reader, &sign)) != NULL)
		{
			slot_getallattrs(slot);
			signs[n] = sign;
			memcpy(values + (Size) n * natts, slot->tts_values, sizeof(Datum) * natts);
			memcpy(isnull + (Size) n * natts, slot->tts_isnull, sizeof(bool) * natts);
			n++;
		}
		d = hash_search(decoded_chunks, &key, HASH_ENTER, &found);
		d->natts = natts;
		d->nrows = n;
		d->signs = signs;
		d->values = values;
		d->isnull = isnull;
	}
	decoded_bytes += bytes;
	reader->cursor = cursor;	/* the rows are read again, from the arrays */
	reader->row = row;
	return d;
}

bool
codec_next_row_values(ChunkReader *reader, Datum **values, bool **isnull, int *sign)
{
	DecodedChunk *d = reader->decoded;
	TupleTableSlot *slot;

	if (d)
	{
		if (reader->row >= d->nrows)
			return false;
		*values = d->values + (Size) reader->row * d->natts;
		*isnull = d->isnull + (Size) reader->row * d->natts;
		*sign = d->signs[reader->row++];
		return true;
	}
	slot = codec_next_row(reader, sign);
	if (slot == NULL)
		return false;
	slot_getallattrs(slot);
	*values = slot->tts_values;
	*isnull = slot->tts_isnull;
	return true;
}

/* A descriptor of the chunk's attributes: what deforming its rows needs. */
static TupleDesc
chunk_desc(const ChunkAttribute *attrs, int natts)
{
	TupleDesc	desc = CreateTemplateTupleDesc(Max(natts, 1));

	for (int i = 0; i < natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		memset(att, 0, ATTRIBUTE_FIXED_PART_SIZE);
		att->attnum = i + 1;
		att->atttypid = attrs[i].typid;
		att->atttypmod = -1;
		att->attlen = attrs[i].len;
		att->attbyval = attrs[i].byval;
		att->attalign = attrs[i].align;
		att->attstorage = attrs[i].len == -1 ? TYPSTORAGE_EXTENDED : TYPSTORAGE_PLAIN;
		att->attisdropped = !OidIsValid(attrs[i].typid);
		att->attcacheoff = -1;
		att->attislocal = true;
	}
	return desc;
}

bool
codec_next_chunk(ChunkReader *reader)
{
	ChunkHeader header;
	const ChunkAttribute *attrs;
	const char *member = NULL;
	Size		layout_len;
	Size		at;
	Size		head_len;

	/* the next chunk the flow is a member of */
	for (;;)
	{
		if (reader->next >= reader->end)
			return false;
		memcpy(&header, reader->next, sizeof(ChunkHeader));
		if (header.len < sizeof(ChunkHeader) || reader->next + header.len > reader->end)
			elog(ERROR, "flowpg: a queued batch is damaged");
		layout_len = sizeof(ChunkAttribute) * header.natts;
		at = MAXALIGN(sizeof(ChunkHeader) + layout_len);
		member = NULL;
		for (int m = 0; m < header.nmembers; m++)
		{
			MemberHeader mh;

			memcpy(&mh, reader->next + at, offsetof(MemberHeader, nmap) + sizeof(int16));
			if (member == NULL && (reader->flow_id == 0 || mh.flow_id == reader->flow_id))
				member = reader->next + at;
			at += MEMBER_SIZE(mh.nmap);
		}
		head_len = at;
		if (member != NULL || (header.nmembers == 0 && reader->flow_id == 0))
			break;
		reader->next += header.len;
	}
	attrs = (const ChunkAttribute *) (reader->next + sizeof(ChunkHeader));

	/* the last chunk's descriptor serves while the layout is the same */
	if (reader->slot == NULL || reader->layout_len != layout_len ||
		memcmp(reader->layout_bytes, attrs, layout_len) != 0)
	{
		MemoryContext old = MemoryContextSwitchTo(reader->memory);

		if (reader->slot)
			ExecDropSingleTupleTableSlot(reader->slot);
		reader->desc = chunk_desc(attrs, header.natts);
		reader->slot = MakeSingleTupleTableSlot(reader->desc, &TTSOpsMinimalTuple);
		reader->layout_bytes = palloc(Max(layout_len, 1));
		memcpy(reader->layout_bytes, attrs, layout_len);
		reader->layout_len = layout_len;
		MemoryContextSwitchTo(old);
	}
	if (member)
	{
		memcpy(&reader->nmap, member + offsetof(MemberHeader, nmap), sizeof(int16));
		reader->map = (const int16 *) (member + offsetof(MemberHeader, nmap) + sizeof(int16));
	}
	else
	{
		reader->nmap = 0;
		reader->map = NULL;
	}
	reader->nrows = header.nrows;
	reader->row = 0;
	reader->cursor = reader->next + head_len;
	reader->decoded = NULL;
	if (TransactionIdIsValid(reader->share_xid) && header.nmembers > 1)
		reader->decoded = decode_chunk(reader, reader->next);
	reader->next += header.len;
	return true;
}

void
codec_reader_rows(ChunkReader *reader, TupleDesc desc, char *rows, int32 nrows,
				  MemoryContext memory)
{
	memset(reader, 0, sizeof(ChunkReader));
	reader->memory = memory;
	reader->desc = desc;
	reader->slot = MakeSingleTupleTableSlot(desc, &TTSOpsMinimalTuple);
	reader->nrows = nrows;
	reader->cursor = rows;
}

/* The type of a column of the current chunk (InvalidOid: dropped). */
Oid
codec_column_type(ChunkReader *reader, int column)
{
	return TupleDescAttr(reader->desc, column)->atttypid;
}

TupleTableSlot *
codec_next_row(ChunkReader *reader, int *sign)
{
	RowHeader	header;
	MinimalTuple tuple;

	if (reader->row >= reader->nrows)
		return NULL;
	memcpy(&header, reader->cursor, sizeof(RowHeader));
	tuple = (MinimalTuple) (reader->cursor + sizeof(RowHeader));
	reader->cursor += sizeof(RowHeader) + MAXALIGN(header.len);
	reader->row++;
	*sign = header.sign;
	ExecStoreMinimalTuple(tuple, reader->slot, false);
	return reader->slot;
}

bool
codec_rows_time_range(ChunkReader *reader, int column, Oid time_type, int64 *lo, int64 *hi)
{
	TupleTableSlot *slot;
	int			sign;

	while ((slot = codec_next_row(reader, &sign)) != NULL)
	{
		bool		isnull;
		Datum		value = slot_getattr(slot, column + 1, &isnull);
		int64		t;

		if (isnull)
			return false;
		t = window_datum_to_ordinal(time_type, value);
		*lo = Min(*lo, t);
		*hi = Max(*hi, t);
	}
	return true;
}

void
codec_reader_end(ChunkReader *reader)
{
	if (reader->slot)
		ExecDropSingleTupleTableSlot(reader->slot);
	reader->slot = NULL;
}
