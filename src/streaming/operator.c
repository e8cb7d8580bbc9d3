/*-------------------------------------------------------------------------
 *
 * operator.c
 *	  Where a streaming flow is compiled and rows and groups go through it.
 *
 * The graph is built from the flow's analysed query (the catalog's
 * nodeToString tree, the same in every process): the columns of the one
 * source table it reads become a compact row, WHERE becomes a filter, the
 * GROUP BY expressions the group key (the time window among them), the
 * aggregate arguments and FILTER clauses expressions over the row.  On the
 * output side every Aggref and every group key expression of the target
 * list and HAVING is replaced by a reference to the finalized group, as
 * setrefs.c does for an Agg node, so the sink row is the query's own
 * expressions evaluated over (keys, aggregate results).
 *
 * Expressions are compiled with ExecInitExpr (no planner, no SQL), groups
 * are kept in PostgreSQL's TupleHashTable with the GROUP BY equality and
 * hash functions, so two values the query would group together (1.0 and
 * 1.00) share a group here too.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/detoast.h"
#include "access/tupdesc.h"
#include "catalog/pg_type.h"
#include "common/hashfn.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "utils/rel.h"
#include "optimizer/optimizer.h"
#include "parser/parsetree.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"

#include "guc.h"
#include "key_limits.h"
#include "operator.h"
#include "window.h"

/* Group states are carved from blocks: no per-group chunk header. */
#define GROUP_BLOCK_SIZE (32 * 1024)

typedef struct BuildContext
{
	Query	   *query;
	AttrNumber *compact;		/* source attno -> row column, 0 when unused */
	int			maxattno;
	StreamGraph *graph;
	List	   *key_exprs;		/* original GROUP BY expressions */
} BuildContext;

uint32
graph_version(FlowEntry *entry)
{
	uint32		h = hash_bytes((const unsigned char *) entry->query_tree,
							   strlen(entry->query_tree));

	if (entry->settings)
		h = hash_combine(h, hash_bytes((const unsigned char *) VARDATA(entry->settings),
									   VARSIZE(entry->settings) - VARHDRSZ));
	if (entry->expire_after)
		h = hash_combine(h, hash_bytes((const unsigned char *) entry->expire_after,
									   sizeof(Interval)));
	h = hash_combine(h, (uint32) entry->window_output);
	return hash_combine(h, (uint32) entry->sink_relid);
}

/* Source Vars -> columns of the compact row. */
static Node *
compact_vars_mutator(Node *node, BuildContext *cxt)
{
	if (node == NULL)
		return NULL;
	if (IsA(node, Var))
	{
		Var		   *var = (Var *) copyObject(node);

		if (var->varno != 1 || var->varlevelsup != 0 || var->varattno <= 0 ||
			var->varattno > cxt->maxattno || cxt->compact[var->varattno] == 0)
			elog(ERROR, "flowpg: unexpected column reference in a streaming flow");
		var->varattno = cxt->compact[var->varattno];
		var->varattnosyn = var->varattno;
		return (Node *) var;
	}
	return expression_tree_mutator(node, compact_vars_mutator, (void *) cxt);
}

/* The row column a plain column expression reads, read without running it; else -1. */
static int16
plain_row_column(BuildContext *cxt, Node *expr)
{
	Var		   *var = (Var *) expr;

	return expr == NULL || !IsA(expr, Var) || var->varno != 1 || var->varlevelsup != 0 ||
		var->varattno <= 0 || var->varattno > cxt->maxattno ? -1 :
		cxt->compact[var->varattno] - 1;
}

static ExprState *
compile_expr(BuildContext *cxt, Node *expr)
{
	expr = compact_vars_mutator(expr, cxt);
	return ExecInitExpr(expression_planner((Expr *) expr), NULL);
}

static ExprState *
compile_qual(BuildContext *cxt, Node *qual)
{
	if (qual == NULL)
		return NULL;
	qual = compact_vars_mutator(qual, cxt);
	qual = (Node *) expression_planner((Expr *) qual);
	return ExecInitQual(make_ands_implicit((Expr *) qual), NULL);
}

/* Aggregates and group keys -> the group slot's columns (OUTER_VAR). */
static Node *
group_ref_mutator(Node *node, BuildContext *cxt)
{
	StreamGraph *graph = cxt->graph;
	ListCell   *lc;

	if (node == NULL)
		return NULL;
	if (IsA(node, Aggref))
	{
		for (int i = 0; i < graph->nuser_aggs; i++)
		{
			FlowAggregate *def = list_nth(graph->plan->aggregates, i);

			if (equal(node, def->aggref))
				return (Node *) makeVar(OUTER_VAR, graph->nkeys + i + 1,
										exprType(node), -1, exprCollation(node), 0);
		}
		elog(ERROR, "flowpg: aggregate of the output not found in the flow's plan");
	}
	foreach(lc, cxt->key_exprs)
	{
		if (equal(node, lfirst(lc)))
			return (Node *) makeVar(OUTER_VAR, foreach_current_index(lc) + 1,
									exprType(node), exprTypmod(node),
									exprCollation(node), 0);
	}
	if (IsA(node, Var))
		elog(ERROR, "flowpg: output column is neither grouped nor aggregated");
	return expression_tree_mutator(node, group_ref_mutator, (void *) cxt);
}

