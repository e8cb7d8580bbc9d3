/*-------------------------------------------------------------------------
 *
 * refresh.c
 *	  Where the sink is recomputed: the batching refresh of a flow.
 *
 * A run reads the flow's dirty log (flowpg.dirty_log), turns each logged
 * range of time values into whole windows by probing the window expression,
 * merges them, drops what is older than expire_after, and then, in one
 * transaction and as the flow's owner under its pinned settings:
 *
 *   DELETE FROM sink WHERE window >= f(a1) AND window < f(b1) OR ...
 *   INSERT INTO sink SELECT <flow query with  col >= a1 AND col < b1 OR ...>
 *   DELETE the consumed log entries
 *
 * The time-range predicate is added to the analysed query tree, which is
 * then deparsed under the pinned settings; no SQL text is edited.  Because
 * [a, b) covers whole windows, the groups it produces are exactly the sink
 * rows it deleted, so groups that vanished disappear.  Flows without a time
 * window, and changes that cannot be placed in a window, recompute the whole
 * result.
 *
 * Exactness: a log entry is visible to a run only once its writer committed,
 * and the run's later statements see at least that writer's rows, so every
 * consumed entry's changes are in the sink.  Entries committed during a run
 * stay for the next one.  Refreshes of one flow are serialized by a lock.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/relation.h"
#include "access/xact.h"
#include "access/stratnum.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "storage/lmgr.h"
#include "storage/proc.h"
#include "utils/guc.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/inval.h"
#include "utils/partcache.h"
#include "partitioning/partdesc.h"
#include "utils/rel.h"
#include "utils/timestamp.h"
#include "utils/lsyscache.h"
#include "utils/ruleutils.h"
#include "utils/typcache.h"

#include "refresh.h"
#include "dirty_log.h"
#include "eval_tick.h"
#include "flow_locks.h"
#include "planner.h"
#include "progress.h"
#include "settings.h"
#include "sink.h"
#include "trust.h"
#include "stats.h"
#include "window.h"

/* Bounds of one run: log entries read and merged window ranges. */
#define MAX_LOG_ENTRIES_PER_RUN 100000
#define MAX_RANGES_PER_RUN 64

static Const *
time_const(FlowPlan *plan, int64 ordinal)
{
	int16		typlen;
	bool		typbyval;

	get_typlenbyval(plan->time_type, &typlen, &typbyval);
	return makeConst(plan->time_type, -1, InvalidOid, typlen,
					 window_ordinal_to_datum(plan->time_type, ordinal),
					 false, typbyval);
}

static Expr *
time_compare(FlowPlan *plan, Var *var, int strategy, int64 ordinal)
{
	TypeCacheEntry *typentry = lookup_type_cache(plan->time_type, TYPECACHE_BTREE_OPFAMILY);
	Oid			opno = get_opfamily_member(typentry->btree_opf, plan->time_type,
										   plan->time_type, strategy);
	Expr	   *op = make_opclause(opno, BOOLOID, false, (Expr *) copyObject(var),
								   (Expr *) time_const(plan, ordinal),
								   InvalidOid, InvalidOid);

	set_opfuncid((OpExpr *) op);
	return op;
}

/* (col >= a1 AND col < b1) OR ... as a qual over the query's time column. */
static Node *
ranges_qual(FlowPlan *plan, List *ranges)
{
	Var		   *var = linitial_node(Var, pull_var_clause((Node *) plan->window_expr, 0));
	List	   *arms = NIL;
	ListCell   *lc;

	foreach(lc, ranges)
	{
		WindowRange *r = lfirst(lc);
		List	   *conds = NIL;

		if (!r->from_beginning)
			conds = lappend(conds, time_compare(plan, var, BTGreaterEqualStrategyNumber, r->start));
		if (!r->unbounded)
			conds = lappend(conds, time_compare(plan, var, BTLessStrategyNumber, r->end));
		Assert(conds != NIL);
		arms = lappend(arms, make_ands_explicit(conds));
	}
	return list_length(arms) == 1 ? linitial(arms) : (Node *) make_orclause(arms);
}

