/*-------------------------------------------------------------------------
 *
 * ddl_events.c
 *	  Keeping flows consistent with DDL on what they use, and with restores.
 *
 * A flow's stored query tree refers to objects by OID and number, so
 * renames never break it.  For everything else flowpg leans on PostgreSQL's
 * own dependency tracking: each flow has a view flowpg_flows.<flow name>
 * over its query, never read, so that
 *
 * - DROP of a source table, a column it reads, a function, type or operator
 *   it uses is refused like for any view ("other objects depend on it"), and
 *   with CASCADE the view goes -- and this module drops the flow with it;
 * - ALTER COLUMN TYPE of a column it reads is refused (ddl_guards.c
 *   refuses it first, naming every flow).
 *
 * The view also depends on the flow's sink table, a dependency flowpg
 * records itself (deps_record_sink; pg_dump does not carry it, so a
 * restore and the update from 0.1 record it again): DROP TABLE of a sink,
 * or DROP SCHEMA of its schema, is refused without CASCADE, and with
 * CASCADE the view goes, and the flow with it.  While such a DROP runs, an
 * error context names the flows and flowpg.drop_flow.
 *
 * The event triggers add what a view cannot express:
 *
 * - A sink dropped without that dependency (a database from pg_upgrade,
 *   which does not carry it either) drops the flows writing it (with a
 *   NOTICE); a dropped dependency view drops its flow.
 * - Dropping or disabling a capture trigger of a source, or an ALTER that
 *   makes a sink unfit (a column dropped, retyped or renamed), is refused.
 * - ALTER TABLE on a source may attach or detach partitions: the flow is
 *   marked dirty as a whole.
 * - After an ALTER, the canonical query text of the flows concerned is
 *   deparsed again, so that pg_dump carries the current names.
 *
 * A partition leaving a sink is ddl_guards.c's.
 *
 * Flows being restored (restore.c) are left alone: pg_restore recreates
 * their triggers itself.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/dependency.h"
#include "catalog/index.h"
#include "catalog/indexing.h"
#include "catalog/namespace.h"
#include "catalog/pg_depend.h"
#include "catalog/partition.h"
#include "catalog/pg_inherits.h"
#include "catalog/objectaddress.h"
#include "catalog/pg_policy.h"
#include "catalog/pg_rewrite.h"
#include "catalog/pg_trigger.h"
#include "catalog/pg_type.h"
#include "commands/event_trigger.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "storage/lock.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "backfill.h"
#include "capture.h"
#include "dirty_log.h"
#include "catalog.h"
#include "privileged.h"
#include "ddl_events.h"
#include "ddl_guards.h"
#include "ddl_suspend.h"
#include "flow_deps.h"
#include "flow_drop.h"
#include "planner.h"
#include "settings.h"
#include "sink.h"
#include "stats.h"
#include "subxact.h"
#include "trust.h"
#include "pool.h"

PG_FUNCTION_INFO_V1(flowpg_on_sql_drop);
PG_FUNCTION_INFO_V1(flowpg_on_ddl_command_end);

/* Drops a flow, and what served it alone, because something it needs went. */
static void
drop_flow_for(FlowEntry *entry, const char *why)
{
	ereport(NOTICE,
			(errmsg("drop cascades to flow %s", entry->flow_name),
			 errdetail("%s", why)));
	flow_remove(entry);
}

/* One pg_class object an event touched. */
typedef struct TouchedObject
{
	Oid			objid;
	int			objsubid;
	char	   *object_type;
	char	   *identity;
	char	   *schema;
	char	   *name;
	bool		original;		/* named by the command, not dropped along */
	Oid			table;			/* for a trigger: its table, if it still exists */
	bool		is_relation;	/* a pg_class object (objid is the table) */
} TouchedObject;

/*
 * The table of a trigger, policy, rule or index just made, InvalidOid for
 * other objects.  Read from the catalogs as they are now: the event trigger's
 * snapshot may be older than the command.
 */