static void
collect_columns(BuildContext *cxt)
{
	Query	   *query = cxt->query;
	RangeTblEntry *rte = rt_fetch(1, query->rtable);
	List	   *vars;
	ListCell   *lc;
	StreamGraph *graph = cxt->graph;

	vars = pull_var_clause((Node *) query->targetList, PVC_RECURSE_AGGREGATES);
	vars = list_concat(vars, pull_var_clause(query->jointree->quals, PVC_RECURSE_AGGREGATES));
	vars = list_concat(vars, pull_var_clause(query->havingQual, PVC_RECURSE_AGGREGATES));
	cxt->maxattno = 0;
	foreach(lc, vars)
		cxt->maxattno = Max(cxt->maxattno, lfirst_node(Var, lc)->varattno);
	cxt->compact = palloc0(sizeof(AttrNumber) * (cxt->maxattno + 1));

	/* the time column is always read: it places a group's rows in time */
	if (graph->plan->window_expr)
	{
		Var		   *tv = linitial_node(Var, pull_var_clause((Node *) graph->plan->window_expr, 0));

		vars = lcons(tv, vars);
	}
	graph->col_attnos = palloc(sizeof(AttrNumber) * Max(list_length(vars), 1));
	graph->source_relid = rte->relid;
	graph->ncols = 0;
	foreach(lc, vars)
	{
		Var		   *var = lfirst_node(Var, lc);

		if (var->varno != 1 || var->varlevelsup != 0 || var->varattno <= 0)
			elog(ERROR, "flowpg: a streaming flow reads a column it cannot capture");
		if (cxt->compact[var->varattno] != 0)
			continue;
		cxt->compact[var->varattno] = ++graph->ncols;
		graph->col_attnos[graph->ncols - 1] = var->varattno;
	}
	graph->row_desc = CreateTemplateTupleDesc(Max(graph->ncols, 1));
	for (int a = 1; a <= cxt->maxattno; a++)
	{
		Oid			type;
		int32		typmod;
		Oid			collation;

		if (cxt->compact[a] == 0)
			continue;
		get_atttypetypmodcoll(rte->relid, a, &type, &typmod, &collation);
		TupleDescInitEntry(graph->row_desc, cxt->compact[a], get_attname(rte->relid, a, false),
						   type, typmod, 0);
		TupleDescInitEntryCollation(graph->row_desc, cxt->compact[a], collation);
	}
	graph->time_col = -1;
	if (graph->plan->window_expr)
	{
		graph->time_col = cxt->compact[graph->plan->time_attno] - 1;
		graph->time_type = graph->plan->time_type;
	}
}

/* Equality functions of by-value types that hold exactly for equal values. */
static bool
equality_is_identity(Oid eqfunc)
{
	switch (eqfunc)
	{
		case F_BOOLEQ:
		case F_CHAREQ:
		case F_INT2EQ:
		case F_INT4EQ:
		case F_INT8EQ:
		case F_OIDEQ:
		case F_DATE_EQ:
		case F_TIMESTAMP_EQ:
		case F_TIMESTAMPTZ_EQ:
			return true;
		default:
			return false;
	}
}

