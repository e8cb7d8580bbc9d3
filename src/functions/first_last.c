/*-------------------------------------------------------------------------
 *
 * first_last.c
 *	  flowpg.first_value_by(value, key) and flowpg.last_value_by(value,
 *	  key): the value of the first or the last row in the order of a key,
 *	  as aggregates that combine (parallel query, streaming flows).
 *
 * They are DataFusion's first_value(value ORDER BY key) and
 * last_value(value ORDER BY key), which GreptimeDB's flows use and which
 * PostgreSQL only has as window functions (dialect.c rewrites GreptimeDB's
 * spelling to them).  The order is the one of
 * ORDER BY key ASC NULLS LAST, value ASC NULLS LAST:
 *	- a NULL value is a value: the chosen row's value is returned even when
 *	  it is NULL (DataFusion's RESPECT NULLS);
 *	- a NULL key sorts after every other key, as in ORDER BY key ASC (so
 *	  last_value_by returns a row with a NULL key when there is one, and
 *	  first_value_by one only when every key is NULL);
 *	- rows with equal keys are ordered by their values (NULL last), so
 *	  first_value_by is (array_agg(value ORDER BY key, value))[1] and
 *	  last_value_by its last element, whatever order the rows come in and
 *	  however partial states are combined.  Values equal under their type's
 *	  ordering but stored differently (numeric 1.0 and 1.00, strings equal
 *	  under a nondeterministic collation), and values of a type without a
 *	  btree ordering, are ordered by their stored bytes: deterministic, but
 *	  no natural order.
 * The key's type needs a default btree operator class.  Comparisons use the
 * collation of the aggregate call.
 *
 * The state (internal) is the chosen row: its value and key, copied and
 * detoasted into the aggregate's memory, with their types; it is
 * serialized as the types' OIDs and the two datums in datumSerialize's
 * format (in-memory bytes: states never leave the cluster).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "nodes/nodeFuncs.h"
#include "nodes/primnodes.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"
#include "utils/typcache.h"

#include "first_last.h"

PG_FUNCTION_INFO_V1(flowpg_first_value_by_trans);
PG_FUNCTION_INFO_V1(flowpg_last_value_by_trans);
PG_FUNCTION_INFO_V1(flowpg_first_value_by_combine);
PG_FUNCTION_INFO_V1(flowpg_last_value_by_combine);
PG_FUNCTION_INFO_V1(flowpg_first_last_serialize);
PG_FUNCTION_INFO_V1(flowpg_first_last_deserialize);
PG_FUNCTION_INFO_V1(flowpg_first_last_final);

/* The chosen row. */
typedef struct FirstLastState
{
	Oid			valtype;
	Oid			keytype;
	Datum		value;
	Datum		key;
	bool		valnull;
	bool		keynull;
} FirstLastState;

/* What comparing and copying need about the two types (fn_extra). */
typedef struct FirstLastTypes
{
	Oid			valtype;
	Oid			keytype;
	Oid			collation;
	int16		vallen;
	int16		keylen;
	bool		valbyval;
	bool		keybyval;
	FmgrInfo   *keycmp;			/* the key's btree comparison */
	FmgrInfo   *valcmp;			/* the value's; NULL: none, bytes decide */
} FirstLastTypes;

static void
check_key_type(Oid keytype, TypeCacheEntry *entry)
{
	if (!OidIsValid(entry->cmp_proc))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_FUNCTION),
				 errmsg("could not identify an ordering operator for type %s",
						format_type_be(keytype)),
				 errdetail("The order key of first_value_by and last_value_by must have a default btree operator class."),
				 errhint("Order by a column of a type that can be sorted, or cast the key to one.")));
}

void
first_last_check_key_type(Oid keytype)
{
	check_key_type(keytype, lookup_type_cache(keytype, TYPECACHE_CMP_PROC_FINFO));
}

/* The types of fn_extra, looked up again when they or the collation change. */
static FirstLastTypes *
types_for(FunctionCallInfo fcinfo, Oid valtype, Oid keytype)
{
	FirstLastTypes *types = (FirstLastTypes *) fcinfo->flinfo->fn_extra;
	Oid			collation = PG_GET_COLLATION();
	TypeCacheEntry *entry;

	if (types != NULL && types->valtype == valtype && types->keytype == keytype &&
		types->collation == collation)
		return types;
	if (types == NULL)
		types = MemoryContextAllocZero(fcinfo->flinfo->fn_mcxt, sizeof(FirstLastTypes));
	types->valtype = valtype;
	types->keytype = keytype;
	types->collation = collation;
	get_typlenbyval(valtype, &types->vallen, &types->valbyval);
	get_typlenbyval(keytype, &types->keylen, &types->keybyval);
	/* typcache entries live as long as the backend */
	entry = lookup_type_cache(keytype, TYPECACHE_CMP_PROC_FINFO);
	check_key_type(keytype, entry);
	types->keycmp = &entry->cmp_proc_finfo;
	entry = lookup_type_cache(valtype, TYPECACHE_CMP_PROC_FINFO);
	types->valcmp = OidIsValid(entry->cmp_proc) ? &entry->cmp_proc_finfo : NULL;
	fcinfo->flinfo->fn_extra = types;
	return types;
}