static Oid
table_of_object(Oid classid, Oid objid)
{
	AttrNumber	table_column;
	Relation	catalog;
	HeapTuple	tuple;
	Oid			table = InvalidOid;

	if (classid == RelationRelationId)
	{
		char		relkind = get_rel_relkind(objid);

		return relkind == RELKIND_INDEX || relkind == RELKIND_PARTITIONED_INDEX ?
			IndexGetRelation(objid, true) : InvalidOid;
	}
	if (classid == TriggerRelationId)
		table_column = Anum_pg_trigger_tgrelid;
	else if (classid == PolicyRelationId)
		table_column = Anum_pg_policy_polrelid;
	else if (classid == RewriteRelationId)
		table_column = Anum_pg_rewrite_ev_class;
	else
		return InvalidOid;
	catalog = table_open(classid, AccessShareLock);
	tuple = get_catalog_object_by_oid(catalog, get_object_attnum_oid(classid), objid);
	if (HeapTupleIsValid(tuple))
	{
		bool		isnull;
		Datum		value = heap_getattr(tuple, table_column, RelationGetDescr(catalog), &isnull);

		if (!isnull)
			table = DatumGetObjectId(value);
	}
	table_close(catalog, AccessShareLock);
	return table;
}

/* Reads pg_event_trigger_dropped_objects() / _ddl_commands(). */
static List *
touched_objects(bool dropped)
{
	List	   *result = NIL;
	MemoryContext caller = CurrentMemoryContext;
	int			nestlevel = settings_push_safe_search_path();
	const char *sql = dropped ?
		"SELECT classid, objid, objsubid, object_type, object_identity, schema_name, "
		"address_names[pg_catalog.array_upper(address_names, 1)], original, "
		"CASE WHEN object_type = 'trigger' THEN pg_catalog.to_regclass("
		"pg_catalog.quote_ident(address_names[1]) OPERATOR(pg_catalog.||) '.' "
		"OPERATOR(pg_catalog.||) pg_catalog.quote_ident(address_names[2]))::pg_catalog.oid END "
		"FROM pg_catalog.pg_event_trigger_dropped_objects()" :
		"SELECT classid, objid, objsubid, object_type, object_identity, schema_name, NULL, true, NULL::pg_catalog.oid "
		"FROM pg_catalog.pg_event_trigger_ddl_commands()";

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute(sql, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "reading the event trigger's objects failed");
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		HeapTuple	tuple = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		MemoryContext old;
		TouchedObject *obj;
		bool		isnull;
		Oid			classid = DatumGetObjectId(SPI_getbinval(tuple, desc, 1, &isnull));

		if (dropped && classid != RelationRelationId && classid != TriggerRelationId)
			continue;
		old = MemoryContextSwitchTo(caller);
		obj = palloc0(sizeof(TouchedObject));
		obj->is_relation = classid == RelationRelationId;
		obj->objid = DatumGetObjectId(SPI_getbinval(tuple, desc, 2, &isnull));
		obj->objsubid = DatumGetInt32(SPI_getbinval(tuple, desc, 3, &isnull));
		obj->object_type = SPI_getvalue(tuple, desc, 4);
		obj->identity = SPI_getvalue(tuple, desc, 5);
		obj->schema = SPI_getvalue(tuple, desc, 6);
		obj->name = SPI_getvalue(tuple, desc, 7);
		obj->original = DatumGetBool(SPI_getbinval(tuple, desc, 8, &isnull));
		obj->table = DatumGetObjectId(SPI_getbinval(tuple, desc, 9, &isnull));
		if (isnull)
			obj->table = InvalidOid;
		if (!dropped)
			obj->table = table_of_object(classid, obj->objid);
		result = lappend(result, obj);
		MemoryContextSwitchTo(old);
	}
	SPI_finish();
	flow_settings_pop(nestlevel);
	return result;
}

/* The relation of the dropped objects that has that OID, if any. */
static TouchedObject *
find_dropped(List *dropped, Oid relid)
{
	ListCell   *lc;

	foreach(lc, dropped)
	{
		TouchedObject *obj = lfirst(lc);

		if (obj->is_relation && obj->objid == relid && obj->objsubid == 0)
			return obj;
	}
	return NULL;
}

/*
 * A flow writes its sink by a unique index on the group key: without it
 * upserts fail and refreshes duplicate rows.  Errors out when the sink
 * would have none besides except_index (InvalidOid: the indexes it has).
 */