static void
build_keys(BuildContext *cxt)
{
	StreamGraph *graph = cxt->graph;
	Query	   *query = cxt->query;
	Oid		   *eqops;
	ListCell   *lc;
	int			k = 0;

	graph->nkeys = list_length(query->groupClause);
	graph->key_exprs = palloc(sizeof(ExprState *) * Max(graph->nkeys, 1));
	graph->key_cols = palloc(sizeof(AttrNumber) * Max(graph->nkeys, 1));
	graph->key_rowcols = palloc(sizeof(int16) * Max(graph->nkeys, 1));
	graph->key_collations = palloc(sizeof(Oid) * Max(graph->nkeys, 1));
	eqops = palloc(sizeof(Oid) * Max(graph->nkeys, 1));
	graph->key_desc = CreateTemplateTupleDesc(graph->nkeys);
	graph->window_key = -1;
	foreach(lc, query->groupClause)
	{
		SortGroupClause *sgc = lfirst_node(SortGroupClause, lc);
		TargetEntry *tle = get_sortgroupclause_tle(sgc, query->targetList);
		Node	   *expr = (Node *) tle->expr;

		cxt->key_exprs = lappend(cxt->key_exprs, expr);
		graph->key_exprs[k] = compile_expr(cxt, expr);
		graph->key_rowcols[k] = plain_row_column(cxt, expr);
		graph->key_cols[k] = k + 1;
		graph->key_collations[k] = exprCollation(expr);
		eqops[k] = sgc->eqop;
		TupleDescInitEntry(graph->key_desc, k + 1, NULL, exprType(expr), exprTypmod(expr), 0);
		if (graph->plan->window_expr && graph->window_key < 0 &&
			equal(expr, graph->plan->window_expr))
			graph->window_key = k;
		k++;
	}
	if (graph->nkeys > 0)
		execTuplesHashPrepare(graph->nkeys, eqops, &graph->key_eqfuncs, &graph->key_hashfns);
	graph->fast_keys = graph->nkeys > 0;
	for (k = 0; k < graph->nkeys; k++)
	{
		graph->fast_keys &= TupleDescAttr(graph->key_desc, k)->attbyval &&
			equality_is_identity(graph->key_eqfuncs[k]);
		graph->varlena_keys |= TupleDescAttr(graph->key_desc, k)->attlen == -1;
	}
	if (graph->window_key >= 0 && graph->time_col >= 0)
		graph->window_cache = window_cache_create(flow_plan_window_probe(graph->plan));
	graph->key_slot = MakeSingleTupleTableSlot(graph->key_desc, &TTSOpsMinimalTuple);
}

static void
build_aggregates(BuildContext *cxt)
{
	StreamGraph *graph = cxt->graph;
	ListCell   *lc;
	int			maxargs = 1;

	graph->nuser_aggs = list_length(graph->plan->aggregates);
	graph->retracts = graph->plan->is_aggregate && graph->plan->retract_refusal == NULL;
	graph->rows_counter = -1;
	graph->naggs = graph->nuser_aggs;
	if (graph->retracts)
	{
		/* at most a count per aggregate, and one of the rows */
		graph->naggs += graph->nuser_aggs + 1;
	}
	graph->aggs = palloc0(sizeof(AggSupport) * Max(graph->naggs, 1));
	graph->agg_args = palloc0(sizeof(ExprState **) * Max(graph->naggs, 1));
	graph->arg_rowcols = palloc0(sizeof(int16 *) * Max(graph->naggs, 1));
	graph->agg_filters = palloc0(sizeof(ExprState *) * Max(graph->naggs, 1));
	foreach(lc, graph->plan->aggregates)
	{
		FlowAggregate *def = lfirst(lc);
		int			i = foreach_current_index(lc);
		ListCell   *lc2;

		agg_support_init(&graph->aggs[i], def, flowpg_inline_aggregates);
		graph->agg_args[i] = palloc(sizeof(ExprState *) * Max(graph->aggs[i].nargs, 1));
		graph->arg_rowcols[i] = palloc(sizeof(int16) * Max(graph->aggs[i].nargs, 1));
		foreach(lc2, def->aggref->args)
		{
			Node	   *arg = (Node *) lfirst_node(TargetEntry, lc2)->expr;

			graph->agg_args[i][foreach_current_index(lc2)] = compile_expr(cxt, arg);
			graph->arg_rowcols[i][foreach_current_index(lc2)] = plain_row_column(cxt, arg);
		}
		if (def->aggref->aggfilter)
			graph->agg_filters[i] = compile_qual(cxt, (Node *) def->aggref->aggfilter);
		maxargs = Max(maxargs, graph->aggs[i].nargs);
		graph->internal_states |= graph->aggs[i].transtype == INTERNALOID;
	}
	if (graph->retracts)
	{
		int			n = graph->nuser_aggs;

		/*
		 * count's state is its own count of inputs; every other inverse
		 * gets one, to reinitialize the state when the last input goes.
		 */
		for (int i = 0; i < graph->nuser_aggs; i++)
		{
			FlowAggregate *def = list_nth(graph->plan->aggregates, i);

			if (def->retract != FLOW_RETRACT_INVERSE ||
				def->transfn == F_INT8INC || def->transfn == F_INT8INC_ANY)
				continue;
			agg_support_init_counter(&graph->aggs[n]);
			graph->agg_args[n] = palloc(sizeof(ExprState *));
			graph->aggs[i].counter = n++;
		}
		agg_support_init_counter(&graph->aggs[n]);
		graph->agg_args[n] = palloc(sizeof(ExprState *));
		graph->rows_counter = n++;
		graph->naggs = n;
	}
	graph->init_trans = palloc(sizeof(AggTrans) * Max(graph->naggs, 1));
	graph->arg_values = palloc(sizeof(Datum) * maxargs);
	graph->arg_nulls = palloc(sizeof(bool) * maxargs);
}

