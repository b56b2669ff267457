/**
 * Real-user edges of the walking skeleton: two tabs of one machine share a
 * single relay session and one local state (MLS state included: the tab that
 * takes the session over changes domain membership); a garbage ticket is refused with a
 * typed error; a ticket is single-use, so a second joiner is refused and can
 * start over; the app is an installable PWA.
 */
import { chromium } from '@playwright/test';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  confirmCodes,
  expect,
  expectMachines,
  foundMesh as found,
  profile,
  test,
  view,
  type RelayProcess,
} from './relay-process.ts';

async function sessions(relay: RelayProcess): Promise<number> {
  const health = (await (await fetch(`${relay.url}/api/health`)).json()) as { sessions: number };
  return health.sessions;
}

test('two tabs of one machine share one relay session and one state', async ({ browser, relay }) => {
  const contextA = await browser.newContext();
  const first = await contextA.newPage();
  const ticket = await found(relay, first, 'workstation');
  const second = await contextA.newPage();
  await second.goto(relay.url);
  await expect(second.getByTestId('relay-state')).toHaveText('standby');
  await expect(second.getByTestId('fingerprint')).toHaveText((await first.getByTestId('fingerprint').textContent())!);

  const contextB = await browser.newContext();
  const b = await contextB.newPage();
  await b.goto(relay.url);
  await b.getByTestId('ticket-input').fill(ticket);
  await b.getByTestId('join-mesh').click();
  await confirmCodes(first, b);
  await expect(b.getByTestId('new-profile-name')).toBeVisible();
  await expect(b.getByTestId('relay-state')).toHaveText('ready');
  await expectMachines([second], 2);
  await view(first, 'profiles');

  // An edit in the standby tab reaches the other machine through the leading tab.
  await second.getByTestId('new-profile-name').fill('Gate sensor');
  await second.getByTestId('add-profile').click();
  await expect(profile(first, 'Gate sensor')).toBeVisible();
  await expect(profile(b, 'Gate sensor')).toBeVisible();
  expect(await sessions(relay)).toBe(2);

  // Closing the leading tab hands the session to the other one.
  await first.close();
  await expect(second.getByTestId('relay-state')).toHaveText('ready');
  await b.getByTestId('new-profile-name').fill('Pump 7');
  await b.getByTestId('add-profile').click();
  await expect(profile(second, 'Pump 7')).toBeVisible();
  // The new leading tab took up the MLS state the first one kept: it changes membership.
  for (const page of [second, b]) await view(page, 'domains');
  await second.getByTestId('domain-name').fill('FIELD');
  await second.getByTestId('domain-create-submit').click();
  const field = (page: typeof b) => page.locator('[data-testid="domain"][data-domain="FIELD"]');
  await expect(field(second)).toHaveAttribute('data-member', 'yes');
  await expect(field(b)).toHaveAttribute('data-member', 'yes');
  await field(second)
    .getByRole('button', { name: /^Stop .* reading$/ })
    .click();
  await expect(field(second)).toHaveAttribute('data-generation', '2');
  await expect(field(b).getByTestId('domain-removed')).toBeVisible();
  await contextA.close();
  await contextB.close();
});

test('bad tickets are refused and a used ticket admits nobody else', async ({ browser, relay }) => {
  const a = await (await browser.newContext()).newPage();
  const ticket = await found(relay, a, 'workstation');

  const b = await (await browser.newContext()).newPage();
  await b.goto(relay.url);
  await b.getByTestId('ticket-input').fill('sov1.not-a-real-ticket');
  await b.getByTestId('join-mesh').click();
  await expect(b.getByTestId('error')).toContainText('InvalidTicket');
  await expect(b.getByTestId('create-mesh')).toBeVisible();
  await b.getByTestId('ticket-input').fill(ticket);
  await b.getByTestId('join-mesh').click();
  await confirmCodes(a, b);
  await expect(b.getByTestId('new-profile-name')).toBeVisible();

  const c = await (await browser.newContext()).newPage();
  await c.goto(relay.url);
  await c.getByTestId('ticket-input').fill(ticket);
  await c.getByTestId('join-mesh').click();
  // The invitation was used: the relay no longer serves its holder, so C never reaches A.
  await expect(c.getByTestId('joining')).toBeVisible();
  await expect(c.getByTestId('relay-state')).toHaveAttribute('title', /admission list/);
  await expectMachines([a], 2);
  // C is told so, and offered to paste another ticket: it never reaches A, so A cannot tell it.
  await expect(c.getByTestId('ticket-unknown')).toContainText(
    'already used by another machine, declined, or has expired',
  );
  await c.getByTestId('ticket-another').click();
  await expect(c.getByTestId('create-mesh')).toBeVisible();
  await expect(c.getByTestId('ticket-input')).toHaveValue('');
});

