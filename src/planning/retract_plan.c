/*-------------------------------------------------------------------------
 *
 * retract_plan.c
 *	  Where it is decided how a streaming flow takes back the rows an
 *	  UPDATE or DELETE removed: per aggregate, from pg_aggregate.
 *
 * An aggregate retracts exactly with its moving-aggregate inverse
 * (aggminvtransfn) when that works on the state the flow keeps: the
 * moving variant's state is the normal one (count, sum/avg of int8 and
 * numeric, avg of int2/int4, stddev and variance, sum of interval and
 * money), or it is another aggregate's normal state, whose combine and
 * serial functions then serve it (sum(int2/int4): the moving state keeps
 * the count that tells the inverse when nothing is left; its normal state
 * is a bare sum).  An aggregate with a sort operator (min, max, bool_and,
 * bool_or) keeps its state when the removed value is not its extreme and
 * has its group recomputed when it is.  Anything else -- float sums, whose
 * inverse would not be exact and has none in the catalog, first_value,
 * aggregates without an inverse -- makes the flow recompute the changed
 * windows, as before.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/transam.h"
#include "catalog/pg_aggregate.h"
#include "catalog/pg_type.h"
#include "nodes/nodeFuncs.h"
#include "utils/builtins.h"
#include "utils/regproc.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "planner.h"
#include "retract_plan.h"

/* Two agginitval-like text columns of pg_aggregate rows hold the same value. */
static bool
same_initval(HeapTuple a, AttrNumber attr_a, HeapTuple b, AttrNumber attr_b)
{
	bool		null_a;
	bool		null_b;
	Datum		va = SysCacheGetAttr(AGGFNOID, a, attr_a, &null_a);
	Datum		vb = SysCacheGetAttr(AGGFNOID, b, attr_b, &null_b);

	if (null_a || null_b)
		return null_a && null_b;
	return strcmp(TextDatumGetCString(va), TextDatumGetCString(vb)) == 0;
}

/*
 * An aggregate whose normal state is form's moving state and which can
 * combine it: its row (a copy), or NULL.  pg_aggregate is small and this
 * runs when a flow is planned, not per row: a scan is enough.
 */
static HeapTuple
find_moving_twin(Form_pg_aggregate form, HeapTuple tuple)
{
	Relation	rel = table_open(AggregateRelationId, AccessShareLock);
	SysScanDesc scan = systable_beginscan(rel, InvalidOid, false, NULL, 0, NULL);
	HeapTuple	twin;
	HeapTuple	found = NULL;

	while (found == NULL && (twin = systable_getnext(scan)) != NULL)
	{
		Form_pg_aggregate t = (Form_pg_aggregate) GETSTRUCT(twin);

		if (t->aggfnoid >= FirstNormalObjectId ||
			t->aggtransfn != form->aggmtransfn || t->aggtranstype != form->aggmtranstype ||
			!OidIsValid(t->aggcombinefn) || t->aggkind != AGGKIND_NORMAL)
			continue;
		if (t->aggtranstype == INTERNALOID &&
			(!OidIsValid(t->aggserialfn) || !OidIsValid(t->aggdeserialfn)))
			continue;
		/* the twin's row comes from the scan, not the syscache: compare by hand */
		{
			bool		null_t;
			bool		null_m;
			Datum		vt = heap_getattr(twin, Anum_pg_aggregate_agginitval,
										  RelationGetDescr(rel), &null_t);
			Datum		vm = SysCacheGetAttr(AGGFNOID, tuple, Anum_pg_aggregate_aggminitval,
											 &null_m);

			if (null_t != null_m ||
				(!null_t && strcmp(TextDatumGetCString(vt), TextDatumGetCString(vm)) != 0))
				continue;
		}
		found = heap_copytuple(twin);
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return found;
}

void
flow_plan_retraction(FlowAggregate *agg, HeapTuple tuple)
{
	Form_pg_aggregate form = (Form_pg_aggregate) GETSTRUCT(tuple);
	Aggref	   *aggref = agg->aggref;

	agg->retract = FLOW_RETRACT_NONE;
	agg->moving = false;
	agg->sortop = InvalidOid;
	if (aggref->aggkind != AGGKIND_NORMAL || aggref->aggdistinct != NIL ||
		aggref->aggorder != NIL)
		return;

	if (OidIsValid(form->aggminvtransfn))
	{
		if (form->aggmtransfn == form->aggtransfn &&
			form->aggmtranstype == form->aggtranstype &&
			form->aggmfinalfn == form->aggfinalfn &&
			form->aggmfinalextra == form->aggfinalextra &&
			form->aggmfinalmodify == form->aggfinalmodify &&
			same_initval(tuple, Anum_pg_aggregate_agginitval,
						 tuple, Anum_pg_aggregate_aggminitval))
		{
			agg->retract = FLOW_RETRACT_INVERSE;
			return;
		}
		/*
		 * Built-in aggregates only, built-in twins only: a twin found among
		 * user aggregates could come or go with CREATE / DROP AGGREGATE
		 * while writers and the worker hold graphs of the same version.
		 */
		if (form->aggmfinalmodify != AGGMODIFY_READ_WRITE &&
			form->aggfnoid < FirstNormalObjectId)
		{
			HeapTuple	twin = find_moving_twin(form, tuple);

			if (twin != NULL)
			{
				Form_pg_aggregate t = (Form_pg_aggregate) GETSTRUCT(twin);

				agg->transfn = form->aggmtransfn;
				agg->transtype = form->aggmtranstype;
				agg->finalfn = form->aggmfinalfn;
				agg->finalmodify = form->aggmfinalmodify;
				agg->combinefn = t->aggcombinefn;
				agg->serialfn = t->aggserialfn;
				agg->deserialfn = t->aggdeserialfn;
				agg->moving = true;
				agg->retract = FLOW_RETRACT_INVERSE;
				heap_freetuple(twin);
				return;
			}
		}
	}

	/* min/max-like: the state is one of the inputs, ordered by the operator */
	if (OidIsValid(form->aggsortop) && list_length(aggref->args) == 1 &&
		form->aggtranstype == exprType((Node *) linitial_node(TargetEntry, aggref->args)->expr))
	{
		agg->retract = FLOW_RETRACT_EXTREME;
		agg->sortop = form->aggsortop;
	}
}

char *
flow_plan_retract_refusal(FlowPlan *plan)
{
	ListCell   *lc;

	if (!plan->is_aggregate)
		return "a flow without aggregates appends its rows to the sink, which has no key to take one back by";
	foreach(lc, plan->aggregates)
	{
		FlowAggregate *agg = lfirst(lc);

		if (agg->retract == FLOW_RETRACT_NONE)
			return psprintf("aggregate %s has no inverse transition function and no sort operator",
							format_procedure(agg->aggref->aggfnoid));
	}
	return NULL;
}
