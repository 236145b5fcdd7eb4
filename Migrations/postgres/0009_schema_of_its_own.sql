-- jobq's tables live in a schema of their own (`jobq` unless the URL's `schema=` names
-- another), beside the application's tables in one database. The migrator creates the schema,
-- moves a store made before schemas out of `public` into it (every table keeps its rows, its
-- indexes and its sequences), and runs every migration with the schema as its search_path.
--
-- The success function reads and writes the store's tables by their bare names: it keeps the
-- schema it was made in as its search_path, so that it finds them whatever the caller's is.
ALTER FUNCTION jobq_record_successes(
    text, text, double precision, boolean, bigint[], integer[], double precision[], bigint[], integer[], text[],
    double precision[]
) SET search_path FROM CURRENT;
