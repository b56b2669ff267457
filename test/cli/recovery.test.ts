/**
 * Disaster recovery end to end on headless machines as `sov node` wires them, through a real
 * relay (issue 24): an admin publishes objects and makes a recovery kit (a checkpoint follows
 * at once); a fresh machine given only the kit, its code and the relay restores the catalog
 * and answers the admin's query. A wrong code changes nothing; a relay that lost an object's
 * ciphertext while the archive is away, or the checkpoint, leaves the machine recovering and
 * saying which (`sov node --restore` too); the archive, back, gives the relay the object again
 * and the restore completes.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { Headless } from '../../src/cli/headless.ts';
import { toHex } from '../../src/core/bytes.js';
import { blake3 } from '../../src/core/hash.js';
import type { NodeSnapshot } from '../../src/runtime/mesh-node.js';
import type { RecoveryStatus } from '../../src/runtime/mesh-recovery.js';
import { ROOTS_PER_PAGE } from '../../src/runtime/recovery-objects.js';
import { foundHeadless, machinesIn, pairHeadless, until } from '../helpers/headless-mesh.ts';
import { freePort, spawnRelay } from '../helpers/relay-child.ts';

/** `n` junk roots, as many as a bounded search finds with ids sorting before `before`, the rest any. */
function junkRoots(n: number, before: string): Uint8Array[] {
  const out: Uint8Array[] = [];
  for (let tries = 0; out.length < n && tries < 1_000_000; tries++) {
    const bytes = randomBytes(48);
    if (toHex(blake3(bytes)) < before) out.push(bytes);
  }
  while (out.length < n) out.push(randomBytes(48));
  return out;
}

const dir = mkdtempSync(join(tmpdir(), 'sov-recovery-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const open = machinesIn(dir);

/** Runs `sov node` on a fresh data directory with `stdin` until a line matches `until`; that line. */
function sovNode(args: readonly string[], stdin: string, until: RegExp): Promise<string> {
  const data = mkdtempSync(join(dir, 'cli-'));
  const child = spawn(process.execPath, ['src/cli/sov.mjs', 'node', '--role', 'server', '--data', data, ...args], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  child.stdin.end(`${stdin}\n`);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`sov node printed nothing matching ${until}`));
    }, 60_000);
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      const line = out.split('\n').find((l) => until.test(l));
      if (!line) return;
      clearTimeout(timer);
      child.kill('SIGTERM');
      resolve(line);
    });
  });
}

const settled = (s: NodeSnapshot) => s.recovery !== undefined && s.recovery.state !== 'restoring';

/** A fresh machine restored from the kit (it starts again once the kit is in, as a page reloads). */
async function restore(name: string, kit: { file: Uint8Array; code: string }): Promise<[Headless, RecoveryStatus]> {
  const fresh = await open(name);
  const imported = await fresh.node.recovery.importKit(kit.file, kit.code);
  expect(imported.ok).toBe(true);
  await fresh.close();
  const again = await open(name);
  const status = (await until(again, settled, `${name} restored or said what is missing`)).recovery!;
  return [again, status];
}

