/**
 * A headless admin that founds a mesh, publishes OBJECTS catalog entries in GENERAL
 * (catalog-seed.ts) and rotates GENERAL's key, reporting the rewrap's progress to its parent
 * (`process.send`): `{t: 'progress', gen, done, total}`. The crash test kills it with SIGKILL
 * while the rewrap runs (test/cli/rotation-crash.test.ts).
 *
 *   node --import tsx test/helpers/rotating-node.ts DATA_DIR RELAY_URL OBJECTS
 */
import { openHeadless } from '../../src/cli/headless.ts';
import { seedCatalog } from './catalog-seed.ts';

async function main(): Promise<void> {
  const [dir, relayUrl, count] = process.argv.slice(2);
  if (!dir || !relayUrl || !count) throw new Error('usage: rotating-node DATA_DIR RELAY_URL OBJECTS');
  const machine = await openHeadless(dir, { role: 'server', restart: () => process.exit(3) });
  let ready: () => void = () => undefined;
  const online = new Promise<void>((resolve) => (ready = resolve));
  machine.node.subscribe((s) => {
    if (s.relay === 'ready') ready();
    const r = s.domains.find((d) => d.domain === 'GENERAL')?.rewrap;
    if (r) process.send?.({ t: 'progress', gen: r.gen, done: r.done, total: r.total });
  });
  await machine.node.pairing.found('admin', relayUrl);
  await online;
  await seedCatalog(machine, 'GENERAL', Number(count));
  const rotated = await machine.node.domains.rotate('GENERAL');
  if (!rotated.ok) throw new Error(`rotation refused: ${rotated.error.type}`);
}

main().catch((e: unknown) => {
  process.stderr.write(`rotating-node: ${e instanceof Error ? e.message : String(e)}\n`);
  process.exit(1);
});