static void
build_outputs(BuildContext *cxt)
{
	StreamGraph *graph = cxt->graph;
	Query	   *query = cxt->query;
	ListCell   *lc;
	int			o = 0;

	graph->group_desc = CreateTemplateTupleDesc(Max(graph->nkeys + graph->naggs, 1));
	for (int k = 0; k < graph->nkeys; k++)
	{
		Form_pg_attribute attr = TupleDescAttr(graph->key_desc, k);

		TupleDescInitEntry(graph->group_desc, k + 1, NULL, attr->atttypid, attr->atttypmod, 0);
	}
	for (int i = 0; i < graph->naggs; i++)
		TupleDescInitEntry(graph->group_desc, graph->nkeys + i + 1, NULL,
						   graph->aggs[i].resulttype, -1, 0);
	graph->group_slot = MakeSingleTupleTableSlot(graph->group_desc, &TTSOpsVirtual);

	graph->noutputs = graph->plan->noutputs;
	graph->outputs = palloc(sizeof(ExprState *) * Max(graph->noutputs, 1));
	graph->output_lens = palloc(sizeof(int16) * Max(graph->noutputs, 1));
	graph->output_byvals = palloc(sizeof(bool) * Max(graph->noutputs, 1));
	foreach(lc, query->targetList)
	{
		TargetEntry *tle = lfirst_node(TargetEntry, lc);
		Node	   *expr = (Node *) tle->expr;

		if (tle->resjunk)
			continue;
		if (graph->plan->is_aggregate)
			graph->outputs[o] = ExecInitExpr(expression_planner((Expr *) group_ref_mutator(expr, cxt)),
											 NULL);
		else
			graph->outputs[o] = compile_expr(cxt, expr);
		get_typlenbyval(exprType(expr), &graph->output_lens[o], &graph->output_byvals[o]);
		o++;
	}
	if (query->havingQual)
	{
		Node	   *having = group_ref_mutator(query->havingQual, cxt);

		having = (Node *) expression_planner((Expr *) having);
		graph->having = ExecInitQual(make_ands_implicit((Expr *) having), NULL);
	}
}

StreamGraph *
graph_build(FlowEntry *entry, MemoryContext parent)
{
	MemoryContext memory = AllocSetContextCreate(parent, "flowpg operator graph",
												 ALLOCSET_SMALL_SIZES);
	MemoryContext old = MemoryContextSwitchTo(memory);
	StreamGraph *graph = palloc0(sizeof(StreamGraph));
	BuildContext cxt = {0};

	graph->memory = memory;
	graph->flow_id = entry->flow_id;
	graph->flow_name = pstrdup(entry->flow_name);
	graph->version = graph_version(entry);
	cxt.query = stringToNode(entry->query_tree);
	cxt.graph = graph;
	PG_TRY();
	{
		graph->plan = flow_plan_query_tree(cxt.query, entry->window_output);
		if (graph->plan->streaming_refusal)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("flowpg: flow \"%s\" cannot stream: %s", entry->flow_name,
							graph->plan->streaming_refusal)));

		collect_columns(&cxt);
		graph->econtext = CreateStandaloneExprContext();
		graph->row_slot = MakeSingleTupleTableSlot(graph->row_desc, &TTSOpsVirtual);
		graph->econtext->ecxt_scantuple = graph->row_slot;
		graph->filter = compile_qual(&cxt, cxt.query->jointree->quals);
		build_keys(&cxt);
		build_aggregates(&cxt);
		build_outputs(&cxt);
	}
	PG_CATCH();
	{
		/* a half-built graph (say, a privilege missing) is not kept */
		MemoryContextSwitchTo(old);
		MemoryContextDelete(memory);
		PG_RE_THROW();
	}
	PG_END_TRY();
	MemoryContextSwitchTo(old);
	return graph;
}

void
graph_free(StreamGraph *graph)
{
	MemoryContextDelete(graph->memory);
}

/*
 * Where each column the graph reads is in rel's rows: the flow's source
 * table by number; a partition or an inheritance child, whose numbers may
 * differ, by the source column's current name (as PostgreSQL maps a
 * partition's columns to its parent's).
 */
AttrNumber *
graph_column_map(StreamGraph *graph, Relation rel)
{
	TupleDesc	source_desc = RelationGetDescr(rel);
	AttrNumber *map = MemoryContextAlloc(graph->memory,
										 sizeof(AttrNumber) * Max(graph->ncols, 1));

	for (int c = 0; c < graph->ncols; c++)
	{
		char	   *name;

		if (RelationGetRelid(rel) == graph->source_relid)
		{
			map[c] = graph->col_attnos[c];
			continue;
		}
		name = get_attname(graph->source_relid, graph->col_attnos[c], false);
		map[c] = InvalidAttrNumber;
		for (int a = 0; a < source_desc->natts; a++)
		{
			Form_pg_attribute attr = TupleDescAttr(source_desc, a);

			if (!attr->attisdropped && strcmp(NameStr(attr->attname), name) == 0)
				map[c] = attr->attnum;
		}
		if (map[c] == InvalidAttrNumber)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_COLUMN),
					 errmsg("flowpg: source column \"%s\" is missing", name)));
	}
	return map;
}