/* Stored bytes: an order on every value, where the type has none or ties. */
static int
bytes_cmp(Datum a, Datum b, int16 typlen, bool typbyval)
{
	if (typbyval)
		return a < b ? -1 : a > b ? 1 : 0;
	if (typlen == -1)
	{
		struct varlena *va = pg_detoast_datum_packed((struct varlena *) DatumGetPointer(a));
		struct varlena *vb = pg_detoast_datum_packed((struct varlena *) DatumGetPointer(b));
		Size		la = VARSIZE_ANY_EXHDR(va);
		Size		lb = VARSIZE_ANY_EXHDR(vb);
		int			c = memcmp(VARDATA_ANY(va), VARDATA_ANY(vb), Min(la, lb));

		if (c != 0)
			return c < 0 ? -1 : 1;
		return la < lb ? -1 : la > lb ? 1 : 0;
	}
	if (typlen == -2)
	{
		int			c = strcmp(DatumGetCString(a), DatumGetCString(b));

		return c < 0 ? -1 : c > 0 ? 1 : 0;
	}
	{
		int			c = memcmp(DatumGetPointer(a), DatumGetPointer(b), typlen);

		return c < 0 ? -1 : c > 0 ? 1 : 0;
	}
}

/* NULL after everything (ASC NULLS LAST), then the btree order. */
static int
nulls_last_cmp(FmgrInfo *cmp, Oid collation, Datum a, bool anull, Datum b, bool bnull)
{
	if (anull || bnull)
		return anull == bnull ? 0 : anull ? 1 : -1;
	if (cmp == NULL)
		return 0;
	return DatumGetInt32(FunctionCall2Coll(cmp, collation, a, b));
}

/* Row a against row b in the order (key, value, value's bytes). */
static int
row_cmp(FirstLastTypes *types, Datum akey, bool akeynull, Datum aval, bool avalnull,
		Datum bkey, bool bkeynull, Datum bval, bool bvalnull)
{
	int			c = nulls_last_cmp(types->keycmp, types->collation,
								   akey, akeynull, bkey, bkeynull);

	if (c != 0)
		return c;
	c = nulls_last_cmp(types->valcmp, types->collation, aval, avalnull, bval, bvalnull);
	if (c != 0 || avalnull || bvalnull)
		return c;
	return bytes_cmp(aval, bval, types->vallen, types->valbyval);
}

/* A datum copied into the current memory context, detoasted. */
static Datum
copy_datum(Datum value, bool isnull, int16 typlen, bool typbyval)
{
	if (isnull || typbyval)
		return value;
	if (typlen == -1)
		return PointerGetDatum(PG_DETOAST_DATUM_COPY(value));
	return datumCopy(value, typbyval, typlen);
}

static void
free_datum(Datum value, bool isnull, bool typbyval)
{
	if (!isnull && !typbyval)
		pfree(DatumGetPointer(value));
}

/* The state's row becomes (value, key), copied into memory. */
static void
state_set(FirstLastState *state, FirstLastTypes *types, MemoryContext memory,
		  Datum value, bool valnull, Datum key, bool keynull)
{
	MemoryContext old = MemoryContextSwitchTo(memory);
	Datum		newvalue = copy_datum(value, valnull, types->vallen, types->valbyval);
	Datum		newkey = copy_datum(key, keynull, types->keylen, types->keybyval);

	MemoryContextSwitchTo(old);
	free_datum(state->value, state->valnull, types->valbyval);
	free_datum(state->key, state->keynull, types->keybyval);
	state->value = newvalue;
	state->valnull = valnull;
	state->key = newkey;
	state->keynull = keynull;
}

static FirstLastState *
state_create(FirstLastTypes *types, MemoryContext memory,
			 Datum value, bool valnull, Datum key, bool keynull)
{
	FirstLastState *state = MemoryContextAllocZero(memory, sizeof(FirstLastState));

	state->valtype = types->valtype;
	state->keytype = types->keytype;
	state->valnull = state->keynull = true;
	state_set(state, types, memory, value, valnull, key, keynull);
	return state;
}

static MemoryContext
aggregate_memory(FunctionCallInfo fcinfo, const char *name)
{
	MemoryContext memory;

	if (!AggCheckCallContext(fcinfo, &memory))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("%s called in non-aggregate context", name)));
	return memory;
}

