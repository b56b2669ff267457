/**
 * Headless machines as `sov node` wires them (src/cli/headless.ts), for tests that run a mesh of
 * them through a real relay: opening one by name under a directory, waiting for a snapshot, and
 * the pairing ceremony with both humans comparing the code.
 */
import { join } from 'node:path';
import { expect } from 'vitest';
import { openHeadless, type Headless } from '../../src/cli/headless.ts';
import type { NodeSnapshot } from '../../src/runtime/mesh-node.js';

/** Opens machines by name under `dir` (each its own data directory); a restart request fails the test. */
export function machinesIn(dir: string) {
  return (name: string, role: 'server' | 'archive' = 'server'): Promise<Headless> =>
    openHeadless(join(dir, name), {
      role,
      restart: () => {
        throw new Error(`${name} asked to restart`);
      },
    });
}

/** The first snapshot of `machine` for which `done` holds (the current one included). */
export function until(machine: Headless, done: (s: NodeSnapshot) => boolean, what: string): Promise<NodeSnapshot> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`timed out waiting until ${what}`)), 60_000);
    const stop = machine.node.subscribe((s) => {
      if (!done(s)) return;
      clearTimeout(timer);
      queueMicrotask(() => stop());
      resolve(s);
    });
  });
}

/** `machine` founds a mesh, as `name`, on the relay listening on `port`, and is online. */
export async function foundHeadless(machine: Headless, name: string, port: number): Promise<void> {
  const ready = until(machine, (s) => s.relay === 'ready', `${name} is online`);
  await machine.node.pairing.found(name, `ws://127.0.0.1:${port}/ws`);
  await ready;
}

/** `joiner` pairs with the admin `inviter`, both comparing the code as their humans would. */
export async function pairHeadless(inviter: Headless, joiner: Headless, name: string): Promise<void> {
  const ticket = await inviter.node.pairing.invite();
  const joined = await joiner.node.pairing.join(ticket, name);
  expect(joined.ok).toBe(true);
  const asking = await until(inviter, (s) => s.pairings.some((p) => p.sas !== undefined), `${name} asks to join`);
  const pairing = asking.pairings.find((p) => p.sas !== undefined)!;
  const shown = await until(joiner, (s) => s.join.sas !== undefined, `${name} shows the code`);
  expect(shown.join.sas).toBe(pairing.sas);
  await joiner.node.pairing.answerJoin(true);
  await inviter.node.pairing.answer(pairing.inv, true, 'code');
  await until(joiner, (s) => s.status === 'member' && s.relay === 'ready', `${name} is a member`);
}
