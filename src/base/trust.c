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
 * Tables carry code of their own that runs whenever the flow writes its
 * sink or reads its sources, whoever added it and whenever: triggers,
 * column defaults and generated columns, CHECK constraints, index
 * expressions and predicates, rules, domain checks, row-level security
 * policies; and a partitioned sink's partitions carry their own.  A table whose owner cannot act as the flow's owner
 * (a group role the owner belongs to: any other member can change it) may
 * carry none of that code (trust_untrusted_table_code); on a table of a
 * trusted owner, the functions its triggers and defaults call must pass
 * the rule as well (a grantee of TRIGGER may have added one).  The
 * policies of a source of an unrelated role are that role's rule over its
 * own rows, which only it can change: applied, as to any reader.  Checked at
 * creation, when such code appears (a WARNING to whoever adds it), and
 * before every run of the flow, in both engines, which then fails naming
 * the object rather than running it.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_index.h"
#include "catalog/pg_database.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"
#include "utils/rel.h"
#include "utils/rls.h"
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

/* "what of table T of role R", for a table's own code */
static char *
table_code(Relation rel, const char *what)
{
	return psprintf("%s of table %s of role %s", what,
					quote_qualified_identifier(get_namespace_name(RelationGetNamespace(rel)),
											   RelationGetRelationName(rel)),
					GetUserNameFromId(rel->rd_rel->relowner, true) ?
					GetUserNameFromId(rel->rd_rel->relowner, true) : "(dropped)");
}

/* Is the function flowpg's own (the sink's guard trigger, say)?  Its schema is flowpg's. */
static bool
flowpg_function(Oid funcid)
{
	Oid			flowpg = get_namespace_oid("flowpg", true);

	return OidIsValid(flowpg) && get_func_namespace(funcid) == flowpg;
}

/* The first untrusted function or type an expression (a node tree's text) calls. */
static char *
untrusted_in_expression(const char *node_text, Oid flow_owner)
{
	TrustWalk	walk = {flow_owner, NULL};

	(void) trust_walker(stringToNode(node_text), &walk);
	return walk.untrusted;
}

/* The triggers that fire for the flow's writes (not PostgreSQL's, not flowpg's). */
static char *
untrusted_triggers(Relation rel, bool owner_trusted, Oid flow_owner)
{
	TrustWalk	walk = {flow_owner, NULL};

	for (int i = 0; rel->trigdesc && i < rel->trigdesc->numtriggers; i++)
	{
		Trigger    *trigger = &rel->trigdesc->triggers[i];

		/* disabled ones never fire for the worker, nor do replica ones */
		if (trigger->tgisinternal || trigger->tgenabled == TRIGGER_DISABLED ||
			trigger->tgenabled == TRIGGER_FIRES_ON_REPLICA || flowpg_function(trigger->tgfoid))
			continue;
		if (!owner_trusted)
			return table_code(rel, psprintf("trigger \"%s\"", trigger->tgname));
		if (object_untrusted(&walk, PROCOID, trigger->tgfoid, NULL) ||
			(trigger->tgqual && (walk.untrusted = untrusted_in_expression(trigger->tgqual, flow_owner))))
			return psprintf("%s (trigger \"%s\" of table %s)", walk.untrusted,
							trigger->tgname, RelationGetRelationName(rel));
	}
	return NULL;
}

/* Domains, defaults of the columns not written and generated columns. */
static char *
untrusted_columns(Relation rel, bool owner_trusted, Oid flow_owner, Bitmapset *written)
{
	TupleDesc	desc = RelationGetDescr(rel);
	TrustWalk	walk = {flow_owner, NULL};

	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);
		bool		runs_default = att->atthasdef && !att->attidentity &&
			(att->attgenerated || !bms_is_member(att->attnum, written));

		if (att->attisdropped)
			continue;
		/* a domain's checks run on every value written */
		if (object_untrusted(&walk, TYPEOID, att->atttypid, NULL))
			return psprintf("%s (column \"%s\" of table %s)", walk.untrusted,
							NameStr(att->attname), RelationGetRelationName(rel));
		if (runs_default && !owner_trusted)
			return table_code(rel, psprintf("%s of column \"%s\"",
											att->attgenerated ? "generation expression" : "default",
											NameStr(att->attname)));
		for (int d = 0; runs_default && desc->constr && d < desc->constr->num_defval; d++)
			if (desc->constr->defval[d].adnum == att->attnum &&
				(walk.untrusted = untrusted_in_expression(desc->constr->defval[d].adbin, flow_owner)))
				return psprintf("%s (default of column \"%s\" of table %s)",
								walk.untrusted, NameStr(att->attname), RelationGetRelationName(rel));
	}
	return NULL;
}