/*
 * The flow's query restricted to the ranges (the whole query when whole),
 * deparsed; *bounds gets the ranges as values of the sink's window column.
 */
static char *
refresh_query(FlowPlan *plan, WindowProbe *probe, List *ranges, bool whole, List **bounds)
{
	Query	   *query = copyObject(plan->query);
	ListCell   *lc;

	*bounds = NIL;
	if (!whole)
	{
		Oid			wtype = plan->outputs[plan->window_output].type;
		int16		typlen;
		bool		typbyval;

		/* the ranges as values of the sink's window column */
		get_typlenbyval(wtype, &typlen, &typbyval);
		foreach(lc, ranges)
		{
			WindowRange *r = lfirst(lc);
			SinkWindowRange *b = palloc0(sizeof(SinkWindowRange));

			b->has_start = !r->from_beginning;
			if (b->has_start)
				b->start = datumCopy(window_probe_eval(probe, r->start), typbyval, typlen);
			b->has_end = !r->unbounded;
			if (b->has_end)
				b->end = datumCopy(window_probe_eval(probe, r->end), typbyval, typlen);
			*bounds = lappend(*bounds, b);
		}
		query->jointree->quals = make_and_qual(query->jointree->quals,
											   ranges_qual(plan, ranges));
	}
	return pg_get_querydef(query, false);
}

/*
 * Replaces the sink rows of the ranges (all of them when ranges is NIL and
 * whole) by the flow's query restricted to the ranges.  Runs in the
 * caller's SPI connection, as the flow's owner.
 */
static uint64
recompute(FlowEntry *entry, FlowPlan *plan, WindowProbe *probe, List *ranges, bool whole)
{
	List	   *bounds;
	char	   *query = refresh_query(plan, probe, ranges, whole, &bounds);

	uint64		rows;

	progress_phase(whole ? "recomputing the whole sink" : "recomputing windows");
	rows = sink_replace_windows(entry->sink_relid, plan, entry->flow_name, bounds, whole,
								query);
	progress_counts(-1, -1, -1, rows);
	return rows;
}

List *
refresh_clip_ranges(List *ranges, int64 cutoff)
{
	List	   *kept = NIL;
	ListCell   *lc;

	foreach(lc, ranges)
	{
		WindowRange *r = palloc(sizeof(WindowRange));

		*r = *(WindowRange *) lfirst(lc);
		if (!r->unbounded && r->end <= cutoff)
			continue;
		if (r->from_beginning || r->start < cutoff)
			r->start = cutoff;
		r->from_beginning = false;
		kept = lappend(kept, r);
	}
	return kept;
}

/*
 * Brings the partition descriptors of the flow's partitioned sources up to
 * the caller's snapshot before the run reads them.  ATTACH PARTITION locks
 * the parent only against other DDL, so the source lock we hold does not
 * keep it out, and its transaction turns visible to snapshots (and wakes
 * the worker at commit) before it sends the invalidation of the parent: a
 * run could see its dirty log entry, yet plan the source with the
 * partitions of before and consume the entry without the new one's rows.
 * The attached partition stays locked by the ATTACH until the invalidation
 * is sent; locking the partitions the catalog shows now waits for that and
 * takes the invalidation in.
 */
static bool
partitions_changed(Oid relid)
{
	ListCell   *lc;
	bool		changed = false;

	foreach(lc, find_all_inheritors(relid, NoLock, NULL))
	{
		Relation	rel;

		if (get_rel_relkind(lfirst_oid(lc)) != RELKIND_PARTITIONED_TABLE)
			continue;
		rel = try_relation_open(lfirst_oid(lc), NoLock);
		if (rel == NULL)
			return true;
		/* the catalog's partitions against the cached descriptor's */
		changed = list_length(find_inheritance_children(lfirst_oid(lc), NoLock)) !=
			RelationGetPartitionDesc(rel, false)->nparts;
		relation_close(rel, NoLock);
		if (changed)
			break;
	}
	return changed;
}