void
graph_load_row(StreamGraph *graph, Datum *values, bool *isnull, AttrNumber *column_map)
{
	TupleTableSlot *row = graph->row_slot;

	ExecClearTuple(row);
	for (int c = 0; c < graph->ncols; c++)
	{
		row->tts_values[c] = values[column_map[c] - 1];
		row->tts_isnull[c] = isnull[column_map[c] - 1];
	}
	ExecStoreVirtualTuple(row);
}

/*
 * The fast table: simplehash over groups whose key values follow their
 * transition values.  A NULL key in a comparison is the key being looked
 * up, which is in FastProbe (as execGrouping.c compares with its input).
 */
typedef struct FastGroupEntry
{
	FlowGroup  *group;
	uint32		hash;
	char		status;
} FastGroupEntry;

typedef struct FastProbe
{
	StreamGraph *graph;
	uint32		hash;
	Datum	   *values;
	bool	   *nulls;
} FastProbe;

static inline Datum *
group_key_values(StreamGraph *graph, FlowGroup *group)
{
	return (Datum *) ((char *) group +
					  MAXALIGN(offsetof(FlowGroup, values) +
							   (sizeof(Datum) + 1) * graph->naggs));
}

static inline bool *
group_key_nulls(StreamGraph *graph, FlowGroup *group)
{
	return (bool *) (group_key_values(graph, group) + graph->nkeys);
}

static bool
fast_keys_equal(FastProbe *probe, FlowGroup *a, FlowGroup *b)
{
	StreamGraph *graph = probe->graph;
	Datum	   *va = a ? group_key_values(graph, a) : probe->values;
	bool	   *na = a ? group_key_nulls(graph, a) : probe->nulls;
	Datum	   *vb = b ? group_key_values(graph, b) : probe->values;
	bool	   *nb = b ? group_key_nulls(graph, b) : probe->nulls;

	for (int k = 0; k < graph->nkeys; k++)
		if (na[k] != nb[k] || (!na[k] && va[k] != vb[k]))
			return false;
	return true;
}

/* The key values with the bits their type does not use cleared. */
static inline Datum
normalize_key(Form_pg_attribute attr, Datum value)
{
	switch (attr->attlen)
	{
		case 1:
			return (Datum) (uint8) DatumGetChar(value);
		case 2:
			return (Datum) (uint16) DatumGetInt16(value);
		case 4:
			return (Datum) (uint32) DatumGetInt32(value);
		default:
			return value;
	}
}

static uint32
fast_hash(StreamGraph *graph, Datum *values, bool *nulls)
{
	uint32		h = 0;

	for (int k = 0; k < graph->nkeys; k++)
	{
		uint64		v = nulls[k] ? 0 : (uint64) values[k];

		h = hash_combine(h, murmurhash32((uint32) v ^ (uint32) (v >> 32) * 0x9e3779b9U) ^
						 (nulls[k] ? 0x5bd1e995U : 0));
	}
	return h;
}

#define SH_PREFIX fastgroup
#define SH_ELEMENT_TYPE FastGroupEntry
#define SH_KEY_TYPE FlowGroup *
#define SH_KEY group
#define SH_HASH_KEY(tb, key) \
	((key) == NULL ? ((FastProbe *) (tb)->private_data)->hash : \
	 fast_hash(((FastProbe *) (tb)->private_data)->graph, \
			   group_key_values(((FastProbe *) (tb)->private_data)->graph, key), \
			   group_key_nulls(((FastProbe *) (tb)->private_data)->graph, key)))
#define SH_EQUAL(tb, a, b) fast_keys_equal((FastProbe *) (tb)->private_data, a, b)
#define SH_STORE_HASH
#define SH_GET_HASH(tb, a) ((a)->hash)
#define SH_SCOPE static inline
#define SH_DECLARE
#define SH_DEFINE
#include "lib/simplehash.h"

