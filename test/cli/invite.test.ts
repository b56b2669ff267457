/**
 * `sov node --data DIR invite` against a real `sov node --api` process that founded a mesh on a
 * real relay: the ticket printed as text and as a terminal QR code of exactly that text, the
 * joiner's code shown, `y` on standard input admits the machine; any other answer refuses it;
 * with no API running there is nothing to invite through.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { terminalQr } from '../../src/cli/invite.ts';
import { machinesIn, until } from '../helpers/headless-mesh.ts';
import { freePort, spawnRelay } from '../helpers/relay-child.ts';
import { sovNode, stop } from '../helpers/sov-node.ts';

const dir = mkdtempSync(join(tmpdir(), 'sov-invite-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** `sov node --data DATA invite`, its output as it comes, and its exit code. */
function invite(data: string) {
  const child = spawn(process.execPath, ['src/cli/sov.mjs', 'node', '--data', data, 'invite'], {
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  const waitFor = async (pattern: RegExp): Promise<RegExpExecArray> => {
    const deadline = Date.now() + 60_000;
    for (;;) {
      const found = pattern.exec(out);
      if (found) return found;
      if (Date.now() > deadline || child.exitCode !== null) throw new Error(`invite never printed ${pattern}:\n${out}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  };
  return { child, exited, waitFor, output: () => out };
}

describe('sov node invite', () => {
  it('prints a ticket and its QR code, shows the joiner’s code, and admits it on y', async () => {
    const relayPort = await freePort();
    let relayLog = '';
    const relay = await spawnRelay(relayPort, join(dir, 'relay'), [], (d) => (relayLog += d.toString()));
    const data = join(dir, 'inviter');
    const node = await sovNode(
      [
        ...['--role', 'server', '--data', data, '--name', 'inviter', '--api', `127.0.0.1:${await freePort()}`],
        ...['--found', '--relay', `ws://127.0.0.1:${relayPort}/ws`],
      ],
      /relay=ready/,
    );
    const machine = machinesIn(dir);
    const joiner = await machine('joiner');
    const stranger = await machine('stranger');
    try {
      const admitting = invite(data);
      const [, ticket] = await admitting.waitFor(/never by mail or chat\):\n(\S+)\n/);
      // The QR code printed is the ticket's, module for module (no colour: standard output is a pipe).
      await admitting.waitFor(/waiting for the machine/);
      expect(admitting.output()).toContain(terminalQr(ticket!, false).join('\n'));
      // The node's own log never holds the ticket.
      expect(node.lines.join('\n')).not.toContain(ticket);

      expect((await joiner.node.pairing.join(ticket!, 'joiner')).ok).toBe(true);
      const shown = await until(joiner, (s) => s.join.sas !== undefined, 'the joiner shows the code');
      const [, name, code] = await admitting.waitFor(/(\S+) \(fingerprint [^)]+\) shows pairing code (\d{3} \d{3})/);
      expect([name, code]).toEqual(['joiner', shown.join.sas]);
      await joiner.node.pairing.answerJoin(true);
      admitting.child.stdin.write('y\n');
      expect(await admitting.exited).toBe(0);
      expect(admitting.output()).toMatch(/joiner is admitted/);
      await until(joiner, (s) => s.status === 'member', 'the joiner is a member');

      // Any answer but y refuses.
      const refusing = invite(data);
      const [, second] = await refusing.waitFor(/never by mail or chat\):\n(\S+)\n/);
      expect((await stranger.node.pairing.join(second!, 'stranger')).ok).toBe(true);
      await refusing.waitFor(/shows pairing code/);
      refusing.child.stdin.write('n\n');
      expect(await refusing.exited).toBe(1);
      expect(refusing.output()).toMatch(/refused: the machine is not admitted/);
      expect(stranger.node.status).not.toBe('member');

      // The admission lists the inviter pushed are numbered 1, 2, 3 … — a counter, never its clock
      // (issue 26: a version in milliseconds told the relay when each change was made).
      const versions = [...relayLog.matchAll(/admission list version (\d+)/g)].map((m) => Number(m[1]));
      expect(versions.length).toBeGreaterThanOrEqual(2);
      expect(versions).toEqual(versions.map((_, i) => i + 1));
    } catch (e) {
      throw new Error(`${String(e)}\nnode:\n${node.lines.join('\n')}`, { cause: e });
    } finally {
      await joiner.close();
      await stranger.close();
      await stop(node);
      relay.kill('SIGTERM');
    }
  }, 120_000);

  it('says there is no node to invite through when none runs with --api', async () => {
    const lonely = invite(join(dir, 'nothing-here'));
    expect(await lonely.exited).toBe(1);
    expect(lonely.output()).toMatch(/start it with --api/);
  });
});