static void
lock_source_partitions(FlowEntry *entry)
{
	ListCell   *lc;

	/* (only when they differ: a source may have thousands of partitions) */
	foreach(lc, entry->source_relids)
		if (get_rel_relkind(lfirst_oid(lc)) == RELKIND_PARTITIONED_TABLE &&
			partitions_changed(lfirst_oid(lc)))
			list_free(find_all_inheritors(lfirst_oid(lc), AccessShareLock, NULL));
	AcceptInvalidationMessages();
}

/*
 * Enters the flow's world: its plan, pinned settings, owner and SPI; and
 * says what it does in flowpg.flow_progress.
 */
void
refresh_run_begin(RefreshRun *run, FlowEntry *entry, ProgressCommand command)
{
	progress_begin(entry->flow_id, command);
	lock_source_partitions(entry);
	run->entry = entry;
	run->recorded = false;
	run->plan = flow_plan_for_entry(entry);
	/* the owner's code runs here: it may not change the caller's session */
	flow_enter(&run->identity, entry->owner, entry->settings, false);
	/* before any of the tables' own code runs: verify and explain write nothing */
	trust_require_table_code(sink_untrusted_code(entry->sink_relid, run->plan, entry->owner,
												 command != PROGRESS_VERIFY &&
												 command != PROGRESS_EXPLAIN),
							 entry->flow_name, entry->owner);
	run->probe = run->plan->window_expr ? flow_plan_window_probe(run->plan) : NULL;
	{
		MemoryContext caller = CurrentMemoryContext;

		if (SPI_connect() != SPI_OK_CONNECT)
			elog(ERROR, "SPI_connect failed");
		/* what the run builds (ranges, consumed entries) outlives SPI_finish */
		MemoryContextSwitchTo(caller);
	}
}

void
refresh_run_end(RefreshRun *run)
{
	SPI_finish();
	flow_leave(&run->identity);
	if (run->recorded)
		stats_set_last_tick(run->entry->flow_id, run->recorded_tick);
	progress_end();
}

List *
refresh_maintained_ranges(RefreshRun *run)
{
	WindowRange *all;

	/* a recording rule's expire_after is about its now() key (record_tick) */
	if (run->entry->expire_after == NULL || run->probe == NULL || run->plan->recording_rule)
		return NIL;
	all = palloc0(sizeof(WindowRange));
	all->start = window_expiry_cutoff(run->probe, run->entry->expire_after);
	all->unbounded = true;
	return list_make1(all);
}

/*
 * The cutoff of a recording rule's expire_after at a tick: rows whose now()
 * key is before it are deleted.  False without expire_after.
 */
static bool
record_cutoff(FlowEntry *entry, TimestampTz tick, TimestampTz *cutoff)
{
	if (entry->expire_after == NULL)
		return false;
	*cutoff = DatumGetTimestampTz(DirectFunctionCall2(timestamptz_mi_interval,
													  TimestampTzGetDatum(tick),
													  IntervalPGetDatum(entry->expire_after)));
	return true;
}

/*
 * The tick a recording rule's evaluation is of: the worker's (set for its
 * run), else -- a flush, a refresh, a backfill -- the current one, the last
 * tick at or before the transaction's time, so that every row of the sink
 * is a tick's and a flush brings the current tick's rows up to date rather
 * than adding rows between ticks.
 */
static TimestampTz
record_tick_time(FlowEntry *entry, bool *set_here)
{
	*set_here = false;
	if (eval_tick_is_set() || entry->eval_interval == NULL)
		return eval_tick_now();
	*set_here = true;
	return eval_tick_floor(entry->eval_interval, GetCurrentTransactionStartTimestamp());
}

/*
 * A recording rule's evaluation at a tick (record_tick_time): the rows of
 * that tick (its tick keys' values) are replaced by the groups the query
 * yields then, and the rows of earlier ticks stay, but for those whose
 * now() key is older than expire_after.
 */