static void
refuse_losing_key_index(FlowEntry *entry, const char *index_name, Oid except_index)
{
	if (get_rel_name(entry->sink_relid) == NULL)
		return;					/* the sink goes too, and the flow with it */
	if (!entry->is_aggregate)
	{
		/*
		 * A projection keeps one row per key of the sink's unique index
		 * (sink_projection_key): without that index its rows are kept by
		 * another key, or appended -- recompute the sink by that rule.
		 */
		dirty_log_append(entry->flow_id, true, 0, 0, 0);
		return;
	}
	if (!sink_has_key_index(entry->sink_relid, flow_plan_for_entry(entry), except_index))
		ereport(ERROR,
				(errcode(ERRCODE_DEPENDENT_OBJECTS_STILL_EXIST),
				 errmsg("cannot drop index %s: flow \"%s\" writes its sink %s by it",
						index_name, entry->flow_name, get_rel_name(entry->sink_relid)),
				 errdetail("A flow's sink needs a unique index on its group key columns."),
				 errhint("Create another such index first, or drop the flow.")));
}

/*
 * After DROP INDEX, or the drop of a constraint with its index: the sinks
 * concerned are those the command locked exclusively (dropping an index
 * takes its table's AccessExclusiveLock).  Flows being restored have no
 * index yet.
 */
static void
check_sink_indexes(List *dropped_indexes)
{
	ListCell   *lc;

	foreach(lc, catalog_get_all())
	{
		FlowEntry  *entry = lfirst(lc);
		LOCKTAG		tag;

		SET_LOCKTAG_RELATION(tag, MyDatabaseId, entry->sink_relid);
		if (strcmp(entry->state, "restoring") != 0 && LockHeldByMe(&tag, AccessExclusiveLock))
			refuse_losing_key_index(entry, linitial(dropped_indexes), InvalidOid);
	}
}

/* The table a DROP or ALTER TABLE names, if it exists. */
static Oid
named_table(List *names_or_null, RangeVar *rv)
{
	if (rv == NULL)
		rv = makeRangeVarFromNameList(names_or_null);
	return RangeVarGetRelid(rv, NoLock, true);
}

/* A line of ddl_drop_context: the flow, its sink, the ways to drop them. */
static char *
drop_context_line(FlowEntry *entry, const char *dropped_kind)
{
	return psprintf("flow \"%s\" writes table %s: drop the flow with flowpg.drop_flow(%s), or the %s with CASCADE to drop the flow too",
					entry->flow_name,
					quote_qualified_identifier(get_namespace_name(get_rel_namespace(entry->sink_relid)),
											   get_rel_name(entry->sink_relid)),
					quote_literal_cstr(quote_identifier(entry->flow_name)),
					dropped_kind);
}

/* Is this trigger flowpg's own, on a table one of its flows uses? */
static bool
trigger_in_use(Oid relid, const char *tgname)
{
	return OidIsValid(relid) && capture_is_flowpg_trigger(relid, tgname) &&
		(capture_table_has_flows(relid) || catalog_get_by_sink(relid) != NULL);
}

/*
 * flowpg finds its triggers by name and checks their states by name: they
 * may be neither renamed, dropped (whatever they are called) nor replaced.
 */
static void
refuse_trigger_change(Oid relid, const char *tgname, const char *what)
{
	if (trigger_in_use(relid, tgname))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("cannot %s trigger %s on table %s: %s",
						what, tgname, get_rel_name(relid),
						sink_is_guard(tgname) ? "flowpg recomputes the sink when it is truncated" :
						"flowpg captures changes with it"),
				 errhint("Drop the flows that use the table first.")));
}