describe('disaster recovery', () => {
  it('restores a mesh from its kit and a relay, and names what is missing', async () => {
    const port = await freePort();
    const relayDir = join(dir, 'relay');
    let relay = await spawnRelay(port, relayDir);
    /** The relay loses files of its object store (a disk restored from an old backup): it restarts without them. */
    const lose = async (...ids: string[]) => {
      const stopped = new Promise((resolve) => relay.once('exit', resolve));
      relay.kill('SIGTERM');
      await stopped;
      const topicDir = join(relayDir, 'objects', readdirSync(join(relayDir, 'objects'))[0]!);
      for (const id of ids) rmSync(join(topicDir, id));
      relay = await spawnRelay(port, relayDir);
    };
    const machines: Headless[] = [];
    try {
      const admin = await open('admin');
      machines.push(admin);
      await foundHeadless(admin, 'admin', port);
      for (const rows of [300, 200]) {
        const formed = await admin.node.objects.importSample('GENERAL', rows);
        expect(formed.ok).toBe(true);
      }
      await until(
        admin,
        (s) => s.objects.filter((o) => o.state === 'published' && o.uploaded).length === 2,
        'both objects are published and uploaded',
      );
      const sql = 'SELECT device, count(*) AS n FROM measurements GROUP BY device ORDER BY device';
      const expected = await admin.node.objects.query(sql);
      if (!expected.ok) throw new Error(expected.error.type);

      // An archive (a blind storage machine that reads nothing) copies every object, and the checkpoints.
      const archive = await open('archive', 'archive');
      await pairHeadless(admin, archive, 'archive');
      await until(archive, (s) => s.objects.filter((o) => o.held).length === 2, 'the archive holds both objects');

      expect(await admin.node.recovery.checkpoint()).toMatchObject({ ok: false, error: { type: 'NoKit' } });
      const kit = await admin.node.recovery.makeKit();
      if (!kit.ok) throw new Error(kit.error.reason);
      expect(kit.value.code).toMatch(/^[0-9A-Z]{4}(-[0-9A-Z]{4}){6}$/);
      const marked = await until(admin, (s) => s.checkpoint !== undefined, 'a checkpoint is written');
      expect(marked.checkpoint!.kits).toBe(1);
      expect(marked.machines.find((m) => m.signer === kit.value.signer)).toMatchObject({ recovery: true });

      // A wrong code opens nothing and leaves the machine as new as it was.
      const stranger = await open('stranger');
      machines.push(stranger);
      const wrongCode = kit.value.code.startsWith('2')
        ? kit.value.code.replace(/^2/, '3')
        : `2${kit.value.code.slice(1)}`;
      const refused = await stranger.node.recovery.importKit(kit.value.file, wrongCode);
      expect(refused).toMatchObject({ ok: false });
      expect(['MistypedCode', 'WrongCode']).toContain(!refused.ok && refused.error.type);
      expect(stranger.node.subscribe(() => undefined)).toBeTypeOf('function');

      // A member that is not an admin signs a newer root for the kit, with a checkpoint of its own:
      // the restore sets it aside (only an admin's checkpoint may add keys) and takes the admin's.
      const kitFrame = marked.machines.find((m) => m.recovery)!.frame;
      const forged = await archive.services.crypto.sealCheckpoint([], [kitFrame]);
      if (!forged.ok) throw new Error(forged.error.type);
      expect((await archive.services.objects.putRecovery('checkpoints', forged.value.checkpoint)).ok).toBe(true);
      expect((await archive.services.objects.putRecovery('roots', forged.value.root)).ok).toBe(true);

      // Roots that open with nothing fill more than two pages of the listing, sorting before the real
      // ones by id where a bounded search finds such ids: the restore reads every page, not the first few.
      const real = await archive.services.objects.recoveryRoots();
      if (!real.ok) throw new Error(real.error.type);
      expect(real.value.next).toBeUndefined();
      const lowest = real.value.roots.map((r) => toHex(blake3(r))).sort()[0]!;
      for (const junk of junkRoots(2 * ROOTS_PER_PAGE + 20, lowest)) {
        expect((await archive.services.objects.putRecovery('roots', junk)).ok).toBe(true);
      }

      const [restored, status] = await restore('restored', kit.value);
      machines.push(restored);
      expect(status).toMatchObject({ state: 'restored', objects: 2 });
      const answer = await restored.node.objects.query(sql);
      if (!answer.ok) throw new Error(answer.error.type);
      expect(answer.value.rows).toEqual(expected.value.rows);

      await until(archive, (s) => s.objects.filter((o) => o.held).length >= 4, 'the archive holds the checkpoint');
      await archive.close();

      // The relay loses one object's ciphertext while the archive is away: a restore says so, and how many.
      const lost = marked.objects.find((o) => o.state === 'published')!.id;
      await lose(lost);
      const [lacking, missingCiphertext] = await restore('lacking', kit.value);
      machines.push(lacking);
      expect(missingCiphertext).toMatchObject({
        state: 'incomplete',
        missing: [{ part: 'ciphertext', objects: 1, of: 2 }],
      });
      // `sov node --restore KIT` (the code on standard input) says the same.
      const kitFile = join(dir, 'mesh.sovkit');
      writeFileSync(kitFile, kit.value.file);
      expect(await sovNode(['--restore', kitFile], kit.value.code, /recovery=incomplete missing ciphertext/)).toMatch(
        /1 of 2 objects are on no store/,
      );
      expect(await sovNode(['--restore', kitFile], 'AAAA-AAAA', /restore refused/)).toMatch(/mistyped/);

      // The archive comes back and gives the relay the object again: trying again restores.
      const back = await open('archive', 'archive');
      machines.push(back);
      await until(back, (s) => s.notices.some((n) => n.text.includes('gave the relay back 1 objects')), 'a reseed');
      const retried = await lacking.node.recovery.restore();
      expect(retried, JSON.stringify(retried)).toMatchObject({ state: 'restored', objects: 2 });
      await back.close();
      machines.pop();

      // The relay loses the checkpoint: nothing is restored, and the state says the checkpoint.
      await lose(marked.checkpoint!.checkpointId);
      const [, missingCheckpoint] = await restore('no-checkpoint', kit.value);
      expect(missingCheckpoint).toMatchObject({ state: 'incomplete', missing: [{ part: 'checkpoint' }] });
      expect(missingCheckpoint.state === 'incomplete' && missingCheckpoint.missing[0]!.reason).toMatch(/does not hold/);
    } finally {
      for (const m of machines) await m.close();
      relay.kill('SIGTERM');
    }
  }, 240_000);
});