static uint64
record_tick(RefreshRun *run)
{
	bool		set_here;
	TimestampTz tick = record_tick_time(run->entry, &set_here);
	TimestampTz cutoff = 0;
	bool		prune = record_cutoff(run->entry, tick, &cutoff);
	uint64		rows = 0;

	progress_phase("adding the groups of the tick");
	if (set_here)
		eval_tick_set(tick);
	PG_TRY();
	{
		rows = sink_record_tick(run->entry->sink_relid, run->plan, run->entry->flow_name,
								pg_get_querydef(copyObject(run->plan->query), false),
								prune, cutoff);
	}
	PG_FINALLY();
	{
		if (set_here)
			eval_tick_clear();
	}
	PG_END_TRY();
	progress_counts(-1, -1, -1, rows);
	run->recorded = true;
	run->recorded_tick = tick;
	return rows;
}

/* The whole flow, within expire_after; *ranges gets that range (NIL: all). */
static uint64
recompute_whole(RefreshRun *run, List **ranges)
{
	*ranges = refresh_maintained_ranges(run);
	if (run->plan->recording_rule)
		return record_tick(run);
	return recompute(run->entry, run->plan, run->probe, *ranges, *ranges == NIL);
}

void
refresh_restrict_query(FlowPlan *plan, Query *query, List *ranges)
{
	query->jointree->quals = make_and_qual(query->jointree->quals,
										   ranges_qual(plan, ranges));
}

/*
 * Merges the sorted log entries into window-aligned ranges, up to the run's
 * bound; *consumed gets the entries the ranges cover.
 */
static List *
merge_ranges(WindowProbe *probe, List *entries, List **consumed)
{
	List	   *ranges = NIL;
	WindowRange *cur = NULL;
	ListCell   *lc;

	foreach(lc, entries)
	{
		DirtyEntry   *e = lfirst(lc);
		int64		start;
		int64		end;
		bool		unbounded;

		if (cur == NULL || cur->unbounded || e->lo >= cur->end)
		{
			if (cur && cur->unbounded)
			{
				*consumed = lappend(*consumed, e);
				continue;
			}
			window_bounds(probe, e->lo, &start, &end, &unbounded);
			if (cur && start <= cur->end)
			{
				cur->end = end;
				cur->unbounded = unbounded;
			}
			else
			{
				if (list_length(ranges) == MAX_RANGES_PER_RUN)
					break;
				cur = palloc0(sizeof(WindowRange));
				cur->start = start;
				cur->end = end;
				cur->unbounded = unbounded;
				ranges = lappend(ranges, cur);
			}
		}
		if (!cur->unbounded && e->hi >= cur->end)
		{
			window_bounds(probe, e->hi, &start, &end, &unbounded);
			cur->end = end;
			cur->unbounded = unbounded;
		}
		*consumed = lappend(*consumed, e);
	}
	return ranges;
}

/* The width of the window holding now, in microseconds (integers: seconds). */
static int64
current_window_usecs(RefreshRun *run)
{
	int64		start;
	int64		end;
	bool		unbounded;

	if (run->probe == NULL)
		return 0;
	window_bounds(run->probe,
				  window_ordinal_from_timestamptz(run->plan->time_type, GetCurrentTimestamp()),
				  &start, &end, &unbounded);
	if (unbounded)
		return 0;
	switch (run->plan->time_type)
	{
		case TIMESTAMPTZOID:
		case TIMESTAMPOID:
			return end - start;
		case DATEOID:
			return (end - start) * USECS_PER_DAY;
		default:
			return (end - start) * USECS_PER_SEC;
	}
}

/*
 * Takes the flow's refresh lock and reads the flow again: it may have been
 * replaced or dropped while we waited (NULL then).
 */
static FlowEntry *
lock_current_entry(int64 flow_id)
{
	FlowEntry  *entry;

	flow_lock(flow_id);
	entry = catalog_get_by_id(flow_id);
	/* paused while the caller waited for the lock (the worker checks first) */
	if (entry)
		catalog_refuse_if_paused(entry, "the refresh");
	return entry;
}