/* Does the row (value, key) replace the state's?  last: the greater wins. */
static bool
row_wins(FirstLastTypes *types, FirstLastState *state, bool last,
		 Datum value, bool valnull, Datum key, bool keynull)
{
	int			c = row_cmp(types, key, keynull, value, valnull,
							state->key, state->keynull, state->value, state->valnull);

	return last ? c > 0 : c < 0;
}

static Datum
transition(FunctionCallInfo fcinfo, bool last)
{
	MemoryContext memory = aggregate_memory(fcinfo, last ? "last_value_by" : "first_value_by");
	FirstLastState *state = PG_ARGISNULL(0) ? NULL : (FirstLastState *) PG_GETARG_POINTER(0);
	Datum		value = PG_GETARG_DATUM(1);
	bool		valnull = PG_ARGISNULL(1);
	Datum		key = PG_GETARG_DATUM(2);
	bool		keynull = PG_ARGISNULL(2);
	FirstLastTypes *types;

	if (state == NULL)
	{
		Oid			valtype = get_fn_expr_argtype(fcinfo->flinfo, 1);
		Oid			keytype = get_fn_expr_argtype(fcinfo->flinfo, 2);

		if (!OidIsValid(valtype) || !OidIsValid(keytype))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("could not determine the input types of %s",
							last ? "last_value_by" : "first_value_by")));
		types = types_for(fcinfo, valtype, keytype);
		PG_RETURN_POINTER(state_create(types, memory, value, valnull, key, keynull));
	}
	types = types_for(fcinfo, state->valtype, state->keytype);
	if (row_wins(types, state, last, value, valnull, key, keynull))
		state_set(state, types, memory, value, valnull, key, keynull);
	PG_RETURN_POINTER(state);
}

Datum
flowpg_first_value_by_trans(PG_FUNCTION_ARGS)
{
	return transition(fcinfo, false);
}

Datum
flowpg_last_value_by_trans(PG_FUNCTION_ARGS)
{
	return transition(fcinfo, true);
}

/* The states of two sets of rows: the winner's row, in the aggregate's memory. */
static Datum
combine(FunctionCallInfo fcinfo, bool last)
{
	MemoryContext memory = aggregate_memory(fcinfo, last ? "last_value_by" : "first_value_by");
	FirstLastState *state = PG_ARGISNULL(0) ? NULL : (FirstLastState *) PG_GETARG_POINTER(0);
	FirstLastState *other = PG_ARGISNULL(1) ? NULL : (FirstLastState *) PG_GETARG_POINTER(1);
	FirstLastTypes *types;

	if (other == NULL)
	{
		if (state == NULL)
			PG_RETURN_NULL();
		PG_RETURN_POINTER(state);
	}
	types = types_for(fcinfo, other->valtype, other->keytype);
	if (state == NULL)
		PG_RETURN_POINTER(state_create(types, memory, other->value, other->valnull,
									   other->key, other->keynull));
	if (state->valtype != other->valtype || state->keytype != other->keytype)
		elog(ERROR, "first_value_by/last_value_by states of different types");
	if (row_wins(types, state, last, other->value, other->valnull, other->key, other->keynull))
		state_set(state, types, memory, other->value, other->valnull,
				  other->key, other->keynull);
	PG_RETURN_POINTER(state);
}

Datum
flowpg_first_value_by_combine(PG_FUNCTION_ARGS)
{
	return combine(fcinfo, false);
}

Datum
flowpg_last_value_by_combine(PG_FUNCTION_ARGS)
{
	return combine(fcinfo, true);
}

/* The types' length and passing, for a state read back (fn_extra). */
static void
typlenbyval_cached(FunctionCallInfo fcinfo, Oid valtype, Oid keytype,
				   int16 *vallen, bool *valbyval, int16 *keylen, bool *keybyval)
{
	FirstLastTypes *types = (FirstLastTypes *) fcinfo->flinfo->fn_extra;

	if (types == NULL || types->valtype != valtype || types->keytype != keytype)
	{
		if (types == NULL)
			types = MemoryContextAllocZero(fcinfo->flinfo->fn_mcxt, sizeof(FirstLastTypes));
		types->valtype = valtype;
		types->keytype = keytype;
		get_typlenbyval(valtype, &types->vallen, &types->valbyval);
		get_typlenbyval(keytype, &types->keylen, &types->keybyval);
		fcinfo->flinfo->fn_extra = types;
	}
	*vallen = types->vallen;
	*valbyval = types->valbyval;
	*keylen = types->keylen;
	*keybyval = types->keybyval;
}

