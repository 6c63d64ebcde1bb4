-- PLACEHOLDER, not a migration: issue 16's 0004_runs.sql (branch i16w) takes this number.
-- It stands here only so that this branch's migrations (0005_audit_chain.sql) have no gap
-- while 0004 is unmerged. On merge, take i16w's file and drop this one.
SELECT 1;