/* Ends a refresh's run and consumes the log entries it recomputed. */
static void
refresh_end(RefreshRun *run, List *consumed, RunResult *result)
{
	ListCell   *lc;

	refresh_run_end(run);
	foreach(lc, consumed)
		result->rows_in += ((DirtyEntry *) lfirst(lc))->nrows;
	result->log_entries = list_length(consumed);
	dirty_log_delete(consumed);
}

/*
 * How finely a batching flow's shared dirty-log rows are merged when it
 * claims them: per second of timestamps, per value of other time ordinals;
 * 0 for a streaming flow, which has no shared rows.
 */
static int64
claim_unit(FlowEntry *entry)
{
	Oid			type;

	if (flow_on_streams(entry))
		return 0;
	if (!OidIsValid(entry->time_relid))
		return 1;
	type = get_atttype(entry->time_relid, entry->time_attno);
	return type == TIMESTAMPOID || type == TIMESTAMPTZOID ? USECS_PER_SEC : 1;
}

RunResult
refresh_dirty(FlowEntry *entry, RefreshRecomputed *recomputed)
{
	RunResult result = {0, 0, 0, false, 0};
	List	   *entries;
	List	   *consumed = NIL;
	List	   *ranges = NIL;
	bool		whole = false;
	bool		any = false;
	RefreshRun	own_run;
	RefreshRun   *run = recomputed ? &recomputed->run : &own_run;
	ListCell   *lc;

	if (recomputed)
		recomputed->open = false;
	entry = lock_current_entry(entry->flow_id);
	if (entry == NULL)
		return result;
	entries = dirty_log_read(entry->flow_id, claim_unit(entry), MAX_LOG_ENTRIES_PER_RUN);
	if (entries == NIL)
		return result;
	result.more_pending = list_length(entries) == MAX_LOG_ENTRIES_PER_RUN;

	refresh_run_begin(run, entry, PROGRESS_REFRESH);
	result.window_usecs = current_window_usecs(run);
	foreach(lc, entries)
		whole |= ((DirtyEntry *) lfirst(lc))->whole;
	if (whole || run->probe == NULL || run->plan->recording_rule)
	{
		consumed = entries;
		result.rows_out = recompute_whole(run, &ranges);
		whole = ranges == NIL;
		any = true;
	}
	else
	{
		ranges = merge_ranges(run->probe, entries, &consumed);
		result.more_pending |= list_length(consumed) < list_length(entries);
		if (entry->expire_after)
			ranges = refresh_clip_ranges(ranges,
								  window_expiry_cutoff(run->probe, entry->expire_after));
		if (ranges != NIL)
		{
			progress_counts(0, list_length(ranges), -1, -1);
			result.rows_out = recompute(entry, run->plan, run->probe, ranges, false);
			progress_counts(list_length(ranges), -1, -1, -1);
			any = true;
		}
	}
	if (recomputed && any)
	{
		recomputed->open = true;
		recomputed->whole = whole;
		recomputed->ranges = ranges;
		recomputed->consumed = consumed;
		return result;
	}
	refresh_end(run, consumed, &result);
	return result;
}

void
refresh_done(RefreshRecomputed *recomputed, RunResult *result)
{
	Assert(recomputed->open);
	recomputed->open = false;
	refresh_end(&recomputed->run, recomputed->consumed, result);
}

RunResult
refresh_flush(FlowEntry *entry)
{
	RunResult total = {0, 0, 0, false, 0};
	RunResult one;

	do
	{
		one = refresh_dirty(entry, NULL);
		total.rows_out += one.rows_out;
		total.rows_in += one.rows_in;
		total.log_entries += one.log_entries;
		CHECK_FOR_INTERRUPTS();
	} while (one.more_pending);
	return total;
}

RunResult
refresh_recompute_all(FlowEntry *entry)
{
	RunResult result = {0, 0, 0, false, 0};
	RefreshRun	run;
	List	   *ranges;

	entry = lock_current_entry(entry->flow_id);
	if (entry == NULL)
		return result;

	/*
	 * Entries this statement sees were committed before the recompute's
	 * snapshot is taken, so their changes are in it.
	 */
	result.log_entries = dirty_log_delete_all(entry->flow_id, &result.rows_in);

	refresh_run_begin(&run, entry, PROGRESS_RECOMPUTE);
	result.rows_out = recompute_whole(&run, &ranges);
	refresh_run_end(&run);
	return result;
}

