/**
 * Vouching (SSP/1 "Adding a machine"): a third machine is admitted because two
 * members who checked it in person vouch for its fingerprint — signed control
 * records that replicate like any other — and an administrator's human then
 * confirms. One vouch is not enough (k = 2 by default): default deny.
 */
import { expect, pair, test, view } from './relay-process.ts';

test('a third machine is vouched in by two members, then admitted by an admin', async ({ browser, relay }) => {
  // Three browsers and a relay on a loaded 2-core CI machine: the whole took 3 minutes there (CI run on
  // a954d35, session 32; 30 s alone here), and B's vouch had not reached A within the default 20 s.
  test.setTimeout(360_000);
  const [a, b] = [await (await browser.newContext()).newPage(), await (await browser.newContext()).newPage()];
  await pair(relay, a, b);
  for (const member of [a, b]) await view(member, 'machines');

  // The ticket the collector used is gone from the admin's screen, and says who used it.
  await expect(a.getByTestId('ticket-used')).toHaveText('collector used the ticket shown here: it admits nobody else.');
  await expect(a.getByTestId('ticket')).toHaveCount(0);
  await a.getByTestId('invite').click();
  const ticket = await a.getByTestId('ticket').inputValue();
  // A ticket not yet used outlives a visit to another view.
  await view(a, 'profiles');
  await view(a, 'machines');
  await expect(a.getByTestId('ticket')).toHaveValue(ticket);
  const c = await (await browser.newContext()).newPage();
  await c.goto(relay.url);
  await c.getByTestId('machine-name').fill('field tablet');
  await c.getByTestId('ticket-input').fill(ticket);
  await c.getByTestId('join-mesh').click();
  await expect(c.getByTestId('join-sas')).toHaveText(/^\d{3} \d{3}$/);
  const fingerprint = (await c.getByTestId('own-fingerprint').textContent())!;

  const request = a.locator('[data-testid="pairing"][data-name="field tablet"]');
  await expect(request.getByTestId('pairing-vouches')).toHaveAttribute('data-count', '0');
  for (const member of [a, b]) {
    await member.getByTestId('vouch-fingerprint').fill(fingerprint);
    await member.getByTestId('vouch').click();
    if (member === a) {
      await expect(request.getByTestId('pairing-vouches')).toHaveAttribute('data-count', '1');
      await expect(request.getByTestId('pairing-admit-vouched')).toHaveCount(0);
    }
  }
  // B's vouch reached A through the state plane (within a batch cycle or two, however loaded).
  await expect(request.getByTestId('pairing-vouches')).toHaveAttribute('data-count', '2', { timeout: 60_000 });
  await expect(request.getByTestId('pairing-vouches')).toContainText('collector');

  await c.getByTestId('join-confirm').click();
  await request.getByTestId('pairing-admit-vouched').click();
  await expect(c.getByTestId('new-profile-name')).toBeVisible();
  await expect(a.getByTestId('machine')).toHaveCount(3);
  await expect(b.getByTestId('machine')).toHaveCount(3);
});

test('a vouch for a malformed fingerprint is refused with a clear error', async ({ browser, relay }) => {
  const [a, b] = [await (await browser.newContext()).newPage(), await (await browser.newContext()).newPage()];
  await pair(relay, a, b);
  await view(b, 'machines');
  await b.getByTestId('vouch-fingerprint').fill('not-a-fingerprint');
  await b.getByTestId('vouch').click();
  await expect(b.getByTestId('error')).toContainText('not a fingerprint');
});
