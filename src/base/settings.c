/*-------------------------------------------------------------------------
 *
 * settings.c
 *	  Capture and apply the settings a flow's expressions depend on.
 *
 * Stable functions depend on settings: date_trunc() on timestamptz on
 * TimeZone, to_tsvector(text) on default_text_search_config, to_char() on
 * the lc_* settings, output of numbers and dates on DateStyle,
 * IntervalStyle and extra_float_digits, SQL functions and their calls on
 * search_path, current_setting() on any custom setting.  A flow captures all
 * of them when it is created, and every process that evaluates the flow
 * applies them with a GUC nest level, the way a function's SET clause does
 * (fmgr_security_definer), so no session's settings change what a flow
 * computes.
 *
 * search_path is the creator's for evaluation -- functions written with
 * unqualified names work as they do for the owner running the query -- but
 * canonical query text is produced and parsed under pg_catalog, pg_temp
 * (flow_settings_push_canonical), so every name in it is qualified and
 * nothing the pinned path holds can take the place of what it names.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/namespace.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_database.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/guc_tables.h"
#include "utils/memutils.h"
#include "utils/syscache.h"
#include "utils/varlena.h"

#include "settings.h"
#include "trust.h"

/* Built-in settings that change what stable functions and their SQL compute. */
static const char *const pinned_settings[] = {
	"TimeZone",
	"DateStyle",
	"IntervalStyle",
	"extra_float_digits",
	"search_path",
	"default_text_search_config",
	"lc_monetary",
	"lc_numeric",
	"lc_time",
	"timezone_abbreviations",
	"bytea_output",
	"xmlbinary",
	"xmloption",
	"array_nulls",
	"quote_all_identifiers",
	"standard_conforming_strings",
	"backslash_quote",
	"transform_null_equals",
};

#define SAFE_SEARCH_PATH "pg_catalog, pg_temp"

/*
 * Extensions' settings and custom placeholders (app.tenant and the like,
 * read by current_setting()), other than flowpg's own: those any role may
 * set, so that every writer can apply them.
 */
static bool
is_pinned_custom_setting(struct config_generic *gconf)
{
	return strchr(gconf->name, '.') != NULL &&
		strncmp(gconf->name, "flowpg.", 7) != 0 &&
		gconf->context == PGC_USERSET;
}

/*
 * The creator's search_path, with pg_temp last when it does not name it:
 * otherwise a writer's temporary tables would come first for the names the
 * flow's functions look up (as for SECURITY DEFINER functions).
 */
static const char *
search_path_with_temp_last(const char *path)
{
	char	   *copy = pstrdup(path);
	List	   *names;
	ListCell   *lc;

	if (!SplitIdentifierString(copy, ',', &names))
		return path;
	foreach(lc, names)
		if (strcmp((char *) lfirst(lc), "pg_temp") == 0)
			return path;
	return psprintf("%s%spg_temp", path, path[0] ? ", " : "");
}

/*
 * Settings that change how values print, not how names or literals parse:
 * canonical text (produced and parsed on any machine) does without them, so
 * a restore elsewhere needs none of the creator's locales.
 */
static bool
only_for_evaluation(const char *name)
{
	return pg_strcasecmp(name, "lc_monetary") == 0 ||
		pg_strcasecmp(name, "lc_numeric") == 0 ||
		pg_strcasecmp(name, "lc_time") == 0;
}

ArrayType *
flow_settings_capture(void)
{
	struct config_generic **gucs = get_guc_variables();
	int			nguc = GetNumConfigOptions();
	Datum	   *items = palloc(sizeof(Datum) * (lengthof(pinned_settings) + nguc));
	int			n = 0;

	for (int i = 0; i < lengthof(pinned_settings); i++)
	{
		const char *value = GetConfigOption(pinned_settings[i], false, false);

		if (strcmp(pinned_settings[i], "search_path") == 0)
			value = search_path_with_temp_last(value);
		items[n++] = CStringGetTextDatum(psprintf("%s=%s", pinned_settings[i], value));
	}
	for (int i = 0; i < nguc; i++)
	{
		const char *value;

		if (!is_pinned_custom_setting(gucs[i]))
			continue;
		value = GetConfigOption(gucs[i]->name, true, false);
		if (value != NULL)
			items[n++] = CStringGetTextDatum(psprintf("%s=%s", gucs[i]->name, value));
	}
	return construct_array(items, n, TEXTOID, -1, false, TYPALIGN_INT);
}

/*
 * One pinned setting, ready for a cheap "has it that value already?": a
 * built-in setting's variable is read directly (its definition never
 * moves), against the pinned value parsed once; a custom one (whose
 * placeholder an extension may replace) is looked up by name.
 */
typedef struct PinnedSetting
{
	char	   *name;
	char	   *value;
	struct config_generic *gconf;	/* built-ins; NULL: by name */
	int			target_int;		/* bool, int and enum settings */
} PinnedSetting;