void
ddl_before_utility(Node *stmt)
{
	ListCell   *lc;

	/* every utility statement of every database passes here: look at few */
	if (!IsA(stmt, RenameStmt) && !IsA(stmt, CreateTrigStmt) && !IsA(stmt, DropStmt) &&
		!IsA(stmt, AlterTableStmt) && !IsA(stmt, IndexStmt) && !IsA(stmt, TruncateStmt))
		return;
	if (!IsTransactionState() || privileged_own_ddl || !catalog_exists())
		return;

	if (IsA(stmt, DropStmt) && ((DropStmt *) stmt)->removeType == OBJECT_EXTENSION)
	{
		ddl_refuse_drop_extension((DropStmt *) stmt);
		return;
	}
	if (IsA(stmt, TruncateStmt))
	{
		foreach(lc, ((TruncateStmt *) stmt)->relations)
			ddl_sink_partition_leaves(named_table(NIL, lfirst_node(RangeVar, lc)), "TRUNCATE");
		return;
	}

	if (IsA(stmt, RenameStmt) && ((RenameStmt *) stmt)->renameType == OBJECT_TRIGGER)
	{
		RenameStmt *rename = (RenameStmt *) stmt;

		refuse_trigger_change(named_table(NIL, rename->relation), rename->subname, "rename");
		return;
	}
	if (IsA(stmt, CreateTrigStmt) && ((CreateTrigStmt *) stmt)->replace)
	{
		CreateTrigStmt *create = (CreateTrigStmt *) stmt;

		refuse_trigger_change(named_table(NIL, create->relation), create->trigname, "replace");
		return;
	}
	/*
	 * A unique index made on a projection's sink may become its key: its
	 * columns' casts and collations must keep keys apart, as at creation.
	 * Checked before (CONCURRENTLY commits early, and ddl_command_end does
	 * not see CREATE INDEX).
	 */
	if (IsA(stmt, IndexStmt) && ((IndexStmt *) stmt)->unique &&
		((IndexStmt *) stmt)->whereClause == NULL && !((IndexStmt *) stmt)->deferrable)
	{
		IndexStmt  *index = (IndexStmt *) stmt;
		Oid			relid = named_table(NIL, index->relation);
		FlowEntry  *entry = OidIsValid(relid) ? catalog_get_by_sink(relid) : NULL;

		if (entry && !entry->is_aggregate)
		{
			int			nestlevel = flow_settings_push(entry->settings);

			sink_check_index_columns(relid, flow_plan_for_entry(entry), index->indexParams);
			flow_settings_pop(nestlevel);
		}
		return;
	}
	if (IsA(stmt, DropStmt) && ((DropStmt *) stmt)->removeType == OBJECT_TRIGGER)
	{
		foreach(lc, ((DropStmt *) stmt)->objects)
		{
			List	   *names = (List *) lfirst(lc);
			List	   *relname = list_truncate(list_copy(names), list_length(names) - 1);

			refuse_trigger_change(named_table(relname, NULL), strVal(llast(names)), "drop");
		}
		return;
	}

	if (IsA(stmt, DropStmt) &&
		(((DropStmt *) stmt)->removeType == OBJECT_INDEX ||
		 ((DropStmt *) stmt)->removeType == OBJECT_TABLE))
	{
		DropStmt   *drop = (DropStmt *) stmt;

		foreach(lc, drop->objects)
		{
			Oid			relid = named_table((List *) lfirst(lc), NULL);

			if (!OidIsValid(relid))
				continue;

			/*
			 * DROP INDEX CONCURRENTLY commits before sql_drop fires, and an
			 * error there would leave the index invalid: check first.
			 */
			if (drop->removeType == OBJECT_INDEX && drop->concurrent)
			{
				Oid			table = IndexGetRelation(relid, true);
				FlowEntry  *entry = OidIsValid(table) ? catalog_get_by_sink(table) : NULL;

				if (entry)
					refuse_losing_key_index(entry, NameListToString((List *) lfirst(lc)), relid);
			}

			/*
			 * A dropped partition or inheritance child takes its rows out of
			 * the flows over its ancestors (in this transaction: a DROP that
			 * fails takes the entries back).
			 */
			/* GreptimeDB's flows over the table become pending (ddl_suspend.c) */
			if (drop->removeType == OBJECT_TABLE)
				ddl_suspend_flows(relid);
			if (drop->removeType == OBJECT_TABLE && capture_has_triggers(relid))
				capture_log_inherited(relid);
			if (drop->removeType == OBJECT_TABLE)
				ddl_sink_partition_leaves(relid, "DROP");
		}
	}
	else if (IsA(stmt, AlterTableStmt))
	{
		AlterTableStmt *alter = (AlterTableStmt *) stmt;

		foreach(lc, alter->cmds)
		{
			AlterTableCmd *cmd = lfirst_node(AlterTableCmd, lc);
			Oid			relid;

			/* as PostgreSQL would for a view, but naming every flow, with the way out */
			if (cmd->subtype == AT_AlterColumnType)
				ddl_refuse_column_retype(named_table(NIL, alter->relation), cmd->name);
			/* a partition detached from a sink, or from a sink's partition */
			if (cmd->subtype == AT_DetachPartition)
				ddl_sink_partition_leaves(named_table(NIL, ((PartitionCmd *) cmd->def)->name),
									  "DETACH");
			/* NO INHERIT: the child's rows leave its former ancestors' flows */
			if (cmd->subtype != AT_DropInherit)
				continue;
			relid = named_table(NIL, alter->relation);
			if (OidIsValid(relid) && capture_has_triggers(relid))
				capture_log_inherited(relid);
		}
	}
}

