/*-------------------------------------------------------------------------
 *
 * settings.c
 *	  Capture and apply the settings a flow's expressions depend on.
 *
 * Stable functions such as date_trunc() on timestamptz depend on TimeZone;
 * output of numbers and dates depends on DateStyle, IntervalStyle and
 * extra_float_digits.  A flow captures them when it is created, and every
 * process that evaluates the flow applies them with a GUC nest level, the
 * way a function's SET clause does (fmgr_security_definer).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "utils/builtins.h"
#include "utils/guc.h"

#include "settings.h"

static const char *const pinned_settings[] = {
	"TimeZone",
	"DateStyle",
	"IntervalStyle",
	"extra_float_digits",
	"search_path",
};

#define NUM_PINNED_SETTINGS lengthof(pinned_settings)

ArrayType *
flow_settings_capture(void)
{
	Datum		items[NUM_PINNED_SETTINGS];

	for (int i = 0; i < NUM_PINNED_SETTINGS; i++)
	{
		const char *value = GetConfigOption(pinned_settings[i], false, false);

		items[i] = CStringGetTextDatum(psprintf("%s=%s", pinned_settings[i], value));
	}
	return construct_array(items, NUM_PINNED_SETTINGS, TEXTOID, -1, false,
						   TYPALIGN_INT);
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

int
flow_settings_push(ArrayType *settings)
{
	int			nestlevel = NewGUCNestLevel();
	Datum	   *items;
	bool	   *nulls;
	int			nitems;

	deconstruct_array(settings, TEXTOID, -1, false, TYPALIGN_INT,
					  &items, &nulls, &nitems);
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
		if (pg_strcasecmp(item, "search_path") == 0)
			continue;
		apply_setting(item, eq + 1);
	}
	apply_setting("search_path", "pg_catalog, pg_temp");
	return nestlevel;
}

int
settings_push_safe_search_path(void)
{
	int			nestlevel = NewGUCNestLevel();

	apply_setting("search_path", "pg_catalog, pg_temp");
	return nestlevel;
}

void
flow_settings_pop(int nestlevel)
{
	/* false: discard, as after a function with SET clauses fails */
	AtEOXact_GUC(false, nestlevel);
}