GroupTable *
group_table_create(StreamGraph *graph, MemoryContext parent)
{
	MemoryContext memory = AllocSetContextCreate(parent, "flowpg groups",
												 ALLOCSET_DEFAULT_SIZES);
	GroupTable *table = MemoryContextAllocZero(memory, sizeof(GroupTable));

	table->memory = memory;
	table->aggcxt = agg_context_create(memory);
	if (graph->fast_keys)
	{
		FastProbe  *probe = MemoryContextAllocZero(memory, sizeof(FastProbe));

		probe->graph = graph;
		probe->values = MemoryContextAlloc(memory, sizeof(Datum) * graph->nkeys);
		probe->nulls = MemoryContextAlloc(memory, sizeof(bool) * graph->nkeys);
		table->fast = fastgroup_create(memory, 32, probe);
	}
	else if (graph->nkeys > 0)
		table->hash = BuildTupleHashTableExt(NULL, graph->key_desc, graph->nkeys,
											 graph->key_cols, graph->key_eqfuncs,
											 graph->key_hashfns, graph->key_collations,
											 256, 0, memory, memory,
											 graph->econtext->ecxt_per_tuple_memory,
											 false);
	return table;
}

void
group_table_free(GroupTable *table)
{
	MemoryContextDelete(table->memory);
}

static FlowGroup *
new_group(StreamGraph *graph, GroupTable *table, MinimalTuple key)
{
	Size		size = MAXALIGN(offsetof(FlowGroup, values) +
								(sizeof(Datum) + 1) * graph->naggs) +
		(table->fast ? MAXALIGN((sizeof(Datum) + 1) * graph->nkeys) : 0);
	AggTrans   *trans = graph->init_trans;
	FlowGroup *group;

	if (table->bump_left < size)
	{
		table->bump = MemoryContextAlloc(table->memory, Max(GROUP_BLOCK_SIZE, size));
		table->bump_left = Max(GROUP_BLOCK_SIZE, size);
	}
	group = (FlowGroup *) table->bump;
	table->bump += size;
	table->bump_left -= size;
	group->key = key;
	group->next = NULL;
	group->time_lo = PG_INT64_MAX;
	group->time_hi = PG_INT64_MIN;
	group->changed = false;
	group->in_sink = false;
	agg_init_trans(table->aggcxt, graph->aggs, graph->naggs, trans);
	for (int i = 0; i < graph->naggs; i++)
		group_put_trans(group, graph->naggs, i, &trans[i]);
	table->ngroups++;
	return group;
}

static FlowGroup *
fast_lookup(StreamGraph *graph, GroupTable *table, bool create)
{
	FastProbe  *probe = (FastProbe *) table->fast->private_data;
	TupleTableSlot *slot = graph->key_slot;
	FastGroupEntry *entry;
	FlowGroup  *group;
	bool		found;

	slot_getallattrs(slot);
	for (int k = 0; k < graph->nkeys; k++)
	{
		probe->nulls[k] = slot->tts_isnull[k];
		probe->values[k] = probe->nulls[k] ? (Datum) 0 :
			normalize_key(TupleDescAttr(graph->key_desc, k), slot->tts_values[k]);
	}
	probe->hash = fast_hash(graph, probe->values, probe->nulls);
	if (!create)
	{
		entry = fastgroup_lookup(table->fast, NULL);
		return entry ? entry->group : NULL;
	}
	entry = fastgroup_insert(table->fast, NULL, &found);
	if (found)
		return entry->group;
	group = new_group(graph, table, NULL);
	memcpy(group_key_values(graph, group), probe->values, sizeof(Datum) * graph->nkeys);
	memcpy(group_key_nulls(graph, group), probe->nulls, sizeof(bool) * graph->nkeys);
	group->next = table->fast_groups;
	table->fast_groups = group;
	entry->group = group;
	return group;
}

void
group_load_key(StreamGraph *graph, FlowGroup *group)
{
	TupleTableSlot *slot = graph->key_slot;

	if (group->key)
	{
		ExecStoreMinimalTuple(group->key, slot, false);
		slot_getallattrs(slot);
		return;
	}
	ExecClearTuple(slot);
	memcpy(slot->tts_values, group_key_values(graph, group), sizeof(Datum) * graph->nkeys);
	memcpy(slot->tts_isnull, group_key_nulls(graph, group), sizeof(bool) * graph->nkeys);
	ExecStoreVirtualTuple(slot);
}

FlowGroup *
group_lookup(StreamGraph *graph, GroupTable *table, bool create)
{
	TupleHashEntry entry;
	bool		isnew = false;

	if (graph->nkeys == 0)
	{
		/* one group: the whole input */
		if (table->single == NULL && create)
			table->single = new_group(graph, table, NULL);
		return table->single;
	}
	if (table->fast)
		return fast_lookup(graph, table, create);
	entry = LookupTupleHashEntry(table->hash, graph->key_slot, create ? &isnew : NULL, NULL);
	if (entry == NULL)
		return NULL;
	if (isnew)
		entry->additional = new_group(graph, table, entry->firstTuple);
	return (FlowGroup *) entry->additional;
}

/*
 * Evaluates the group key of the row into the key slot (detoasted).  The
 * window of a row whose time ordinal is t (has_time) may come from the
 * window cache.
 */