test('pairing is default deny: a declined code trusts nothing, on either side', async ({ browser, relay }) => {
  const a = await (await browser.newContext()).newPage();
  const ticket = await found(relay, a, 'workstation');

  // The inviting human sees a different code and refuses.
  const b = await (await browser.newContext()).newPage();
  await b.goto(relay.url);
  await b.getByTestId('machine-name').fill('impostor');
  await b.getByTestId('ticket-input').fill(ticket);
  // The admin is elsewhere in the app when the request comes: every view says who asks, and where to answer.
  await view(a, 'profiles');
  await b.getByTestId('join-mesh').click();
  await expect(a.getByTestId('asking-banner')).toContainText('impostor asks to join this mesh.');
  await expect(a.getByTestId('nav-asking')).toContainText('1');
  await a.getByTestId('asking-banner').getByRole('link').click();
  await expect(a.locator('main[data-view="machines"]')).toBeVisible();
  await expect(a.locator('[data-testid="pairing"][data-name="impostor"]')).toContainText('impostor asks to join');
  await expect(a.getByTestId('pairing-sas')).toHaveText(/^\d{3} \d{3}$/);
  await expect(b.getByTestId('join-sas')).toHaveText((await a.getByTestId('pairing-sas').textContent())!);
  await b.getByTestId('join-confirm').click();
  await a.getByTestId('pairing-decline').click();
  await expect(b.getByTestId('join-refused')).toContainText('the inviting machine declined the pairing code');
  await expect(b.getByTestId('joining')).toContainText('join refused');
  await expect(a.getByTestId('pairing')).toHaveCount(0);
  await expect(a.getByTestId('machine')).toHaveCount(1);
  await expect(b.getByTestId('new-profile-name')).toHaveCount(0);

  // The joining human declines: the joiner gives up and the inviter admits nothing.
  await a.getByTestId('invite').click();
  await expect(a.getByTestId('ticket')).toHaveValue(/^sov1\./);
  const second = await a.getByTestId('ticket').inputValue();
  expect(second).not.toBe(ticket);
  const c = await (await browser.newContext()).newPage();
  await c.goto(relay.url);
  await c.getByTestId('ticket-input').fill(second);
  await c.getByTestId('join-mesh').click();
  await expect(c.getByTestId('join-sas')).toHaveText(/^\d{3} \d{3}$/);
  await a.getByTestId('pairing-confirm').click();
  await c.getByTestId('join-decline').click();
  await expect(c.getByTestId('create-mesh')).toBeVisible();
  await expect(c.getByTestId('setup-notice')).toContainText('You stopped the pairing because the codes differed');
  await expect(a.getByTestId('pairing')).toHaveCount(0);
  await expect(a.getByTestId('machine')).toHaveCount(1);
});

test('the app is an installable PWA', async ({ relay }) => {
  const context = await chromium.launchPersistentContext(mkdtempSync(join(tmpdir(), 'sov-profile-')), {
    executablePath: process.env['SOV_CHROMIUM'] ?? '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-sync'],
  });
  const page = context.pages()[0] ?? (await context.newPage());
  await page.goto(relay.url);
  await page.evaluate(async () => {
    await navigator.serviceWorker.ready;
  });
  const cdp = await context.newCDPSession(page);
  await expect
    .poll(async () => {
      const result = (await cdp.send('Page.getInstallabilityErrors')) as { installabilityErrors: unknown[] };
      return result.installabilityErrors;
    })
    .toEqual([]);
  const manifest = (await (await fetch(`${relay.url}/manifest.webmanifest`)).json()) as {
    icons: { purpose?: string }[];
  };
  expect(manifest.icons.some((icon) => icon.purpose === 'maskable')).toBe(true);
  await context.close();
});
