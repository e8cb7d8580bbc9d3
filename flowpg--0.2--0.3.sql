/* flowpg--0.2--0.3.sql: ALTER EXTENSION flowpg UPDATE from 0.2. */

\echo Use "ALTER EXTENSION flowpg UPDATE TO '0.3'" to load this file. \quit

/*
 * There is no flowpg--0.3.sql: CREATE EXTENSION flowpg installs 0.2's
 * script and this one after it, so a fresh install and an updated one run
 * the same statements for what 0.3 adds.
 *
 * 0.3: GreptimeDB fidelity, part two (issue 22).
 */

/*
 * Recording rules (flows grouping by now(), src/batch.c): the time their
 * query was last evaluated at, which verify_flow checks the sink against.
 */
ALTER TABLE flowpg.flow_run ADD COLUMN last_tick timestamptz;