static void
eval_keys(StreamGraph *graph, bool has_time, int64 t)
{
	TupleTableSlot *slot = graph->key_slot;

	ExecClearTuple(slot);
	for (int k = 0; k < graph->nkeys; k++)
	{
		Form_pg_attribute attr = TupleDescAttr(graph->key_desc, k);
		Datum		value;

		if (k == graph->window_key && has_time && graph->window_cache)
		{
			slot->tts_isnull[k] = false;
			if (window_cache_lookup(graph->window_cache, t, &slot->tts_values[k]))
				continue;
			value = ExecEvalExpr(graph->key_exprs[k], graph->econtext, &slot->tts_isnull[k]);
			if (!slot->tts_isnull[k])
				window_cache_learn(graph->window_cache, t, value);
			slot->tts_values[k] = value;
			continue;
		}
		if (graph->key_rowcols[k] >= 0)
		{
			value = graph->row_slot->tts_values[graph->key_rowcols[k]];
			slot->tts_isnull[k] = graph->row_slot->tts_isnull[graph->key_rowcols[k]];
		}
		else
			value = ExecEvalExpr(graph->key_exprs[k], graph->econtext, &slot->tts_isnull[k]);

		if (!slot->tts_isnull[k] && attr->attlen == -1 &&
			VARATT_IS_EXTERNAL(DatumGetPointer(value)))
			value = PointerGetDatum(detoast_attr((struct varlena *) DatumGetPointer(value)));
		slot->tts_values[k] = value;
	}
	ExecStoreVirtualTuple(slot);
	if (graph->varlena_keys && graph->refuse_large_keys)
		key_limits_check(graph);
}

bool
graph_eval_row(StreamGraph *graph, int64 *time_lo, int64 *time_hi)
{
	ExprContext *econtext = graph->econtext;
	bool		has_time;
	int64		t = 0;

	ResetExprContext(econtext);
	econtext->ecxt_scantuple = graph->row_slot;
	if (graph->filter && !ExecQual(graph->filter, econtext))
		return false;
	has_time = graph->time_col >= 0 && !graph->row_slot->tts_isnull[graph->time_col];
	if (has_time)
		t = window_datum_to_ordinal(graph->time_type,
									graph->row_slot->tts_values[graph->time_col]);
	eval_keys(graph, has_time, t);
	/* a row without a time is an empty range, as a group of such rows */
	*time_lo = has_time ? t : PG_INT64_MAX;
	*time_hi = has_time ? t : PG_INT64_MIN;
	return true;
}

bool
graph_eval_agg_args(StreamGraph *graph, int i)
{
	ExprContext *econtext = graph->econtext;

	/* a hidden count has no inputs of its own: its aggregate's feed it */
	if (graph->aggs[i].is_counter)
		return false;
	if (graph->agg_filters[i] && !ExecQual(graph->agg_filters[i], econtext))
		return false;
	for (int a = 0; a < graph->aggs[i].nargs; a++)
	{
		int			col = graph->arg_rowcols[i][a];

		graph->arg_nulls[a] = col >= 0 && graph->row_slot->tts_isnull[col];
		graph->arg_values[a] = col >= 0 ? graph->row_slot->tts_values[col] :
			ExecEvalExpr(graph->agg_args[i][a], econtext, &graph->arg_nulls[a]);
	}
	return true;
}

AggInput *
graph_inputs_create(StreamGraph *graph)
{
	AggInput   *inputs = palloc0(sizeof(AggInput) * Max(graph->naggs, 1));

	for (int i = 0; i < graph->naggs; i++)
	{
		inputs[i].values = palloc(sizeof(Datum) * Max(graph->aggs[i].nargs, 1));
		inputs[i].nulls = palloc(sizeof(bool) * Max(graph->aggs[i].nargs, 1));
		inputs[i].skip = graph->aggs[i].is_counter; /* fed by its aggregate's */
	}
	return inputs;
}

void
graph_eval_inputs(StreamGraph *graph, AggInput *inputs)
{
	for (int i = 0; i < graph->nuser_aggs; i++)
	{
		inputs[i].skip = !graph_eval_agg_args(graph, i);
		if (inputs[i].skip)
			continue;
		memcpy(inputs[i].values, graph->arg_values, sizeof(Datum) * graph->aggs[i].nargs);
		memcpy(inputs[i].nulls, graph->arg_nulls, sizeof(bool) * graph->aggs[i].nargs);
	}
}

/* One more input in a hidden count of a group (by-value: no memory). */
static inline void
group_count_input(StreamGraph *graph, FlowGroup *group, int counter)
{
	AggTrans	count = group_get_trans(group, graph->naggs, counter);

	count.value = Int64GetDatum(DatumGetInt64(count.value) + 1);
	group_put_trans(group, graph->naggs, counter, &count);
}

