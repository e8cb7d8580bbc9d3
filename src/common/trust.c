/*-------------------------------------------------------------------------
 *
 * trust.c
 *	  The trust rule for objects a flow meets after its owner created it.
 *
 * A flow evaluates its query -- the functions, casts and operators it
 * resolves to, its aggregates, the policies of its tables, its types'
 * domain checks, the triggers and defaults of its sink -- with its owner's
 * rights.  When the owner creates the flow over objects that exist, the
 * owner vets them, as anyone running a query does.  When flowpg resolves
 * the query by itself later -- a pending flow starting once its tables
 * appear, a flow re-planned by a restore -- the objects may be new, made by
 * anyone.  Their code would then run with rights its author may not have.
 *
 * The rule: such an object is trusted only when its owner can already act
 * as the flow's owner (has_privs_of_role(object owner, flow owner)).  Then
 * running it as the flow's owner gives its author nothing new.  Superusers'
 * objects and the owner's own pass; a table of a group role the owner is a
 * member of does not (another member could have made it), nor anything of
 * an ordinary role under a superuser's flow.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_class.h"
#include "catalog/pg_database.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"
#include "utils/syscache.h"

#include "trust.h"

bool
trust_role_trusted(Oid object_owner, Oid flow_owner)
{
	return has_privs_of_role(object_owner, flow_owner);
}

Oid
trust_database_owner(void)
{
	HeapTuple	tuple = SearchSysCache1(DATABASEOID, ObjectIdGetDatum(MyDatabaseId));
	Oid			owner = InvalidOid;

	if (HeapTupleIsValid(tuple))
	{
		owner = ((Form_pg_database) GETSTRUCT(tuple))->datdba;
		ReleaseSysCache(tuple);
	}
	return owner;
}

typedef struct TrustWalk
{
	Oid			flow_owner;
	char	   *untrusted;		/* the first object refused, described */
} TrustWalk;

/*
 * Is the object (a function, type or relation: its syscache) of a role that
 * cannot act as the flow's owner?  Then it is described in walk->untrusted
 * (what: how a relation is named).
 */
static bool
object_untrusted(TrustWalk *walk, int cacheid, Oid objid, const char *what)
{
	HeapTuple	tuple = SearchSysCache1(cacheid, ObjectIdGetDatum(objid));
	Oid			owner;
	char	   *object;

	if (!HeapTupleIsValid(tuple))
		return false;
	if (cacheid == PROCOID)
		owner = ((Form_pg_proc) GETSTRUCT(tuple))->proowner;
	else if (cacheid == TYPEOID)
		owner = ((Form_pg_type) GETSTRUCT(tuple))->typowner;
	else
		owner = ((Form_pg_class) GETSTRUCT(tuple))->relowner;
	ReleaseSysCache(tuple);
	if (trust_role_trusted(owner, walk->flow_owner))
		return false;
	if (cacheid == PROCOID)
		object = psprintf("function %s", format_procedure(objid));
	else if (cacheid == TYPEOID)
		object = psprintf("type %s", format_type_be(objid));
	else
		object = psprintf("%s %s", what,
						  quote_qualified_identifier(get_namespace_name(get_rel_namespace(objid)),
													 get_rel_name(objid)));
	walk->untrusted = psprintf("%s of role %s", object,
							   GetUserNameFromId(owner, true) ? GetUserNameFromId(owner, true) :
							   "(dropped)");
	return true;
}

static bool
function_checker(Oid funcid, void *context)
{
	return object_untrusted((TrustWalk *) context, PROCOID, funcid, NULL);
}

static bool
trust_walker(Node *node, TrustWalk *walk)
{
	if (node == NULL)
		return false;
	if (IsA(node, RangeTblEntry))
	{
		RangeTblEntry *rte = (RangeTblEntry *) node;

		/* its policies are its owner's code */
		return rte->rtekind == RTE_RELATION &&
			object_untrusted(walk, RELOID, rte->relid, "table");
	}
	if (IsA(node, Query))
		return query_tree_walker((Query *) node, trust_walker, (void *) walk,
								 QTW_EXAMINE_RTES_BEFORE);
	/* functions, operators' functions, casts, types' I/O, aggregates */
	if (check_functions_in_node(node, function_checker, (void *) walk))
		return true;
	/* the types values pass through: a domain's checks are its owner's code */
	if ((IsA(node, Var) || IsA(node, Const) || IsA(node, CoerceToDomain) ||
		 IsA(node, RelabelType) || IsA(node, CoerceViaIO) || IsA(node, ArrayCoerceExpr)) &&
		object_untrusted(walk, TYPEOID, exprType(node), NULL))
		return true;
	return expression_tree_walker(node, trust_walker, (void *) walk);
}

char *
trust_untrusted_in_query(Query *query, Oid flow_owner)
{
	TrustWalk	walk = {flow_owner, NULL};

	(void) trust_walker((Node *) query, &walk);
	return walk.untrusted;
}

char *
trust_untrusted_relation(Oid relid, Oid flow_owner, const char *what)
{
	TrustWalk	walk = {flow_owner, NULL};

	/* a sink's triggers and defaults are its owner's code */
	(void) object_untrusted(&walk, RELOID, relid, what);
	return walk.untrusted;
}

void
trust_require(const char *untrusted, const char *flow_name, Oid flow_owner)
{
	if (untrusted == NULL)
		return;
	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("flow \"%s\" does not trust %s: that role cannot act as the flow's owner %s",
					flow_name, untrusted, GetUserNameFromId(flow_owner, false)),
			 errdetail("A flow started or re-planned by flowpg runs only code whose owners already have its owner's rights: "
					   "superusers, the owner, or members of the owner's role."),
			 errhint("The flow's owner can create the flow again now that the objects exist, vetting them as any query's author does.")));
}