/*
 * The settings of a flow, parsed.  Writers apply them for every statement:
 * the last few arrays seen are kept parsed, recognized by their bytes.
 */
typedef struct ParsedSettings
{
	ArrayType  *array;			/* a copy, NULL when the slot is unused */
	int			n;
	PinnedSetting *settings;
} ParsedSettings;

#define PARSED_CACHE_SIZE 8

static ParsedSettings parsed_cache[PARSED_CACHE_SIZE];
static int	parsed_next = 0;
static MemoryContext parsed_memory = NULL;

/* Resolves a built-in setting for direct reads; leaves gconf NULL otherwise. */
static void
resolve_builtin(PinnedSetting *ps)
{
	struct config_generic **gucs;
	int			nguc;

	ps->gconf = NULL;
	if (strchr(ps->name, '.') != NULL)
		return;					/* custom: its definition may be replaced */
	gucs = get_guc_variables();
	nguc = GetNumConfigOptions();
	for (int i = 0; i < nguc; i++)
	{
		struct config_generic *g = gucs[i];
		bool		ok = true;

		if (pg_strcasecmp(g->name, ps->name) != 0 || (g->flags & GUC_CUSTOM_PLACEHOLDER))
			continue;
		switch (g->vartype)
		{
			case PGC_BOOL:
				{
					bool		b;

					ok = parse_bool(ps->value, &b);
					ps->target_int = b;
				}
				break;
			case PGC_INT:
				ok = parse_int(ps->value, &ps->target_int, 0, NULL);
				break;
			case PGC_ENUM:
				ok = config_enum_lookup_by_name((struct config_enum *) g, ps->value,
												&ps->target_int);
				break;
			case PGC_STRING:
				break;
			default:
				ok = false;		/* reals: compared as text */
		}
		if (ok)
			ps->gconf = g;
		return;
	}
}

/* Has the setting the pinned value already? */
static bool
has_pinned_value(PinnedSetting *ps)
{
	const char *current;

	if (ps->gconf == NULL)
	{
		current = GetConfigOption(ps->name, true, false);
		return current != NULL && strcmp(current, ps->value) == 0;
	}
	switch (ps->gconf->vartype)
	{
		case PGC_BOOL:
			return *((struct config_bool *) ps->gconf)->variable == (bool) ps->target_int;
		case PGC_INT:
			return *((struct config_int *) ps->gconf)->variable == ps->target_int;
		case PGC_ENUM:
			return *((struct config_enum *) ps->gconf)->variable == ps->target_int;
		default:
			current = *((struct config_string *) ps->gconf)->variable;
			return current != NULL && strcmp(current, ps->value) == 0;
	}
}

static ParsedSettings *
parsed_settings(ArrayType *settings)
{
	Size		size = VARSIZE(settings);
	ParsedSettings *slot;
	MemoryContext old;
	Datum	   *items;
	bool	   *nulls;
	int			nitems;

	for (int i = 0; i < PARSED_CACHE_SIZE; i++)
	{
		slot = &parsed_cache[i];
		if (slot->array && VARSIZE(slot->array) == size &&
			memcmp(slot->array, settings, size) == 0)
			return slot;
	}

	if (parsed_memory == NULL)
		parsed_memory = AllocSetContextCreate(TopMemoryContext, "flowpg settings",
											  ALLOCSET_SMALL_SIZES);
	slot = &parsed_cache[parsed_next];
	parsed_next = (parsed_next + 1) % PARSED_CACHE_SIZE;
	if (slot->array)
	{
		pfree(slot->array);
		for (int i = 0; i < slot->n; i++)
			pfree(slot->settings[i].name);
		pfree(slot->settings);
		slot->array = NULL;
	}

	deconstruct_array(settings, TEXTOID, -1, false, TYPALIGN_INT,
					  &items, &nulls, &nitems);
	old = MemoryContextSwitchTo(parsed_memory);
	slot->settings = palloc0(sizeof(PinnedSetting) * Max(nitems, 1));
	slot->n = 0;
	for (int i = 0; i < nitems; i++)
	{
		char	   *item;
		char	   *eq;

		if (nulls[i])
			continue;
		item = TextDatumGetCString(items[i]);
		eq = strchr(item, '=');
		if (eq == NULL)
			continue;
		*eq = '\0';
		slot->settings[slot->n].name = item;	/* the value follows in the same chunk */
		slot->settings[slot->n].value = eq + 1;
		resolve_builtin(&slot->settings[slot->n]);
		slot->n++;
	}
	slot->array = palloc(size);
	memcpy(slot->array, settings, size);
	MemoryContextSwitchTo(old);
	return slot;
}

/*
 * Sets a setting for the current nest level -- unless it already has that
 * value: writers apply a flow's settings for every statement, and most of
 * them run with the creator's TimeZone, DateStyle and so on already.
 */
