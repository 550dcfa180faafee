import { sql } from 'kysely';
import { createConnection, type Connection } from 'mysql2/promise';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { parseDocument } from 'yaml';
import { migrateToLatest } from '../../lib/db/migrate.js';
import { openStore } from '../../lib/db/store.js';
import { admitOperation } from '../../lib/operations/admission/admit-operation.js';
import { OwnerScope } from '../../lib/operations/scopes.js';
import { testDeps } from '../support/fixtures.js';
import { hasMariadb } from '../support/test-store.js';
import { references, ROOT } from './cfn-template.js';

/**
 * infra/ (docs/design.md §9): the RDS MariaDB stack parses as plain YAML and holds what the claim path and the
 * deploy need; infra/schema-user.sql really creates the schema and two least-privilege users on MariaDB.
 */

interface CfnTemplate {
  Parameters: Record<string, { Type: string; Default?: unknown }>;
  Conditions?: Record<string, unknown>;
  Resources: Record<string, { Type: string; Condition?: string; DeletionPolicy?: string; Properties: Record<string, any> }>;
  Outputs: Record<string, { Value: unknown }>;
}

function loadTemplate(): CfnTemplate {
  const document = parseDocument(readFileSync(join(ROOT, 'infra/rds-mariadb.yml'), 'utf8'));
  // Short-form tags (!Ref, !GetAtt) would be unknown tags here: the file is written in long form on purpose.
  expect(document.errors.map(String)).toEqual([]);
  expect(document.warnings.map(String)).toEqual([]);
  return document.toJS() as CfnTemplate;
}

