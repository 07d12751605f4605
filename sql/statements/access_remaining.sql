-- sendjobs_revoke (src/access.rs), after a revoke: whether role $1 still holds a privilege
-- granted to it by name on a function or table of schema $2 (the extension's, as quoted
-- text). When none is left, the USAGE on the schema that sendjobs_grant gave goes too.
SELECT EXISTS (SELECT FROM pg_catalog.pg_proc AS p, pg_catalog.aclexplode(p.proacl) AS acl
                WHERE p.pronamespace = $2::pg_catalog.regnamespace AND acl.grantee = $1)
    OR EXISTS (SELECT FROM pg_catalog.pg_class AS c, pg_catalog.aclexplode(c.relacl) AS acl
                WHERE c.relnamespace = $2::pg_catalog.regnamespace AND acl.grantee = $1)