bool
graph_accumulate_row(StreamGraph *graph, GroupTable *table)
{
	ExprContext *econtext = graph->econtext;
	FlowGroup  *group;
	int64		time_lo;
	int64		time_hi;

	if (!graph_eval_row(graph, &time_lo, &time_hi))
		return false;
	group = group_lookup(graph, table, true);
	group->time_lo = Min(group->time_lo, time_lo);
	group->time_hi = Max(group->time_hi, time_hi);
	for (int i = 0; i < graph->nuser_aggs; i++)
	{
		MemoryContext old;
		AggTrans	trans;
		bool		counted;

		if (!graph_eval_agg_args(graph, i))
			continue;
		old = MemoryContextSwitchTo(econtext->ecxt_per_tuple_memory);
		trans = group_get_trans(group, graph->naggs, i);
		counted = agg_advance(table->aggcxt, &graph->aggs[i], &trans, graph->arg_values,
							  graph->arg_nulls);
		group_put_trans(group, graph->naggs, i, &trans);
		MemoryContextSwitchTo(old);
		if (counted && graph->aggs[i].counter >= 0)
			group_count_input(graph, group, graph->aggs[i].counter);
	}
	if (graph->rows_counter >= 0)
		group_count_input(graph, group, graph->rows_counter);
	return true;
}

bool
graph_project_row(StreamGraph *graph, Datum *values, bool *nulls)
{
	ExprContext *econtext = graph->econtext;

	ResetExprContext(econtext);
	econtext->ecxt_scantuple = graph->row_slot;
	if (graph->filter && !ExecQual(graph->filter, econtext))
		return false;
	for (int o = 0; o < graph->noutputs; o++)
		values[o] = ExecEvalExpr(graph->outputs[o], econtext, &nulls[o]);
	return true;
}

bool
graph_finalize_output(StreamGraph *graph, AggContext *cxt, AggTrans *trans,
					  Datum *values, bool *nulls)
{
	ExprContext *econtext = graph->econtext;
	TupleTableSlot *slot = graph->group_slot;
	MemoryContext old = MemoryContextSwitchTo(econtext->ecxt_per_tuple_memory);

	ExecClearTuple(slot);
	if (graph->nkeys > 0)
	{
		slot_getallattrs(graph->key_slot);
		for (int k = 0; k < graph->nkeys; k++)
		{
			slot->tts_values[k] = graph->key_slot->tts_values[k];
			slot->tts_isnull[k] = graph->key_slot->tts_isnull[k];
		}
	}
	for (int i = 0; i < graph->naggs; i++)
		slot->tts_values[graph->nkeys + i] =
			agg_finalize(cxt, &graph->aggs[i], &trans[i], &slot->tts_isnull[graph->nkeys + i]);
	ExecStoreVirtualTuple(slot);
	MemoryContextSwitchTo(old);

	econtext->ecxt_outertuple = slot;
	for (int o = 0; o < graph->noutputs; o++)
		values[o] = ExecEvalExpr(graph->outputs[o], econtext, &nulls[o]);
	return graph->having == NULL || ExecQual(graph->having, econtext);
}

void
graph_key_outputs(StreamGraph *graph, Datum *values, bool *nulls)
{
	ExprContext *econtext = graph->econtext;
	TupleTableSlot *slot = graph->group_slot;

	ExecClearTuple(slot);
	slot_getallattrs(graph->key_slot);
	for (int k = 0; k < graph->nkeys; k++)
	{
		slot->tts_values[k] = graph->key_slot->tts_values[k];
		slot->tts_isnull[k] = graph->key_slot->tts_isnull[k];
	}
	for (int i = 0; i < graph->naggs; i++)
		slot->tts_isnull[graph->nkeys + i] = true;
	ExecStoreVirtualTuple(slot);
	econtext->ecxt_outertuple = slot;
	for (int o = 0; o < graph->noutputs; o++)
	{
		values[o] = (Datum) 0;
		nulls[o] = true;
		if (graph->plan->outputs[o].is_group_key)
			values[o] = ExecEvalExpr(graph->outputs[o], econtext, &nulls[o]);
	}
}

FlowGroup *
group_table_next(GroupTable *table, GroupIterator *iter)
{
	TupleHashEntry entry;

	if (table->fast)
	{
		FlowGroup  *group = iter->started ? iter->fast_next : table->fast_groups;

		iter->started = true;
		iter->fast_next = group ? group->next : NULL;
		return group;
	}
	if (table->hash == NULL)
	{
		if (iter->single_done)
			return NULL;
		iter->single_done = true;
		return table->single;
	}
	if (!iter->started)
	{
		InitTupleHashIterator(table->hash, &iter->hash_iter);
		iter->started = true;
	}
	entry = ScanTupleHashTable(table->hash, &iter->hash_iter);
	return entry ? (FlowGroup *) entry->additional : NULL;
}
