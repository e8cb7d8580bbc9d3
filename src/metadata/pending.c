/*-------------------------------------------------------------------------
 *
 * pending.c
 *	  Owner of flowpg.pending_flow: flows created with
 *	  defer_on_missing_source over tables that do not exist yet.
 *
 * A pending flow is its CREATE FLOW statement, its owner and the settings
 * it was created under.  Only these functions read or write the table, as
 * the extension's owner, so users need no rights on it.  Starting one is
 * pending_flow.c's.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/builtins.h"

#include "catalog.h"
#include "pending.h"
#include "privileged.h"

bool
pending_any(void)
{
	bool		any;

	privileged_query("SELECT 1 FROM flowpg.pending_flow LIMIT 1", 0, NULL, NULL, NULL);
	any = SPI_processed > 0;
	privileged_query_end();
	return any;
}

bool
pending_exists(const char *flow_name)
{
	return pending_get(flow_name) != NULL;
}

static List *
read_pending(const char *where, const char *flow_name)
{
	MemoryContext caller = CurrentMemoryContext;
	Oid			types[1] = {TEXTOID};
	Datum		values[1] = {flow_name ? CStringGetTextDatum(flow_name) : (Datum) 0};
	List	   *flows = NIL;

	privileged_query(psprintf("SELECT flow_name, owner::oid, statement, settings, "
									  "sink_table, comment, last_error "
									  "FROM flowpg.pending_flow %s ORDER BY flow_name", where),
							 flow_name ? 1 : 0, types, values, NULL);
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		HeapTuple	tuple = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		MemoryContext old = MemoryContextSwitchTo(caller);
		PendingFlow *flow = palloc(sizeof(PendingFlow));
		bool		isnull;

		flow->flow_name = SPI_getvalue(tuple, desc, 1);
		flow->owner = DatumGetObjectId(SPI_getbinval(tuple, desc, 2, &isnull));
		flow->statement = SPI_getvalue(tuple, desc, 3);
		flow->settings = DatumGetArrayTypePCopy(SPI_getbinval(tuple, desc, 4, &isnull));
		flow->sink_name = SPI_getvalue(tuple, desc, 5);
		flow->comment = SPI_getvalue(tuple, desc, 6);
		flow->last_error = SPI_getvalue(tuple, desc, 7);
		flows = lappend(flows, flow);
		MemoryContextSwitchTo(old);
	}
	privileged_query_end();
	return flows;
}

PendingFlow *
pending_get(const char *flow_name)
{
	List	   *flows = read_pending("WHERE flow_name = $1", flow_name);

	return flows ? linitial(flows) : NULL;
}

List *
pending_get_all(void)
{
	return read_pending("", NULL);
}

void
pending_add(const PendingFlow *flow, const char *missing)
{
	Oid			types[9] = {TEXTOID, OIDOID, TEXTOID, TEXTARRAYOID, TEXTOID, TEXTOID, TEXTOID,
	TEXTOID, INTERVALOID};
	Datum		values[9] = {CStringGetTextDatum(flow->flow_name),
		ObjectIdGetDatum(flow->owner), CStringGetTextDatum(flow->statement),
		PointerGetDatum(flow->settings), CStringGetTextDatum(missing),
		CStringGetTextDatum(flow->sink_name),
		flow->comment ? CStringGetTextDatum(flow->comment) : (Datum) 0,
		flow->options ? CStringGetTextDatum(flow->options) : (Datum) 0,
	flow->expire_after ? IntervalPGetDatum(flow->expire_after) : (Datum) 0};
	char		nulls[9] = {' ', ' ', ' ', ' ', ' ', ' ', flow->comment ? ' ' : 'n',
	flow->options ? ' ' : 'n', flow->expire_after ? ' ' : 'n'};

	privileged_execute("INSERT INTO flowpg.pending_flow "
							   "(flow_name, owner, statement, settings, missing, sink_table, comment, "
							   "options, expire_after) "
							   "VALUES ($1, $2::regrole, $3, $4, $5, $6, $7, $8::jsonb, $9) "
							   "ON CONFLICT (flow_name) DO UPDATE SET owner = excluded.owner, "
							   "statement = excluded.statement, settings = excluded.settings, "
							   "missing = excluded.missing, sink_table = excluded.sink_table, "
							   "comment = excluded.comment, options = excluded.options, "
							   "expire_after = excluded.expire_after, last_error = NULL, updated_at = now()",
							   9, types, values, nulls);
}

void
pending_remove(const char *flow_name)
{
	Oid			types[1] = {TEXTOID};
	Datum		values[1] = {CStringGetTextDatum(flow_name)};

	privileged_execute("DELETE FROM flowpg.pending_flow WHERE flow_name = $1",
							   1, types, values, NULL);
}

/* Why the last attempt to start it failed, for the views. */
void
pending_set_error(const char *flow_name, const char *message)
{
	Oid			types[2] = {TEXTOID, TEXTOID};
	Datum		values[2] = {CStringGetTextDatum(flow_name), CStringGetTextDatum(message)};

	privileged_execute("UPDATE flowpg.pending_flow SET last_error = $2, updated_at = now() "
							   "WHERE flow_name = $1", 2, types, values, NULL);
}

