/**
 * A headless machine (src/cli/headless.ts, the wiring `sov node` runs) in a child process of
 * its own, driven over the IPC channel: the writer of `bench catchup-node`, a separate
 * machine whose work (writing, offering its log, sealing frames) does not run in the
 * reader's process. Every request is answered by one message; the snapshot's pairing
 * codes are reported as they appear.
 *
 *   { t: 'found', dir, relayUrl }        → { t: 'ticket', ticket }
 *   { t: 'answer', inv, confirmed }      → { t: 'answered' }
 *   { t: 'machines', count }             → { t: 'machines' } once it lists `count` machines
 *   { t: 'write', count, inFlight, window } → { t: 'written', windowSeconds, logLength }
 *   { t: 'close' }                       → { t: 'closed' }, then the process exits
 *   (unasked)                            → { t: 'sas', inv, sas } when a joiner's code shows
 *   (any failure)                        → { t: 'error', message }
 */
import { openHeadless, type Headless } from '../../src/cli/headless.ts';
import type { NodeSnapshot } from '../../src/runtime/mesh-node.js';

export type ChildRequest =
  | { readonly t: 'found'; readonly dir: string; readonly relayUrl: string }
  | { readonly t: 'answer'; readonly inv: string; readonly confirmed: boolean }
  | { readonly t: 'machines'; readonly count: number }
  | { readonly t: 'write'; readonly count: number; readonly inFlight: number; readonly window: number }
  | { readonly t: 'close' };

export type ChildReply =
  | { readonly t: 'ticket'; readonly ticket: string }
  | { readonly t: 'answered' }
  | { readonly t: 'machines' }
  | { readonly t: 'written'; readonly windowSeconds: number; readonly logLength: number }
  | { readonly t: 'closed' }
  | { readonly t: 'sas'; readonly inv: string; readonly sas: string }
  | { readonly t: 'error'; readonly message: string };

const reply = (message: ChildReply): void => void process.send!(message);

let machine: Headless | undefined;
let snapshot: NodeSnapshot | undefined;
const waiters: { test: (s: NodeSnapshot) => boolean; resolve: (s: NodeSnapshot) => void }[] = [];
const reported = new Set<string>();

function watch(s: NodeSnapshot): void {
  snapshot = s;
  for (const p of s.pairings) {
    if (p.sas === undefined || reported.has(p.inv)) continue;
    reported.add(p.inv);
    reply({ t: 'sas', inv: p.inv, sas: p.sas });
  }
  for (const w of waiters.splice(0)) {
    if (w.test(s)) w.resolve(s);
    else waiters.push(w);
  }
}

function until(test: (s: NodeSnapshot) => boolean): Promise<NodeSnapshot> {
  if (snapshot && test(snapshot)) return Promise.resolve(snapshot);
  return new Promise((resolve) => waiters.push({ test, resolve }));
}

async function write(count: number, inFlight: number, window: number): Promise<ChildReply> {
  const node = machine!.node;
  let next = 0;
  let windowSeconds = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (next < count) {
        const i = next++;
        const saved = await node.writes.editProfile(`p${String(i).padStart(6, '0')}`, {
          name: `Pump ${String(i).padStart(6, '0')}`,
          location: `shed ${i % 50}`,
          schedule: 'hourly',
          notes: `installed by the bench, unit ${i}`,
        });
        if (!saved.ok) throw new Error(`save ${i} failed: ${saved.error.type}`);
        if (i + 1 === window) windowSeconds = (performance.now() - started) / 1000;
      }
    }),
  );
  // The log as it stands once every save is recorded (a snapshot follows each write).
  const logLength = (await until((s) => s.sync.logLength >= count)).sync.logLength;
  return { t: 'written', windowSeconds, logLength };
}

async function handle(request: ChildRequest): Promise<ChildReply> {
  switch (request.t) {
    case 'found': {
      machine = await openHeadless(request.dir, {
        role: 'server',
        restart: () => reply({ t: 'error', message: 'the writer asked to restart' }),
      });
      machine.node.subscribe(watch);
      await machine.node.pairing.found('writer', request.relayUrl);
      return { t: 'ticket', ticket: await machine.node.pairing.invite() };
    }
    case 'answer':
      await machine!.node.pairing.answer(request.inv, request.confirmed, 'code');
      return { t: 'answered' };
    case 'machines':
      await until((s) => s.machines.length >= request.count);
      return { t: 'machines' };
    case 'write':
      return write(request.count, request.inFlight, request.window);
    case 'close':
      await machine?.close();
      return { t: 'closed' };
  }
}

process.on('message', (request: ChildRequest) => {
  handle(request).then(
    (answer) => {
      reply(answer);
      if (answer.t === 'closed') process.disconnect();
    },
    (e: unknown) => reply({ t: 'error', message: e instanceof Error ? e.message : String(e) }),
  );
});