/*
 * What PostgreSQL's "cannot drop ... because other objects depend on it"
 * cannot say about a DROP TABLE of a sink or DROP SCHEMA of its schema:
 * that the view it names is a flow's, and how to drop the flow.
 */
List *
ddl_drop_context(Node *stmt)
{
	DropStmt   *drop = (DropStmt *) stmt;
	List	   *lines = NIL;
	ListCell   *lc;

	if (!IsA(stmt, DropStmt) || drop->behavior == DROP_CASCADE ||
		(drop->removeType != OBJECT_TABLE && drop->removeType != OBJECT_SCHEMA))
		return NIL;
	if (!IsTransactionState() || privileged_own_ddl || !catalog_exists())
		return NIL;
	foreach(lc, drop->objects)
	{
		Oid			nspid;
		ListCell   *lc2;

		if (drop->removeType == OBJECT_TABLE)
		{
			Oid			relid = named_table((List *) lfirst(lc), NULL);
			FlowEntry  *entry = OidIsValid(relid) ? catalog_get_by_sink(relid) : NULL;

			if (entry)
				lines = lappend(lines, drop_context_line(entry, "table"));
			continue;
		}
		nspid = get_namespace_oid(strVal(lfirst(lc)), true);
		if (!OidIsValid(nspid))
			continue;
		foreach(lc2, catalog_get_all())
		{
			FlowEntry  *entry = lfirst(lc2);

			if (get_rel_namespace(entry->sink_relid) == nspid)
				lines = lappend(lines, drop_context_line(entry, "schema"));
		}
	}
	return lines;
}

void
ddl_drop_context_callback(void *arg)
{
	ListCell   *lc;

	if (geterrcode() != ERRCODE_DEPENDENT_OBJECTS_STILL_EXIST)
		return;
	foreach(lc, (List *) arg)
		errcontext("%s", (char *) lfirst(lc));
}

Datum
flowpg_on_sql_drop(PG_FUNCTION_ARGS)
{
	ListCell   *lc;
	List	   *dropped;
	List	   *dropped_indexes = NIL;

	if (!CALLED_AS_EVENT_TRIGGER(fcinfo))
		elog(ERROR, "flowpg_on_sql_drop must be called as an event trigger");
	if (!catalog_exists() || privileged_own_ddl)
		PG_RETURN_VOID();		/* flowpg itself is being dropped, or dropping */

	dropped = touched_objects(true);
	foreach(lc, dropped)
	{
		TouchedObject *obj = lfirst(lc);
		ListCell   *lc2;

		if (obj->objsubid != 0)
			continue;			/* columns: the dependency views guard them */
		if (strcmp(obj->object_type, "trigger") == 0)
		{
			/* a capture trigger: only with its table, or when no flow needs it */
			if (obj->original && obj->name &&
				strncmp(obj->name, "flowpg_capture_", 15) == 0 &&
				OidIsValid(obj->table) && capture_table_has_flows(obj->table))
				ereport(ERROR,
						(errcode(ERRCODE_DEPENDENT_OBJECTS_STILL_EXIST),
						 errmsg("cannot drop trigger %s: flows capture changes with it",
								obj->identity),
						 errhint("Drop the flows that read the table first.")));
			if (obj->original && obj->name && sink_is_guard(obj->name) &&
				OidIsValid(obj->table) && catalog_get_by_sink(obj->table) != NULL)
				ereport(ERROR,
						(errcode(ERRCODE_DEPENDENT_OBJECTS_STILL_EXIST),
						 errmsg("cannot drop trigger %s: flow \"%s\" recomputes its sink when it is truncated",
								obj->identity, catalog_get_by_sink(obj->table)->flow_name),
						 errhint("Drop the flow first.")));
			continue;
		}
		if (strcmp(obj->object_type, "index") == 0)
		{
			dropped_indexes = lappend(dropped_indexes, obj->identity);
			continue;
		}
		if (strcmp(obj->object_type, "view") == 0)
		{
			FlowEntry  *entry = catalog_get_by_deps_view(obj->objid);
			TouchedObject *sink = entry ? find_dropped(dropped, entry->sink_relid) : NULL;

			/* DROP TABLE sink CASCADE takes the view, by its dependency on the sink */
			if (sink)
				drop_flow_for(entry, psprintf("Table %s was the flow's sink.", sink->identity));
			else if (entry)
				drop_flow_for(entry, psprintf("The flow used %s, which was dropped.",
											  "an object"));
			continue;
		}
		if (strcmp(obj->object_type, "table") != 0)
			continue;
		foreach(lc2, catalog_get_by_relation(obj->objid))
		{
			FlowEntry  *entry = lfirst(lc2);

			drop_flow_for(entry, psprintf("Table %s was the flow's %s.", obj->identity,
										  entry->sink_relid == obj->objid ? "sink" : "source"));
		}
	}
	if (dropped_indexes != NIL)
		check_sink_indexes(dropped_indexes);
	PG_RETURN_VOID();
}

