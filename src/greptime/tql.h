/*-------------------------------------------------------------------------
 *
 * tql.h
 *	  GreptimeDB's TQL flows, translated into SQL (tql.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLOWPG_TQL_H
#define FLOWPG_TQL_H

/*
 * The SQL query of "TQL EVAL (start, end, step [, lookback]) expr [AS
 * name]"; *name is its value's column.
 */
extern char *tql_translate(const char *tql, List *columns, char **name);

#endif							/* FLOWPG_TQL_H */
