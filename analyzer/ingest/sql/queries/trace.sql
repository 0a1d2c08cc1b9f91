-- include:
-- The opened trace itself: its tables, and what the ingest recorded about itself
-- (ingest/database.py writes captured, ingest_info and source_tables; api.py lists the tables).

-- The trace's tables and views, by name.
-- query: trace_tables
-- @column name: the table's or view's name
-- @column kind: table or view
-- @column rows: rows (estimated; null for a view)
-- @column columns: columns
SELECT table_name AS name, 'table' AS kind, estimated_size AS rows, column_count AS columns
FROM duckdb_tables() WHERE schema_name = 'main' AND NOT temporary
UNION ALL SELECT view_name, 'view', NULL, column_count FROM duckdb_views()
WHERE schema_name = 'main' AND NOT internal AND NOT temporary ORDER BY name;

-- Each public table, and whether the export held the data it is built from.
-- query: trace_captured
-- @column view_name: the table
-- @column captured: whether any of its sources is in the export (always for a settings table)
SELECT view_name, captured FROM captured;

-- The reader that ingested the export.
-- query: trace_reader
-- @column reader: scanner or sqlite3
SELECT reader FROM ingest_info;

-- The export's tables.
-- query: trace_source_tables
-- @column name: an nsys table of the export
SELECT name FROM source_tables;
