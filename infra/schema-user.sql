-- durable-ops schema and database users (docs/design.md §9). Run once per environment as the RDS master user, after
-- infra/rds-mariadb.yml, and again after rotating a password (it is idempotent: it creates what is missing and sets
-- each password to the value given). See infra/RUNBOOK.md "2. The schema and its users".
--
--   { printf "SET @app_password='%s', @migrator_password='%s';\n" "<AppSecret password>" "<MigratorSecret password>"
--     cat infra/schema-user.sql; } | mariadb --host=<InstanceEndpoint> --user=<master user> --password \
--       --ssl --ssl-verify-server-cert --ssl-ca=global-bundle.pem
--
-- Variables (set them in the same session before the script, as above):
--   @app_password, @migrator_password   required: the passwords stored in the AppSecret / MigratorSecret secrets
--   @schema         default durable_ops           the database the application uses (serverless.yml databaseName)
--   @app_user       default durable_ops_app       the user the API, worker and sweeper connect as
--   @migrator_user  default durable_ops_migrator  the user the migrate function connects as
--
-- Least privilege: the application user reads and writes rows and runs the schema's stored procedures (EXECUTE: the
-- one-round-trip steps, docs/design.md §9; they are SQL SECURITY INVOKER, so they run with these same row rights) and
-- nothing else (no DDL, no other schema); the migration user may also change the schema (kysely migrations:
-- CREATE/ALTER/DROP TABLE, CREATE/DROP INDEX, foreign keys, CREATE/DROP TRIGGER, CREATE/DROP PROCEDURE — the triggers
-- that record operation_events run with the migration user's rights, so keep that user; with binary logging on,
-- creating them also needs log_bin_trust_function_creators=1, see RUNBOOK §1).
-- Neither may grant, read other schemas or administer the server. Both connect from any host ('%'): RDS Proxy connects
-- from addresses in its subnets, and the security groups decide who reaches the database at all. Both REQUIRE SSL:
-- the server refuses either in the clear (ERROR 1045, Access denied), as the parameter group's
-- require_secure_transport also does for every user (infra/rds-mariadb.yml); each run sets it again on existing users.
--
-- Names and passwords go through QUOTE() / backtick-escaping in EXECUTE IMMEDIATE, so no value is spliced unescaped.

SET @schema = COALESCE(NULLIF(@schema, ''), 'durable_ops');
SET @app_user = COALESCE(NULLIF(@app_user, ''), 'durable_ops_app');
SET @migrator_user = COALESCE(NULLIF(@migrator_user, ''), 'durable_ops_migrator');

-- Stop here unless both passwords are given (the script never invents or prints one).
EXECUTE IMMEDIATE IF(COALESCE(@app_password, '') <> '' AND COALESCE(@migrator_password, '') <> '', 'DO 0',
  'SIGNAL SQLSTATE ''45000'' SET MESSAGE_TEXT = ''Set @app_password and @migrator_password (the AppSecret and MigratorSecret passwords) first''');

SET @schema_id = CONCAT('`', REPLACE(@schema, '`', '``'), '`');
SET @app_account = CONCAT(QUOTE(@app_user), '@''%''');
SET @migrator_account = CONCAT(QUOTE(@migrator_user), '@''%''');

-- The schema: utf8mb4 with a binary, no-pad collation, as every table declares (migrations/column-types.ts), so
-- idempotency keys and ids compare byte for byte ("Key" and "key" are different keys).
EXECUTE IMMEDIATE CONCAT('CREATE DATABASE IF NOT EXISTS ', @schema_id, ' CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin');

-- The application user: rows, and calling the stored procedures.
EXECUTE IMMEDIATE CONCAT('CREATE USER IF NOT EXISTS ', @app_account, ' IDENTIFIED BY ', QUOTE(@app_password), ' REQUIRE SSL');
EXECUTE IMMEDIATE CONCAT('ALTER USER ', @app_account, ' IDENTIFIED BY ', QUOTE(@app_password), ' REQUIRE SSL');
EXECUTE IMMEDIATE CONCAT('GRANT SELECT, INSERT, UPDATE, DELETE, EXECUTE ON ', @schema_id, '.* TO ', @app_account);

-- The migration user: rows (kysely's migration bookkeeping tables) and schema changes, triggers and procedures included.
EXECUTE IMMEDIATE CONCAT('CREATE USER IF NOT EXISTS ', @migrator_account, ' IDENTIFIED BY ', QUOTE(@migrator_password), ' REQUIRE SSL');
EXECUTE IMMEDIATE CONCAT('ALTER USER ', @migrator_account, ' IDENTIFIED BY ', QUOTE(@migrator_password), ' REQUIRE SSL');
EXECUTE IMMEDIATE CONCAT('GRANT SELECT, INSERT, UPDATE, DELETE, CREATE, ALTER, DROP, INDEX, REFERENCES, TRIGGER, CREATE ROUTINE, ALTER ROUTINE ON ', @schema_id, '.* TO ', @migrator_account);

-- Forget the passwords for the rest of this session.
SET @app_password = NULL, @migrator_password = NULL;