/*
 * The range of the windows holding time ordinals lo to hi (from the first
 * window, or to the last, when not has_lo / has_hi), within expire_after;
 * NIL when nothing of it is maintained.
 */
static List *
ordinal_ranges(RefreshRun *run, bool has_lo, int64 lo, bool has_hi, int64 hi, bool history)
{
	WindowRange *r = palloc0(sizeof(WindowRange));
	List	   *ranges;
	int64		s;
	int64		e;
	bool		unbounded;

	r->from_beginning = true;
	r->unbounded = true;
	if (has_lo)
	{
		window_bounds(run->probe, lo, &s, &e, &unbounded);
		r->start = s;
		r->from_beginning = false;
	}
	if (has_hi)
	{
		window_bounds(run->probe, hi, &s, &e, &unbounded);
		r->end = e;
		r->unbounded = unbounded;
	}
	if (!r->unbounded && !r->from_beginning && r->end <= r->start)
		return NIL;
	ranges = list_make1(r);
	if (run->entry->expire_after && !history)
		ranges = refresh_clip_ranges(ranges,
								   window_expiry_cutoff(run->probe, run->entry->expire_after));
	return ranges;
}

/* Recomputes the windows of ordinal_ranges, in the caller's run context. */
static uint64
recompute_ordinals(RefreshRun *run, bool has_lo, int64 lo, bool has_hi, int64 hi, bool history)
{
	List	   *ranges = ordinal_ranges(run, has_lo, lo, has_hi, hi, history);

	return ranges ? recompute(run->entry, run->plan, run->probe, ranges, false) : 0;
}

uint64
refresh_range(FlowEntry *entry, bool has_start, Datum start,
					bool has_end, Datum end)
{
	RefreshRun	run;
	uint64		rows;

	entry = lock_current_entry(entry->flow_id);
	if (entry == NULL)
		return 0;
	refresh_run_begin(&run, entry, PROGRESS_RECOMPUTE);
	if (run.probe == NULL || (!has_start && !has_end))
	{
		List	   *ranges;

		rows = recompute_whole(&run, &ranges);
	}
	else
	{
		/* end is exclusive: the window holding the last value before it */
		rows = recompute_ordinals(&run, has_start,
								has_start ? window_ordinal_from_timestamptz(run.plan->time_type,
																			DatumGetTimestampTz(start)) : 0,
								has_end,
								has_end ? window_ordinal_from_timestamptz(run.plan->time_type,
																		  DatumGetTimestampTz(end) - 1) : 0,
								false);
	}
	refresh_run_end(&run);
	return rows;
}

uint64
refresh_ordinals(FlowEntry *entry, bool has_lo, int64 lo, bool has_hi, int64 hi,
					   bool null_window, bool history)
{
	RefreshRun	run;
	uint64		rows;
	List	   *ranges;

	entry = lock_current_entry(entry->flow_id);
	if (entry == NULL)
		return 0;
	refresh_run_begin(&run, entry, PROGRESS_BACKFILL);
	if (run.probe == NULL || (!has_lo && !has_hi))
		rows = recompute_whole(&run, &ranges);
	else
	{
		if (null_window)
			sink_delete_null_window(entry->sink_relid, run.plan, entry->flow_name);
		rows = recompute_ordinals(&run, has_lo, lo, has_hi, hi, history);
	}
	refresh_run_end(&run);
	return rows;
}


/*
 * The flow's time column and its table, quoted: the column by number, since
 * its name may have changed since the flow was made.
 */
static void
time_column_sql(FlowEntry *entry, const char **column, char **table)
{
	*column = quote_identifier(get_attname(entry->time_relid, entry->time_attno, false));
	*table = quote_qualified_identifier(get_namespace_name(get_rel_namespace(entry->time_relid)),
										get_rel_name(entry->time_relid));
}