static const char *
trigger_state_name(char state)
{
	switch (state)
	{
		case TRIGGER_FIRES_ON_ORIGIN:
			return "enabled";
		case TRIGGER_FIRES_ALWAYS:
			return "enabled always";
		case TRIGGER_FIRES_ON_REPLICA:
			return "enabled for replicas";
		default:
			return "disabled";
	}
}

/*
 * A capture trigger of a source keeps the state flowpg gave it: disabling
 * it, or firing it for other sessions, would lose changes or count them
 * twice.  (One that is not there yet is being restored by pg_restore, which
 * creates them one by one; dropping them is refused in sql_drop.)
 */
static void
check_capture_triggers(Oid relid, const char *flow_name)
{
	Relation	rel = table_open(relid, AccessShareLock);
	TriggerDesc *triggers = rel->trigdesc;

	for (int i = 0; triggers && i < triggers->numtriggers; i++)
	{
		Trigger    *trigger = &triggers->triggers[i];
		char		state = capture_trigger_state(trigger->tgname);
		bool		guard = sink_is_guard(trigger->tgname);

		if (guard)
			state = TRIGGER_FIRES_ALWAYS;
		if (state != '\0' && trigger->tgenabled != state)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("trigger %s on table %s must stay %s: flow \"%s\" %s",
							trigger->tgname, RelationGetRelationName(rel),
							trigger_state_name(state), flow_name,
							guard ? "recomputes its sink when it is truncated" :
							"captures changes with it")));
	}
	table_close(rel, AccessShareLock);
}

/*
 * Code added to a table a flow writes or reads (a trigger, default, rule,
 * policy) that the flow will not run (trust.c): whoever added it is told
 * now; the flow fails at its next run, naming it.  Looking never fails
 * the DDL: a subtransaction keeps any error of it away.
 */
typedef struct CodeCheck
{
	FlowEntry  *entry;
	char	   *untrusted;
} CodeCheck;

static void
find_untrusted_code(void *arg)
{
	CodeCheck  *check = (CodeCheck *) arg;
	FlowEntry  *entry = check->entry;
	int			nestlevel = flow_settings_push(entry->settings);

	check->untrusted = sink_untrusted_code(entry->sink_relid,
										   flow_plan_query_tree(stringToNode(entry->query_tree),
																entry->window_output),
										   entry->owner, true);
	flow_settings_pop(nestlevel);
}

static void
warn_untrusted_code(FlowEntry *entry, Oid relid)
{
	CodeCheck	check = {entry, NULL};
	ErrorData  *edata;

	if (relid != entry->sink_relid && !list_member_oid(entry->source_relids, relid))
		return;
	edata = subxact_run(find_untrusted_code, &check);
	if (edata)
		FreeErrorData(edata);
	else if (check.untrusted)
		ereport(WARNING,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("flow \"%s\" will fail rather than run %s as its owner %s",
						entry->flow_name, check.untrusted, GetUserNameFromId(entry->owner, false)),
				 errdetail("The code of the tables a flow writes and reads runs with its owner's rights; "
						   "flowpg runs only code that roles able to act as the owner could have written."),
				 errhint("Remove that code, or give the table to the flow's owner.")));
}

static void
flow_context_callback(void *arg)
{
	errcontext("flow \"%s\" depends on this table", ((FlowEntry *) arg)->flow_name);
}

