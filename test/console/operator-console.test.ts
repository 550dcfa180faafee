import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildConsole } from '../../console/build-console.js';
import { waitFor } from '../support/wait-for.js';
import { browserSuiteMode, CHROMIUM_PATH, openWatchedPage, type WatchedPage } from './chromium-browser.js';
import { admitDemoWait, createOutcomeUnknown, operatorToken, ownerToken, scpOnlyToken, startConsoleStack, waitForStatus, type ConsoleStack } from './console-stack.js';

/**
 * Screenshots of every step (git-ignored). `docs/console.png` is the README's (an operation's timeline after a cancel,
 * a retry and a second cancel): written when missing, or again with UPDATE_CONSOLE_SCREENSHOT=1.
 */
const ARTIFACTS = '.artifacts/console';
const README_SCREENSHOT = 'docs/console.png';

const mode = browserSuiteMode();

describe.skipIf(mode === 'skip')('operator console in Chromium against the real local stack', () => {
  let dir = '';
  const run = randomUUID().slice(0, 8);
  /** Idempotency keys the test sends: no response may ever echo one. */
  const keys: string[] = [];
  /** Lease tokens seen in the database while operations ran: no response may ever carry one. */
  const leaseTokens = new Set<string>();
  let env: ConsoleStack;
  let watched: WatchedPage;
  let operator: string;
  let nonOperator: string;
  let readOnly: string;
  const ids = { short: [] as string[], long: '', bobs: '', recovery: '' };

  const shot = async (name: string) => {
    await watched.page.screenshot({ path: `${ARTIFACTS}/${name}.png`, fullPage: true });
  };
  /** Opens a section from the navigation and waits until it loaded without showing an error. */
  const openSection = async (name: string) => {
    const { page } = watched;
    await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name, exact: true }).click();
    await page.getByRole('heading', { name, exact: true }).waitFor();
    await page.getByRole('status').filter({ hasText: 'Loading' }).waitFor({ state: 'detached' });
    expect(await page.getByRole('alert').count(), `${name}: no error shown`).toBe(0);
  };
  const shortIdOf = (id: string) => id.slice(-8);
  const admit = async (token: string, subject: string, durationMs: number) => {
    const key = `console-${run}-${keys.length + 1}`;
    keys.push(key);
    return admitDemoWait(env.url, token, key, subject, durationMs);
  };
  const recordLeaseTokens = async () => {
    const rows = await env.stack.runtime.store.db.selectFrom('operations').select('lease_token').where('lease_token', 'is not', null).execute();
    for (const row of rows) if (row.lease_token) leaseTokens.add(row.lease_token);
  };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'durable-ops-console-'));
    if (mode === 'fail') throw new Error(`CI=true but ${CHROMIUM_PATH} is missing: install Debian's chromium (apt-get install chromium).`);
    mkdirSync(ARTIFACTS, { recursive: true });
    const consoleDir = join(dir, 'console');
    await buildConsole({ outDir: consoleDir });
    env = await startConsoleStack(dir, consoleDir);
    operator = await operatorToken('ops-olivia');
    readOnly = await operatorToken('ops-rita', true);
    nonOperator = await ownerToken('alice');
    const alice = nonOperator;
    const bob = await ownerToken('bob');
    for (let i = 1; i <= 3; i += 1) ids.short.push(await admit(alice, `short-${i}`, 150));
    ids.bobs = await admit(bob, 'bob-1', 150);
    ids.long = await admit(alice, 'long-1', 120_000);
    for (const id of [...ids.short]) await waitForStatus(env.url, alice, id, 'succeeded');
    await waitForStatus(env.url, bob, ids.bobs, 'succeeded');
    await waitForStatus(env.url, alice, ids.long, 'running');
    await recordLeaseTokens();
    const recoveryKey = `console-${run}-recovery`;
    keys.push(recoveryKey);
    ids.recovery = await createOutcomeUnknown(env.stack.runtime.store, recoveryKey);
    watched = await openWatchedPage();
  });

  afterAll(async () => {
    await watched?.close();
    // A failed step may leave the two-minute operation running; stopping the stack would wait for it.
    if (env && ids.long) await fetch(`${env.url}/api/operations/${ids.long}/cancel`, { method: 'POST', headers: { authorization: `Bearer ${nonOperator}` } }).catch(() => undefined);
    await env?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('signs in with an operator token and lists every owner\'s operations', async () => {
    const { page } = watched;
    await page.goto(`${env.url}/console`);
    await page.getByRole('heading', { name: 'durable-ops operator console' }).waitFor();
    await shot('01-sign-in');
    await page.getByLabel('Bearer token').fill(operator);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Operations', exact: true }).waitFor();
    for (const id of [...ids.short, ids.bobs, ids.long]) await page.locator(`tr[data-operation-id="${id}"]`).waitFor();
    expect(await page.locator(`tr[data-operation-id="${ids.bobs}"]`).textContent()).toContain('bob');
    expect(await page.locator(`tr[data-operation-id="${ids.long}"]`).textContent()).toContain('running');
    expect(await page.getByText('Signed in as').textContent()).toContain('ops-olivia');
    await recordLeaseTokens();
    await shot('02-operations');
  });

  it('filters the list by state (the filter is in the URL)', async () => {
    const { page } = watched;
    await page.getByLabel('State').selectOption('succeeded');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await page.waitForURL(/status=succeeded/);
    // The filtered list replaces the old one after a load: wait for its rows, not merely for the running one to vanish
    // (it also vanishes while the new list is loading).
    const rows = page.locator('tbody tr[data-operation-id]');
    await waitFor(async () => (await rows.count()) === 4 && (await page.locator(`tr[data-operation-id="${ids.long}"]`).count()) === 0, {
      what: 'the list to show exactly the four succeeded operations',
    });
    for (const text of await rows.allTextContents()) expect(text).toContain('succeeded');
    await shot('03-filtered-succeeded');
    await page.getByRole('button', { name: 'Clear' }).click();
    await page.locator(`tr[data-operation-id="${ids.long}"]`).waitFor();
  });

  it("opens one operation's timeline", async () => {
    const { page } = watched;
    await page.locator(`tr[data-operation-id="${ids.long}"] a`).click();
    await page.getByRole('heading', { name: `Operation ${ids.long}` }).waitFor();
    await page.waitForURL(new RegExp(`/console/operations/${ids.long}$`));
    const timeline = page.locator('ol.timeline');
    await timeline.locator('li', { hasText: 'admitted' }).waitFor();
    await timeline.locator('li', { hasText: 'claimed' }).waitFor();
    expect(await page.getByTestId('operation-status').textContent()).toContain('running');
    expect(await page.locator('dl.summary').textContent()).toContain('alice');
    await shot('04-timeline');
  });

  it('cancels the running operation after a confirmation, and shows its state change', async () => {
    const { page } = watched;
    await page.getByRole('button', { name: 'Cancel operation' }).click();
    const dialog = page.getByRole('dialog', { name: 'Cancel this operation?' });
    await dialog.waitFor();
    await shot('05-confirm-cancel');
    await dialog.getByRole('button', { name: 'Yes, cancel it' }).click();
    await dialog.waitFor({ state: 'detached' });
    // The notice, unless the worker saw the cancel first: a "Cancel requested…" notice leaves once the operation is cancelled.
    await page
      .getByRole('status')
      .filter({ hasText: /^Cancel(led: | requested while)/ })
      .or(page.getByTestId('operation-status').filter({ hasText: 'cancelled' }))
      .first()
      .waitFor();
    await page.getByTestId('operation-status').filter({ hasText: 'cancelled' }).waitFor({ timeout: 30_000 });
    await page.locator('ol.timeline li', { hasText: 'cancelled' }).first().waitFor();
    // The operation is finished: "Cancel requested… it stops at its next heartbeat" no longer describes it.
    expect(await page.getByRole('status').filter({ hasText: 'Cancel requested' }).count()).toBe(0);
    await waitForStatus(env.url, nonOperator, ids.long, 'cancelled', 5_000);
    // Who cancelled: the operator by their `sub`, in the summary and on the timeline's cancelled event.
    expect(await page.getByTestId('cancel-requested-by').textContent()).toBe('operator ops-olivia');
    expect(await page.locator('ol.timeline li', { hasText: 'cancelled' }).first().getByTestId('cancelled-by').textContent()).toBe('by operator ops-olivia');
    await shot('06-cancelled');
  });

  it("retries it on the owner's behalf (confirmed), then cancels it again", async () => {
    const { page } = watched;
    await page.getByRole('button', { name: 'Retry operation' }).click();
    const retry = page.getByRole('dialog', { name: 'Retry this operation?' });
    await retry.getByRole('button', { name: 'Yes, retry it' }).click();
    await retry.waitFor({ state: 'detached' });
    await page.getByRole('status').filter({ hasText: 'Retried:' }).waitFor();
    await page.locator('ol.timeline li', { hasText: 'owner retry' }).waitFor();
    await page.getByRole('button', { name: 'Cancel operation' }).click();
    await page.getByRole('dialog', { name: 'Cancel this operation?' }).getByRole('button', { name: 'Yes, cancel it' }).click();
    await page.getByTestId('operation-status').filter({ hasText: 'cancelled' }).waitFor({ timeout: 30_000 });
    await page.locator('ol.timeline li', { hasText: 'cancelled' }).nth(1).waitFor();
    expect(await page.getByTestId('cancelled-by').allTextContents()).toEqual(['by operator ops-olivia', 'by operator ops-olivia']);
    await recordLeaseTokens();
    if (!existsSync(README_SCREENSHOT) || process.env.UPDATE_CONSOLE_SCREENSHOT === '1') {
      mkdirSync('docs', { recursive: true });
      await page.screenshot({ path: README_SCREENSHOT, fullPage: true });
    }
  });

  it('a succeeded operation shows its progress as a bare 100%, not the last stage its task reported', async () => {
    const { page } = watched;
    await page.goto(`${env.url}/console/operations/${ids.short[0]}`);
    await page.getByRole('heading', { name: `Operation ${ids.short[0]}` }).waitFor();
    await page.getByTestId('operation-status').filter({ hasText: 'succeeded' }).waitFor();
    const progress = page.locator('dl.summary div', { has: page.locator('dt', { hasText: /^Progress$/ }) }).locator('dd');
    // demo.wait's last report is (100, "waiting"); a finished operation is waiting for nothing.
    expect(await progress.textContent()).toBe('100%');
  });

  it('shows capacity pools with usage bars', async () => {
    const { page } = watched;
    await openSection('Capacity');
    await page.locator('meter').first().waitFor();
    expect(await page.getByRole('region', { name: 'Global pool' }).locator('meter').count()).toBe(1);
    expect(await page.getByRole('region', { name: 'Running per owner' }).count()).toBe(1);
    expect(await page.getByRole('region', { name: 'Running by task type' }).count()).toBe(1);
    await shot('07-capacity');
  });

  it('lists the unresolved recovery operation with its chain verdict, and resolves it with validated evidence', async () => {
    const { page } = watched;
    await openSection('Recovery');
    const row = page.locator('tr', { hasText: shortIdOf(ids.recovery) });
    await row.waitFor();
    expect(await row.textContent()).toContain('outcome unknown');
    expect(await row.textContent()).toContain('✓ verified');
    await shot('08-recovery');

    await row.getByRole('button', { name: 'Resolve…' }).click();
    const form = page.getByRole('form', { name: `Resolve ${ids.recovery}` });
    await form.getByRole('button', { name: 'Check and resolve…' }).click();
    const issues = form.getByRole('alert');
    await issues.waitFor();
    const shown = (await issues.textContent()) ?? '';
    expect(shown).toContain('Choose whether the effect happened.');
    expect(shown).toContain('check 1 › name: required.');
    expect(shown).toContain('check 1 › evidence key 1: required.');
    await form.getByLabel('Check name').fill('Queue Lookup!');
    await form.getByRole('button', { name: 'Check and resolve…' }).click();
    expect(await issues.textContent()).toContain('check 1 › name: must be lower-case');
    await shot('09-resolve-invalid');
    const posted = (await watched.responses()).filter((r) => r.url.includes('/resolve-unknown'));
    expect(posted, 'invalid evidence never reaches the API').toEqual([]);

    await form.getByLabel('Yes: it happened').check();
    await form.getByLabel('Check name').fill('queue_lookup');
    await form.getByLabel('Evidence key 1').fill('messageRef');
    await form.getByLabel('Value').fill('sqs-message-0001');
    await form.getByRole('button', { name: 'Check and resolve…' }).click();
    const dialog = page.getByRole('dialog', { name: 'Resolve this recovery operation?' });
    await dialog.getByRole('button', { name: 'Yes, resolve it' }).click();
    await page.getByRole('status').filter({ hasText: 'it is now succeeded' }).waitFor();
    await waitFor(async () => (await row.count()) === 0, { what: 'the resolved operation to leave the unresolved list' });
    await shot('10-resolved');
  });

  it('shows sweeper runs with their counts, and redrives the (empty) DLQ after a confirmation', async () => {
    const { page } = watched;
    await openSection('Sweeper & DLQ');
    await page.locator('table.sweeps tbody tr').first().waitFor();
    await page.getByRole('button', { name: 'Redrive the DLQ' }).click();
    await page.getByRole('dialog', { name: 'Redrive the dead-letter queue?' }).getByRole('button', { name: 'Yes, redrive' }).click();
    await page.getByRole('status').filter({ hasText: 'The dead-letter queue was empty' }).waitFor();
    await shot('11-sweeper');
  });

  it('draws admitted, succeeded and failed per minute as an inline SVG chart', async () => {
    const { page } = watched;
    await openSection('Throughput');
    await page.getByRole('img', { name: /Operations per minute/ }).waitFor();
    expect(await page.locator('svg.chart polyline').count()).toBe(3);
    expect(await page.locator('.legend').textContent()).toContain('Admitted: 5');
    await shot('12-throughput');
  });

  it('a read-only operator (ops:read without ops:write) sees the data but is offered no action', async () => {
    const { page } = watched;
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('Bearer token').fill(readOnly);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await openSection('Operations');
    await page.locator(`tr[data-operation-id="${ids.long}"] a`).click();
    await page.locator('ol.timeline li', { hasText: 'owner retry' }).waitFor();
    expect(await page.getByText('No action applies').count()).toBe(0);
    expect(await page.getByRole('button', { name: /Cancel operation|Retry operation/ }).count()).toBe(0);
    await openSection('Sweeper & DLQ');
    await page.locator('table.sweeps tbody tr').first().waitFor();
    expect(await page.getByRole('button', { name: 'Redrive the DLQ' }).count()).toBe(0);
  });

  it('a token without ops:read sees "Not an operator" and no data', async () => {
    const { page } = watched;
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('Bearer token').fill(nonOperator);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Not an operator' }).waitFor();
    expect(await page.locator('table').count()).toBe(0);
    expect(await page.getByRole('navigation', { name: 'Sections' }).count()).toBe(0);
    const text = (await page.locator('body').textContent()) ?? '';
    for (const id of [...ids.short, ids.long]) expect(text).not.toContain(id);
    await shot('13-not-an-operator');
    const asAlice = (await watched.responses()).filter((r) => r.authorization === `Bearer ${nonOperator}`);
    for (const response of asAlice) {
      expect(new URL(response.url).pathname.startsWith('/api/ops/'), response.url).toBe(true);
      expect(response.status, response.url).toBe(404);
    }
  });

  it('a token the console takes for an operator\'s but the API does not: the API\'s 404 shows "Not an operator" too', async () => {
    const { page } = watched;
    await page.getByRole('button', { name: 'Sign out' }).click();
    const before = watched.errors.length;
    await page.getByLabel('Bearer token').fill(await scpOnlyToken('mallory'));
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Not an operator' }).waitFor();
    expect(await page.locator('table').count()).toBe(0);
    // Chromium itself logs every 4xx a page fetches; this step expects exactly that one line, for the access probe.
    const logged = watched.errors.splice(before);
    expect(logged).toHaveLength(1);
    expect(logged[0]).toMatch(/^console\.error: Failed to load resource: the server responded with a status of 404 .*\/api\/ops\/recovery\?limit=1\)$/);
  });

  it('the page logged no console error, and no response carried a lease token or an idempotency key', async () => {
    expect(watched.errors).toEqual([]);
    const responses = await watched.responses();
    expect(responses.length).toBeGreaterThan(10);
    expect(leaseTokens.size).toBeGreaterThan(0);
    for (const response of responses) {
      const where = `${response.status} ${response.url}`;
      expect(response.body, where).not.toMatch(/"[A-Za-z_]*lease_?token[A-Za-z_]*"\s*:/i);
      expect(response.body, where).not.toMatch(/"[A-Za-z_]*lease[A-Za-z_]*"\s*:\s*"[0-9a-f]{64}"/i);
      expect(response.body, where).not.toMatch(/idempotency[-_ ]?key/i);
      for (const token of leaseTokens) expect(response.body, where).not.toContain(token);
      for (const key of keys) expect(response.body, where).not.toContain(key);
      for (const [name, value] of Object.entries(response.headers)) {
        expect(name, where).not.toMatch(/idempotency/i);
        for (const key of keys) expect(value, `${where} ${name}`).not.toContain(key);
      }
    }
  });

  it("says the owner cancelled an operation the owner cancelled (through the owner API), and that a retry's new cycle has no canceller", async () => {
    const { page } = watched;
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('Bearer token').fill(operator);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('navigation', { name: 'Sections' }).waitFor();
    const bob = await ownerToken('bob');
    const id = await admit(bob, 'bob-cancel', 120_000);
    const cancel = await fetch(`${env.url}/api/operations/${id}/cancel`, { method: 'POST', headers: { authorization: `Bearer ${bob}` } });
    expect(cancel.status).toBe(200);
    await waitForStatus(env.url, bob, id, 'cancelled');
    await page.goto(`${env.url}/console/operations/${id}`);
    await page.getByTestId('operation-status').filter({ hasText: 'cancelled' }).waitFor();
    expect(await page.getByTestId('cancel-requested-by').textContent()).toBe('the owner');
    expect(await page.getByTestId('cancelled-by').allTextContents()).toEqual(['by the owner']);
    // The owner's own view never names who cancelled (an operator's sub is not the owner's to see).
    const owned = (await (await fetch(`${env.url}/api/operations/${id}`, { headers: { authorization: `Bearer ${bob}` } })).json()) as Record<string, unknown>;
    expect(owned).not.toHaveProperty('cancelRequestedBy');
    const retried = await fetch(`${env.url}/api/operations/${id}/retry`, { method: 'POST', headers: { authorization: `Bearer ${bob}` } });
    expect(retried.status).toBe(202);
    await page.reload();
    await page.locator('ol.timeline li', { hasText: 'owner retry' }).waitFor();
    expect(await page.getByTestId('cancel-requested-by').count(), 'the new cycle has no cancel').toBe(0);
    expect(await page.getByTestId('cancelled-by').allTextContents(), "the earlier cycle's canceller stays on its event").toEqual(['by the owner']);
    await fetch(`${env.url}/api/operations/${id}/cancel`, { method: 'POST', headers: { authorization: `Bearer ${bob}` } });
    await waitForStatus(env.url, bob, id, 'cancelled');
  });

  it('says "not recorded" for a cancel recorded before the canceller was kept, in the summary and on its timeline event', async () => {
    const { page } = watched;
    const bob = await ownerToken('bob');
    const id = await admit(bob, 'bob-cancel-unrecorded', 120_000);
    expect((await fetch(`${env.url}/api/operations/${id}/cancel`, { method: 'POST', headers: { authorization: `Bearer ${bob}` } })).status).toBe(200);
    await waitForStatus(env.url, bob, id, 'cancelled');
    // What a row cancelled before the cancel_requested_by and cancelled_by migrations holds.
    const { db } = env.stack.runtime.store;
    await db.updateTable('operations').set({ cancel_requested_by: null }).where('id', '=', id).execute();
    await db.updateTable('operation_events').set({ cancelled_by: null }).where('operation_id', '=', id).execute();
    await page.goto(`${env.url}/console/operations/${id}`);
    await page.getByTestId('operation-status').filter({ hasText: 'cancelled' }).waitFor();
    expect(await page.getByTestId('cancel-requested-by').textContent()).toBe('not recorded');
    expect(await page.getByTestId('cancelled-by').allTextContents()).toEqual(['by not recorded']);
  });
});
