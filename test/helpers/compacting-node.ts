/**
 * A headless admin, already a member of a mesh, that compacts the `measurements` objects of
 * GENERAL and reports how far it got to its parent (`process.send`): `{t: 'forming'}` right
 * before the compaction is formed, `{t: 'formed'}` once it is kept here, waiting for
 * publication, and `{t: 'published'}` once its catalog row is written. The crash test kills
 * it with SIGKILL at one of those points (test/cli/compaction-crash.test.ts).
 *
 *   node --import tsx test/helpers/compacting-node.ts DATA_DIR
 */
import { openHeadless } from '../../src/cli/headless.ts';

type Step = 'forming' | 'formed' | 'published';
const say = (t: Step) => process.send?.({ t });

async function main(): Promise<void> {
  const [dir] = process.argv.slice(2);
  if (!dir) throw new Error('usage: compacting-node DATA_DIR');
  const machine = await openHeadless(dir, { role: 'server', restart: () => process.exit(3) });
  let compaction: string | undefined;
  let ready: () => void = () => undefined;
  const online = new Promise<void>((resolve) => (ready = resolve));
  machine.node.subscribe((s) => {
    if (s.relay === 'ready') ready();
    if (s.objects.some((o) => o.id === compaction && o.state === 'published')) {
      compaction = undefined;
      say('published');
    }
  });
  await online;
  say('forming');
  const compacted = await machine.node.objects.compact('GENERAL', 'measurements');
  if (!compacted.ok) throw new Error(`compaction refused: ${compacted.error.type}`);
  if (!compacted.value) throw new Error('nothing to compact');
  compaction = compacted.value.object.id;
  say('formed');
}

main().catch((e: unknown) => {
  process.stderr.write(`compacting-node: ${e instanceof Error ? e.message : String(e)}\n`);
  process.exit(1);
});