Datum
flowpg_on_ddl_command_end(PG_FUNCTION_ARGS)
{
	List	   *altered;
	ListCell   *lc;
	bool		sweep;

	if (!CALLED_AS_EVENT_TRIGGER(fcinfo))
		elog(ERROR, "flowpg_on_ddl_command_end must be called as an event trigger");
	if (!catalog_exists() || privileged_own_ddl)
		PG_RETURN_VOID();

	altered = touched_objects(false);
	sweep = false;
	foreach(lc, catalog_get_all())
	{
		FlowEntry  *entry = lfirst(lc);
		Query	   *query;
		bool		concerned = false;
		ListCell   *lc2;
		char	   *text;

		/* pg_restore is rebuilding its triggers: see restore.c */
		if (strcmp(entry->state, "restoring") == 0)
			continue;
		query = stringToNode(entry->query_tree);

		foreach(lc2, altered)
		{
			TouchedObject *obj = lfirst(lc2);
			ErrorContextCallback callback;

			if (!obj->is_relation)
			{
				concerned = true;	/* a schema, function, type: names may change */
				/* a trigger, policy or rule of a table */
				if (OidIsValid(obj->table))
					warn_untrusted_code(entry, obj->table);
				continue;
			}
			if (OidIsValid(obj->table))
			{
				warn_untrusted_code(entry, obj->table); /* an index */
				continue;
			}
			warn_untrusted_code(entry, obj->objid);
			if (obj->objid == entry->sink_relid)
			{
				concerned = true;
				callback.callback = flow_context_callback;
				callback.arg = entry;
				callback.previous = error_context_stack;
				error_context_stack = &callback;
				{
					/* key casts may depend on the flow's pinned TimeZone */
					int			nestlevel = flow_settings_push(entry->settings);

					sink_check_columns(entry->sink_relid,
									   flow_plan_query_tree(query, entry->window_output));
					flow_settings_pop(nestlevel);
				}
				error_context_stack = callback.previous;
				check_capture_triggers(entry->sink_relid, entry->flow_name);
				sink_check_owner(entry->sink_relid, entry->owner);	/* ALTER ... OWNER TO */
			}
			if (list_member_oid(entry->source_relids, obj->objid))
			{
				concerned = true;
				check_capture_triggers(obj->objid, entry->flow_name);
				/* partitions may have come or gone: recompute it all */
				if (get_rel_relkind(obj->objid) == RELKIND_PARTITIONED_TABLE)
				{
					capture_install(obj->objid);
					dirty_log_append(entry->flow_id, true, 0, 0, 0);
					capture_sweep();	/* a detached partition's triggers */
				}
				else
					capture_install(obj->objid);	/* a parent it may have gained (INHERIT) */
			}
			else
			{
				/*
				 * A new descendant of a source (CREATE TABLE ... PARTITION
				 * OF, or ... INHERITS, ALTER TABLE ... INHERIT) is captured
				 * from now on; rows a table brings into an inheritance tree
				 * are recomputed.  One that left a tree (NO INHERIT) keeps
				 * its triggers until swept, and the flows of trees that
				 * have children recompute.
				 */
				ListCell   *lc3;
				bool		descendant = false;

				/*
				 * A table that became a parent of a source (ATTACH
				 * PARTITION): statements naming it reach the source's
				 * rows, so it captures them too.
				 */
				foreach(lc3, entry->source_relids)
					if (list_member_oid(capture_ancestors(lfirst_oid(lc3)), obj->objid))
					{
						concerned = true;
						capture_install(lfirst_oid(lc3));
					}
				foreach(lc3, capture_ancestors(obj->objid))
					if (list_member_oid(entry->source_relids, lfirst_oid(lc3)) &&
						flow_plan_reads_descendants(query, lfirst_oid(lc3)))
						descendant = true;
				if (descendant)
				{
					ListCell   *lc4;

					check_capture_triggers(obj->objid, entry->flow_name);
					capture_install(obj->objid);
					if (!get_rel_relispartition(obj->objid))
						dirty_log_append(entry->flow_id, true, 0, 0, 0);
					/* its own descendants now feed this flow too: drop caches */
					foreach(lc4, find_all_inheritors(obj->objid, NoLock, NULL))
						CacheInvalidateRelcacheByRelid(lfirst_oid(lc4));
				}
				else if (capture_has_triggers(obj->objid) &&
						 !capture_table_has_flows(obj->objid))
					sweep = true;	/* left its tree (logged before: ddl_before_utility) */
			}
		}
		if (!concerned)
			continue;
		text = flow_plan_deparse(query, entry->settings, entry->owner);
		if (strcmp(text, entry->query) != 0)
			catalog_update_query_text(entry->flow_id, text);
	}
	if (sweep)
		capture_sweep();
	PG_RETURN_VOID();
}