describe('infra/rds-mariadb.yml', () => {
  const template = loadTemplate();
  const resource = (id: string) => {
    const r = template.Resources[id];
    if (!r) throw new Error(`no resource ${id}`);
    return r;
  };

  it('refers only to its own parameters, resources, conditions and AWS pseudo parameters', () => {
    const { refs, conditions } = references(template);
    const known = new Set([...Object.keys(template.Parameters), ...Object.keys(template.Resources)]);
    expect([...refs].filter((r) => !known.has(r) && !r.startsWith('AWS::'))).toEqual([]);
    expect([...conditions].filter((c) => !(c in (template.Conditions ?? {})))).toEqual([]);
  });

  it('has a MariaDB 10.11 parameter group: UTC, READ COMMITTED, a short lock wait, row-based binlog, the session SQL mode, trigger creation, TLS on every connection', () => {
    const group = resource('DbParameterGroup');
    expect(group.Type).toBe('AWS::RDS::DBParameterGroup');
    expect(group.Properties.Family).toBe('mariadb10.11');
    expect(group.Properties.Parameters).toEqual({
      time_zone: 'UTC',
      tx_isolation: 'READ-COMMITTED',
      innodb_lock_wait_timeout: '10',
      binlog_format: 'ROW',
      // The same mode lib/db/store.ts sets on every connection.
      sql_mode: 'STRICT_ALL_TABLES,NO_ZERO_DATE,NO_ENGINE_SUBSTITUTION',
      // Binary logging is on with backups; without it only SUPER (which RDS never grants) may create the migrations' triggers.
      log_bin_trust_function_creators: '1',
      // A client that cannot encrypt is refused, whoever it is (RDS for MariaDB 10.5+).
      require_secure_transport: '1',
    });
    expect(readFileSync(join(ROOT, 'lib/db/store.ts'), 'utf8')).toContain(`sql_mode = '${group.Properties.Parameters.sql_mode}'`);
  });

  it('runs an encrypted, private, deletion-protected MariaDB 10.11 instance whose master password RDS manages', () => {
    const db = resource('DbInstance');
    expect(db.Type).toBe('AWS::RDS::DBInstance');
    expect(db.DeletionPolicy).toBe('Snapshot');
    expect(db.Properties).toMatchObject({
      Engine: 'mariadb',
      EngineVersion: '10.11',
      StorageEncrypted: true,
      DeletionProtection: true,
      PubliclyAccessible: false,
      ManageMasterUserPassword: true,
      MultiAZ: { Ref: 'MultiAZ' },
      DBParameterGroupName: { Ref: 'DbParameterGroup' },
      DBSubnetGroupName: { Ref: 'DbSubnetGroup' },
      VPCSecurityGroups: [{ Ref: 'DbSecurityGroup' }],
    });
    expect(db.Properties).not.toHaveProperty('MasterUserPassword');
    expect(template.Parameters.MultiAZ?.Default).toBe('true');
    expect(resource('DbSubnetGroup').Type).toBe('AWS::RDS::DBSubnetGroup');
  });

  it('lets only the Lambda security group reach the proxy, and only the proxy (or an optional admin group) the instance', () => {
    expect(resource('ProxySecurityGroup').Properties.SecurityGroupIngress).toEqual([
      expect.objectContaining({ IpProtocol: 'tcp', FromPort: 3306, ToPort: 3306, SourceSecurityGroupId: { Ref: 'LambdaSecurityGroupId' } }),
    ]);
    expect(resource('DbSecurityGroup').Properties).not.toHaveProperty('SecurityGroupIngress');
    const ingress = Object.values(template.Resources).filter((r) => r.Type === 'AWS::EC2::SecurityGroupIngress');
    expect(ingress.map((r) => [r.Properties.SourceSecurityGroupId, r.Condition ?? null])).toEqual([
      [{ Ref: 'ProxySecurityGroup' }, null],
      [{ Ref: 'AdminSecurityGroupId' }, 'HasAdminSecurityGroup'],
    ]);
    for (const r of ingress) expect(r.Properties).toMatchObject({ GroupId: { Ref: 'DbSecurityGroup' }, FromPort: 3306, ToPort: 3306 });
  });

  it('puts RDS Proxy in front, TLS required, authenticating with the two user secrets it alone may read', () => {
    const proxy = resource('DbProxy');
    expect(proxy.Properties).toMatchObject({ EngineFamily: 'MYSQL', RequireTLS: true, RoleArn: { 'Fn::GetAtt': ['ProxyRole', 'Arn'] } });
    expect(proxy.Properties.Auth.map((a: { SecretArn: unknown }) => a.SecretArn)).toEqual([{ Ref: 'AppSecret' }, { Ref: 'MigratorSecret' }]);
    const role = resource('ProxyRole');
    expect(role.Properties.AssumeRolePolicyDocument.Statement[0].Principal).toEqual({ Service: 'rds.amazonaws.com' });
    expect(role.Properties.Policies.flatMap((p: any) => p.PolicyDocument.Statement)).toEqual([
      { Effect: 'Allow', Action: 'secretsmanager:GetSecretValue', Resource: [{ Ref: 'AppSecret' }, { Ref: 'MigratorSecret' }] },
    ]);
    const targets = resource('DbProxyTargetGroup');
    expect(targets.Properties).toMatchObject({ DBProxyName: { Ref: 'DbProxy' }, DBInstanceIdentifiers: [{ Ref: 'DbInstance' }] });
    expect(targets.Properties.ConnectionPoolConfigurationInfo.SessionPinningFilters).toEqual(['EXCLUDE_VARIABLE_SETS']);
  });

  it('generates URL-safe passwords for the users infra/schema-user.sql creates, and outputs what serverless.yml needs', () => {
    const sqlText = readFileSync(join(ROOT, 'infra/schema-user.sql'), 'utf8');
    for (const [id, user] of [['AppSecret', 'durable_ops_app'], ['MigratorSecret', 'durable_ops_migrator']] as const) {
      const generate = resource(id).Properties.GenerateSecretString;
      expect(JSON.parse(generate.SecretStringTemplate)).toEqual({ username: user });
      expect(generate).toMatchObject({ GenerateStringKey: 'password', ExcludePunctuation: true });
      expect(generate.PasswordLength).toBeGreaterThanOrEqual(24);
      expect(sqlText).toContain(`'${user}'`);
    }
    expect(Object.keys(template.Outputs)).toEqual(expect.arrayContaining(['ProxyEndpoint', 'AppSecretArn', 'MigratorSecretArn', 'InstanceEndpoint', 'MasterUserSecretArn']));
    expect(template.Outputs.ProxyEndpoint?.Value).toEqual({ 'Fn::GetAtt': ['DbProxy', 'Endpoint'] });
  });
});