bool
refresh_time_bounds(FlowEntry *entry, bool has_start, TimestampTz start,
				  int64 *lo, int64 *hi, int64 *rows, bool *null_times)
{
	RefreshRun	run;
	const char *column;
	char	   *table;
	char	   *sql;
	bool		lo_null;
	bool		hi_null;
	Datum		d;

	if (!OidIsValid(entry->time_relid))
		return false;
	refresh_run_begin(&run, entry, PROGRESS_BACKFILL);
	progress_phase("reading the source's time range");
	if (run.probe == NULL)
	{
		refresh_run_end(&run);
		return false;
	}
	time_column_sql(entry, &column, &table);
	sql = psprintf("SELECT min(%s), max(%s), count(*), count(*) - count(%s) FROM %s",
				   column, column, column, table);
	if (SPI_execute(sql, true, 0) != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "flowpg could not read the time range of flow \"%s\"", entry->flow_name);
	d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &lo_null);
	if (!lo_null)
		*lo = window_datum_to_ordinal(run.plan->time_type, d);
	d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &hi_null);
	if (!hi_null)
		*hi = window_datum_to_ordinal(run.plan->time_type, d);
	*rows = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 3, &hi_null));
	*null_times = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 4, &hi_null)) > 0;


	/*
	 * With expire_after (the backfill of a history): from the oldest row,
	 * or from start, but the maintained windows all, rows or not.
	 */
	if (entry->expire_after && !run.plan->recording_rule)
	{
		int64		cutoff = window_expiry_cutoff(run.probe, entry->expire_after);

		if (lo_null)
			*lo = *hi = cutoff;
		else if (has_start)
			*lo = Max(*lo, window_ordinal_from_timestamptz(run.plan->time_type, start));
		*lo = Min(*lo, cutoff);
		*hi = Max(*hi, *lo);
		lo_null = false;
	}
	refresh_run_end(&run);
	return !lo_null;
}

bool
refresh_source_newest(FlowEntry *entry, Oid time_type, int64 *x)
{
	const char *column;
	char	   *table;
	bool		isnull = true;
	Datum		d;

	time_column_sql(entry, &column, &table);
	/* max() alone: an index on the column answers it without a scan */
	if (SPI_execute(psprintf("SELECT max(%s) FROM %s", column, table), true, 0) != SPI_OK_SELECT ||
		SPI_processed != 1)
		elog(ERROR, "flowpg could not read the newest time of flow \"%s\"", entry->flow_name);
	d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	if (!isnull)
		*x = window_datum_to_ordinal(time_type, d);
	return !isnull;
}

bool
refresh_newest_time(RefreshRun *run, int64 *x)
{
	return run->probe != NULL && refresh_source_newest(run->entry, run->plan->time_type, x);
}

bool
refresh_statements(RefreshRun *run, bool whole, int64 x, RefreshStatements *out)
{
	List	   *bounds;

	if (run->plan->recording_rule)
	{
		bool		set_here;
		TimestampTz cutoff = 0;
		bool		prune = record_cutoff(run->entry, record_tick_time(run->entry, &set_here),
										  &cutoff);

		out->ranges = NIL;
		out->select_sql = pg_get_querydef(copyObject(run->plan->query), false);
		sink_record_statements(run->entry->sink_relid, run->plan, out->select_sql,
							   prune, cutoff, &out->sink);
		return true;
	}
	if (whole || run->probe == NULL)
	{
		out->ranges = refresh_maintained_ranges(run);
		whole = out->ranges == NIL;
	}
	else
	{
		out->ranges = ordinal_ranges(run, true, x, true, x, false);
		if (out->ranges == NIL)
			return false;
	}
	out->select_sql = refresh_query(run->plan, run->probe, out->ranges, whole, &bounds);
	sink_refresh_statements(run->entry->sink_relid, run->plan, bounds, whole,
							out->select_sql, &out->sink);
	return true;
}