static void
apply_setting(const char *name, const char *value)
{
	const char *current = GetConfigOption(name, true, false);

	if (current != NULL && strcmp(current, value) == 0)
		return;
	(void) set_config_option(name, value, PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
}

static int
push(ArrayType *settings, bool canonical)
{
	int			nestlevel = NewGUCNestLevel();
	ParsedSettings *parsed = parsed_settings(settings);

	for (int i = 0; i < parsed->n; i++)
	{
		PinnedSetting *ps = &parsed->settings[i];

		if (canonical && (pg_strcasecmp(ps->name, "search_path") == 0 ||
						  only_for_evaluation(ps->name)))
			continue;
		if (!has_pinned_value(ps))
			(void) set_config_option(ps->name, ps->value, PGC_USERSET, PGC_S_SESSION,
									 GUC_ACTION_SAVE, true, 0, false);
	}
	if (canonical)
		apply_setting("search_path", SAFE_SEARCH_PATH);
	return nestlevel;
}

int
flow_settings_push(ArrayType *settings)
{
	return push(settings, false);
}

int
flow_settings_push_canonical(ArrayType *settings)
{
	return push(settings, true);
}

void
flow_enter(FlowIdentity *id, Oid owner, ArrayType *settings, bool canonical)
{
	GetUserIdAndSecContext(&id->save_userid, &id->save_sec_context);
	SetUserIdAndSecContext(owner, id->save_sec_context | SECURITY_LOCAL_USERID_CHANGE |
						   SECURITY_RESTRICTED_OPERATION);
	id->nestlevel = settings ? push(settings, canonical) : -1;
}

void
flow_leave(FlowIdentity *id)
{
	if (id->nestlevel >= 0)
		flow_settings_pop(id->nestlevel);
	SetUserIdAndSecContext(id->save_userid, id->save_sec_context);
}

int
settings_push_safe_search_path(void)
{
	int			nestlevel = NewGUCNestLevel();

	apply_setting("search_path", SAFE_SEARCH_PATH);
	return nestlevel;
}

void
flow_settings_pop(int nestlevel)
{
	/* false: discard, as after a function with SET clauses fails */
	AtEOXact_GUC(false, nestlevel);
}

/*
 * Is role someone other than the owner, who could put objects in the
 * owner's way?  Only roles that can act as the owner already are not
 * (trust.c): superusers, the owner, its members.
 */
static bool
untrusted_creator(Oid role, Oid owner)
{
	return !trust_role_trusted(role, owner);
}

void
settings_warn_unsafe_search_path(Oid owner)
{
	List	   *path = fetch_search_path(false);
	ListCell   *lc;

	foreach(lc, path)
	{
		Oid			nspid = lfirst_oid(lc);
		HeapTuple	tuple;
		Form_pg_namespace nsp;
		Datum		acldatum;
		bool		isnull;
		char	   *other = NULL;

		if (nspid == PG_CATALOG_NAMESPACE || isTempNamespace(nspid))
			continue;
		tuple = SearchSysCache1(NAMESPACEOID, ObjectIdGetDatum(nspid));
		if (!HeapTupleIsValid(tuple))
			continue;
		nsp = (Form_pg_namespace) GETSTRUCT(tuple);
		{
			Oid			nspowner = nsp->nspowner == ROLE_PG_DATABASE_OWNER ?
				trust_database_owner() : nsp->nspowner;

			if (OidIsValid(nspowner) && untrusted_creator(nspowner, owner))
				other = GetUserNameFromId(nspowner, false);
		}
		acldatum = SysCacheGetAttr(NAMESPACEOID, tuple, Anum_pg_namespace_nspacl, &isnull);
		if (other == NULL && !isnull)
		{
			Acl		   *acl = DatumGetAclP(acldatum);
			AclItem    *items = ACL_DAT(acl);

			for (int i = 0; i < ACL_NUM(acl) && other == NULL; i++)
			{
				Oid			grantee = items[i].ai_grantee;

				if (!(ACLITEM_GET_PRIVS(items[i]) & ACL_CREATE))
					continue;
				if (grantee == ACL_ID_PUBLIC)
					other = "PUBLIC";
				else
				{
					if (grantee == ROLE_PG_DATABASE_OWNER)
						grantee = trust_database_owner();
					if (OidIsValid(grantee) && untrusted_creator(grantee, owner))
						other = GetUserNameFromId(grantee, false);
				}
			}
		}
		if (other)
			ereport(WARNING,
					(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					 errmsg("schema \"%s\" in the flow's search_path lets role %s create objects",
							NameStr(nsp->nspname), other),
					 errdetail("The flow runs with search_path pinned as now, with the rights of its owner: "
							   "a function or operator created there by another role could take the place of one the flow's functions name unqualified."),
					 errhint("Remove the schema from search_path before creating the flow, as for a SECURITY DEFINER function, or revoke CREATE on it.")));
		ReleaseSysCache(tuple);
	}
}