describe('the operator connection commands', () => {
  it('verify the server certificate against the RDS bundle in every mariadb client command of the runbook and schema-user.sql', () => {
    const commands = ['infra/RUNBOOK.md', 'infra/schema-user.sql'].flatMap((file) =>
      readFileSync(join(ROOT, file), 'utf8')
        // One logical command per line: shell continuations (`\` then a newline, `-- ` comment prefixes in the SQL file) joined.
        .replace(/\\\n(--)?\s*/g, ' ')
        .split('\n')
        .filter((line) => /\bmariadb --host/.test(line)),
    );
    expect(commands.length).toBeGreaterThanOrEqual(2);
    for (const command of commands) expect(command).toMatch(/--ssl --ssl-verify-server-cert --ssl-ca=global-bundle\.pem/);
  });
});

describe.skipIf(!hasMariadb())('infra/schema-user.sql on MariaDB', () => {
  const suffix = randomBytes(4).toString('hex');
  const names = { schema: `dop_schema_${suffix}`, app: `dop_app_${suffix}`, migrator: `dop_mig_${suffix}` };
  const passwords = { app: `App${randomBytes(12).toString('hex')}`, migrator: `Mig${randomBytes(12).toString('hex')}` };
  const script = readFileSync(join(ROOT, 'infra/schema-user.sql'), 'utf8');
  let admin: Connection;

  const adminUrl = () => new URL(inject('mariadbAdminUrl'));
  const urlFor = (user: string, password: string) => {
    const url = adminUrl();
    url.username = user;
    url.password = password;
    url.pathname = `/${names.schema}`;
    return url.toString();
  };
  /** Runs the script as the master user would with `mariadb --init-command=…`: one session, statements in order. */
  const runScript = async (variables: Record<string, string>) => {
    const url = adminUrl();
    const session = await createConnection({
      host: url.hostname,
      port: Number(url.port || 3306),
      user: decodeURIComponent(url.username || 'root'),
      password: decodeURIComponent(url.password),
      multipleStatements: true,
    });
    try {
      const init = Object.entries(variables).map(([name, value]) => `SET @${name} = ${session.escape(value)};`).join('\n');
      await session.query(`${init}\n${script}`);
    } finally {
      await session.end();
    }
  };

  beforeAll(async () => {
    const url = adminUrl();
    admin = await createConnection({ host: url.hostname, port: Number(url.port || 3306), user: decodeURIComponent(url.username || 'root'), password: decodeURIComponent(url.password) });
  });
  afterAll(async () => {
    await admin.query(`DROP USER IF EXISTS '${names.app}'@'%', '${names.migrator}'@'%'`);
    await admin.query(`DROP DATABASE IF EXISTS ${names.schema}`);
    await admin.end();
  });

  it('refuses to run without both passwords, creating nothing', async () => {
    await expect(runScript({ schema: names.schema, app_user: names.app, migrator_user: names.migrator, app_password: passwords.app })).rejects.toThrow(
      /Set @app_password and @migrator_password/,
    );
    const [rows] = await admin.query(`SELECT COUNT(*) AS n FROM mysql.user WHERE user IN ('${names.app}', '${names.migrator}')`);
    expect((rows as { n: number }[])[0]!.n).toBe(0);
  });

  it('creates both users REQUIRE SSL: in the clear the server refuses them, and a re-run puts the requirement back on an existing user', async () => {
    const variables = { schema: names.schema, app_user: names.app, migrator_user: names.migrator, app_password: passwords.app, migrator_password: passwords.migrator };
    const sslTypes = async () => {
      const [rows] = await admin.query(`SELECT User AS user, ssl_type FROM mysql.user WHERE User IN ('${names.app}', '${names.migrator}') ORDER BY user`);
      return rows;
    };
    const bothRequireSsl = [{ user: names.app, ssl_type: 'ANY' }, { user: names.migrator, ssl_type: 'ANY' }];
    await runScript(variables);
    expect(await sslTypes()).toEqual(bothRequireSsl);
    // This test server's connections are plain TCP (mysql2 without `ssl`): the right password is not enough.
    const url = adminUrl();
    await expect(createConnection({ host: url.hostname, port: Number(url.port || 3306), user: names.app, password: passwords.app })).rejects.toMatchObject({ code: 'ER_ACCESS_DENIED_ERROR' });
    await admin.query(`ALTER USER '${names.app}'@'%' REQUIRE NONE`);
    await runScript(variables);
    expect(await sslTypes()).toEqual(bothRequireSsl);
  });

  it('creates the schema and users; the migrator can migrate, the application user can use rows and call the procedures but not change the schema', async () => {
    const variables = { schema: names.schema, app_user: names.app, migrator_user: names.migrator, app_password: passwords.app, migrator_password: passwords.migrator };
    await runScript(variables);
    // Idempotent: a second run (e.g. after a rotation) changes nothing and fails on nothing.
    await runScript(variables);

    const [schemas] = await admin.query(`SELECT DEFAULT_COLLATION_NAME AS collation FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = '${names.schema}'`);
    expect(schemas).toEqual([{ collation: 'utf8mb4_nopad_bin' }]);
    const [grants] = await admin.query(`SHOW GRANTS FOR '${names.app}'@'%'`);
    expect(JSON.stringify(grants)).toContain(`GRANT SELECT, INSERT, UPDATE, DELETE, EXECUTE ON \`${names.schema}\`.*`);
    // The rights below are what this test proves, not TLS (the test above): this server has no TLS, so let them in clear.
    await admin.query(`ALTER USER '${names.app}'@'%', '${names.migrator}'@'%' REQUIRE NONE`);

    const migrator = openStore(urlFor(names.migrator, passwords.migrator), { poolSize: 2 });
    const app = openStore(urlFor(names.app, passwords.app), { poolSize: 2 });
    try {
      expect((await migrateToLatest(migrator)).every((r) => r.status === 'Success')).toBe(true);
      await sql`INSERT INTO owner_settings (owner_user_id, plan, ai_enabled, privacy_mode, updated_at) VALUES ('u1', 'free', 0, 'local_only', UTC_TIMESTAMP(6))`.execute(app.db);
      await expect(app.db.selectFrom('owner_settings').select('owner_user_id').execute()).resolves.toEqual([{ owner_user_id: 'u1' }]);
      await expect(sql`DELETE FROM owner_settings`.execute(app.db)).resolves.toBeDefined();
      // The one-round-trip admission runs as the application user (EXECUTE; SQL SECURITY INVOKER, so its row rights).
      const admitted = await admitOperation(new OwnerScope(app, 'u2'), testDeps(), 'k-1', { taskType: 'test.noop', subject: { type: 'doc', id: 'd' }, params: {} });
      expect(admitted).toMatchObject({ replayed: false, operation: { status: 'queued', owner_user_id: 'u2' } });
      await expect(sql`CREATE PROCEDURE intruder() SELECT 1`.execute(app.db)).rejects.toMatchObject({ code: expect.stringMatching(/^ER_(DBACCESS_DENIED_ERROR|ACCESS_DENIED_ERROR)$/) });
      await expect(sql`DROP PROCEDURE admit_operation_v1`.execute(app.db)).rejects.toMatchObject({ code: expect.stringMatching(/^ER_(PROCACCESS_DENIED_ERROR|ACCESS_DENIED_ERROR)$/) });
      await expect(sql`CREATE TABLE intruder (id int)`.execute(app.db)).rejects.toMatchObject({ code: 'ER_TABLEACCESS_DENIED_ERROR' });
      await expect(sql`DROP TABLE operations`.execute(app.db)).rejects.toMatchObject({ code: 'ER_TABLEACCESS_DENIED_ERROR' });
      await expect(sql`SELECT COUNT(*) FROM mysql.user`.execute(app.db)).rejects.toMatchObject({ code: 'ER_TABLEACCESS_DENIED_ERROR' });
      await expect(sql`GRANT SELECT ON ${sql.raw(names.schema)}.* TO ${sql.raw(`'${names.migrator}'@'%'`)}`.execute(migrator.db)).rejects.toMatchObject({
        code: expect.stringMatching(/^ER_(DBACCESS_DENIED_ERROR|ACCESS_DENIED_ERROR|TABLEACCESS_DENIED_ERROR)$/),
      });
    } finally {
      await migrator.destroy();
      await app.destroy();
    }
  });
});