/* Layout: valtype, keytype (Oids), then value and key as datumSerialize writes them. */
Datum
flowpg_first_last_serialize(PG_FUNCTION_ARGS)
{
	FirstLastState *state = (FirstLastState *) PG_GETARG_POINTER(0);
	int16		vallen,
				keylen;
	bool		valbyval,
				keybyval;
	Size		size;
	bytea	   *result;
	char	   *cursor;

	(void) aggregate_memory(fcinfo, "first_last_serialize");
	typlenbyval_cached(fcinfo, state->valtype, state->keytype,
					   &vallen, &valbyval, &keylen, &keybyval);
	size = VARHDRSZ + 2 * sizeof(Oid) +
		datumEstimateSpace(state->value, state->valnull, valbyval, vallen) +
		datumEstimateSpace(state->key, state->keynull, keybyval, keylen);
	result = palloc(size);
	SET_VARSIZE(result, size);
	cursor = VARDATA(result);
	memcpy(cursor, &state->valtype, sizeof(Oid));
	cursor += sizeof(Oid);
	memcpy(cursor, &state->keytype, sizeof(Oid));
	cursor += sizeof(Oid);
	datumSerialize(state->value, state->valnull, valbyval, vallen, &cursor);
	datumSerialize(state->key, state->keynull, keybyval, keylen, &cursor);
	Assert(cursor == (char *) result + size);
	PG_RETURN_BYTEA_P(result);
}

/* The state again, in the current memory context. */
Datum
flowpg_first_last_deserialize(PG_FUNCTION_ARGS)
{
	bytea	   *bytes = PG_GETARG_BYTEA_PP(0);
	char	   *cursor = VARDATA_ANY(bytes);
	char	   *end = cursor + VARSIZE_ANY_EXHDR(bytes);
	FirstLastState *state;

	(void) aggregate_memory(fcinfo, "first_last_deserialize");
	if (end - cursor < 2 * (ptrdiff_t) sizeof(Oid))
		elog(ERROR, "first_value_by/last_value_by state too short");
	state = palloc0(sizeof(FirstLastState));
	memcpy(&state->valtype, cursor, sizeof(Oid));
	cursor += sizeof(Oid);
	memcpy(&state->keytype, cursor, sizeof(Oid));
	cursor += sizeof(Oid);
	/* datumRestore copies by-reference datums into the current context */
	state->value = datumRestore(&cursor, &state->valnull);
	state->key = datumRestore(&cursor, &state->keynull);
	if (cursor != end)
		elog(ERROR, "first_value_by/last_value_by state has %d trailing bytes",
			 (int) (end - cursor));
	PG_RETURN_POINTER(state);
}

/* The chosen row's value (NULL when there was no row), a copy. */
Datum
flowpg_first_last_final(PG_FUNCTION_ARGS)
{
	FirstLastState *state = PG_ARGISNULL(0) ? NULL : (FirstLastState *) PG_GETARG_POINTER(0);
	int16		vallen,
				keylen;
	bool		valbyval,
				keybyval;

	(void) aggregate_memory(fcinfo, "first_last_final");
	if (state == NULL || state->valnull)
		PG_RETURN_NULL();
	typlenbyval_cached(fcinfo, state->valtype, state->keytype,
					   &vallen, &valbyval, &keylen, &keybyval);
	PG_RETURN_DATUM(datumCopy(state->value, valbyval, vallen));
}

/*
 * Whether a function is one of these aggregates: flowpg.first_value_by or
 * flowpg.last_value_by (by name, in the extension's schema).
 */
static bool
is_first_last(Oid funcid)
{
	char	   *name = get_func_name(funcid);
	Oid			nsp = get_func_namespace(funcid);
	char	   *nspname = OidIsValid(nsp) ? get_namespace_name(nsp) : NULL;

	return name && nspname && strcmp(nspname, "flowpg") == 0 &&
		(strcmp(name, "first_value_by") == 0 || strcmp(name, "last_value_by") == 0);
}

static void
check_aggregate(Aggref *aggref)
{
	TargetEntry *value;
	TargetEntry *key;
	Oid			keytype;

	if (list_length(aggref->args) != 2 || !is_first_last(aggref->aggfnoid))
		return;
	value = linitial_node(TargetEntry, aggref->args);
	key = lsecond_node(TargetEntry, aggref->args);
	keytype = exprType((Node *) key->expr);
	first_last_check_key_type(keytype);

	/*
	 * A ROW(...) has a type of this backend's only: the worker could not
	 * compare or read it.
	 */
	if (keytype == RECORDOID || exprType((Node *) value->expr) == RECORDOID)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("the value and the order key of %s in a flow cannot be anonymous records",
						get_func_name(aggref->aggfnoid)),
				 errhint("Order by one column; a composite type of its own works.")));
}

static bool
check_walker(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, Aggref))
		check_aggregate((Aggref *) node);
	if (IsA(node, Query))
		return query_tree_walker((Query *) node, check_walker, context, 0);
	return expression_tree_walker(node, check_walker, context);
}

void
first_last_check_query(Query *query)
{
	(void) query_tree_walker(query, check_walker, NULL, 0);
}