/* CHECK constraints, and indexes that run code: expressions, predicates, exclusion. */
static char *
untrusted_checks_and_indexes(Relation rel, bool owner_trusted, Oid flow_owner)
{
	TupleConstr *constr = RelationGetDescr(rel)->constr;
	ListCell   *lc;
	char	   *untrusted;

	for (int c = 0; constr && c < constr->num_check; c++)
	{
		if (!owner_trusted)
			return table_code(rel, psprintf("check constraint \"%s\"", constr->check[c].ccname));
		if ((untrusted = untrusted_in_expression(constr->check[c].ccbin, flow_owner)))
			return psprintf("%s (check constraint \"%s\" of table %s)", untrusted,
							constr->check[c].ccname, RelationGetRelationName(rel));
	}
	foreach(lc, RelationGetIndexList(rel))
	{
		HeapTuple	tuple = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(lfirst_oid(lc)));
		Form_pg_index index;
		bool		runs_code;
		Datum		exprs[2];
		bool		isnull[2];

		if (!HeapTupleIsValid(tuple))
			continue;
		index = (Form_pg_index) GETSTRUCT(tuple);
		exprs[0] = SysCacheGetAttr(INDEXRELID, tuple, Anum_pg_index_indexprs, &isnull[0]);
		exprs[1] = SysCacheGetAttr(INDEXRELID, tuple, Anum_pg_index_indpred, &isnull[1]);
		runs_code = !isnull[0] || !isnull[1] || index->indisexclusion;
		untrusted = NULL;
		if (runs_code && !owner_trusted)
			untrusted = table_code(rel, psprintf("index %s", get_rel_name(index->indexrelid)));
		for (int e = 0; e < 2 && untrusted == NULL && owner_trusted; e++)
			if (!isnull[e] &&
				(untrusted = untrusted_in_expression(TextDatumGetCString(exprs[e]), flow_owner)))
				untrusted = psprintf("%s (index %s of table %s)", untrusted,
									 get_rel_name(index->indexrelid), RelationGetRelationName(rel));
		ReleaseSysCache(tuple);
		if (untrusted)
			return untrusted;
	}
	return NULL;
}

char *
trust_untrusted_table_code(Oid relid, Oid flow_owner, bool writes, Bitmapset *written)
{
	/* kept until the transaction ends: no code can be added between check and run */
	Relation	rel = table_open(relid, writes ? RowExclusiveLock : AccessShareLock);
	bool		owner_trusted = trust_role_trusted(rel->rd_rel->relowner, flow_owner);
	char	   *untrusted = NULL;

	/*
	 * Policies that apply to the owner, on reads and writes alike, of a
	 * group's table (forced on its members).  Those of a table of another
	 * role are that role's rule over its own rows, applied to every reader
	 * as PostgreSQL applies them; no other role can change them.
	 */
	if (!owner_trusted && is_member_of_role_nosuper(flow_owner, rel->rd_rel->relowner) &&
		check_enable_rls(relid, flow_owner, true) == RLS_ENABLED)
		untrusted = table_code(rel, "row-level security policies");
	if (writes && untrusted == NULL)
		untrusted = untrusted_triggers(rel, owner_trusted, flow_owner);
	if (writes && untrusted == NULL)
		untrusted = untrusted_columns(rel, owner_trusted, flow_owner, written);
	if (writes && untrusted == NULL)
		untrusted = untrusted_checks_and_indexes(rel, owner_trusted, flow_owner);
	/* rules on writes (a table has no SELECT rule) */
	if (writes && untrusted == NULL && !owner_trusted && rel->rd_rules &&
		rel->rd_rules->numLocks > 0)
		untrusted = table_code(rel, "rules");
	table_close(rel, NoLock);
	return untrusted;
}

void
trust_require_table_code(const char *untrusted, const char *flow_name, Oid flow_owner)
{
	if (untrusted == NULL)
		return;
	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("flow \"%s\" will not run %s as its owner %s",
					flow_name, untrusted, GetUserNameFromId(flow_owner, false)),
			 errdetail("The code of the tables a flow writes and reads runs with its owner's rights; "
					   "flowpg runs only code that roles able to act as the owner could have written, "
					   "and any member of a group role can change the group's tables."),
			 errhint("Give the table to the flow's owner (ALTER TABLE ... OWNER TO %s), or remove that code from it.",
					 quote_identifier(GetUserNameFromId(flow_owner, false)))));
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
