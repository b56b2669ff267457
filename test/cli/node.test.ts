/**
 * `sov node` as an operator starts it (a child process of `sov`): wrong
 * arguments are refused with the usage and exit code 2 before anything is
 * written; a machine in no mesh refuses to run without `--join`; a join with no
 * ticket, or a ticket that does not decode, is refused with exit code 1, and the
 * ticket's text never appears in the output.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

type Ran = { readonly code: number | null; readonly stdout: string; readonly stderr: string };

/** Runs `sov node ARGS`, writing `stdin` (then closing it); resolves when the process exits. */
function sovNode(args: readonly string[], stdin = ''): Promise<Ran> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['src/cli/sov.mjs', 'node', ...args], { stdio: 'pipe' });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(stdin);
  });
}

const root = mkdtempSync(join(tmpdir(), 'sov-node-cli-'));
let runs = 0;
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('sov node', () => {
  it.each([
    { args: [], why: /--role must be server or archive/ },
    { args: ['--role', 'relay', '--data', 'x'], why: /--role must be server or archive/ },
    { args: ['--role', 'server'], why: /--data DIR is required/ },
    { args: ['--role', 'archive', '--data', 'x', '--ticket', 'abc'], why: /Unknown option '--ticket'/ },
    { args: ['--role', 'server', '--data'], why: /argument missing/ },
  ])(
    'refuses $args with the usage, exit code 2, and writes nothing',
    async ({ args, why }) => {
      const data = join(root, `usage-${++runs}`);
      const ran = await sovNode(args.map((a) => (a === 'x' ? data : a)));
      expect(ran.code).toBe(2);
      expect(ran.stderr).toMatch(why);
      expect(ran.stderr).toContain('usage: sov node --role server|archive --data DIR');
      expect(existsSync(data)).toBe(false);
    },
    30_000,
  );

  it('refuses to run a machine that is in no mesh yet without --join', async () => {
    const ran = await sovNode(['--role', 'server', '--data', join(root, 'new')]);
    expect(ran.code).toBe(2);
    expect(ran.stdout).toMatch(/in no mesh yet: run with --join/);
  }, 60_000);

  it('refuses a join with no ticket on standard input', async () => {
    const ran = await sovNode(['--role', 'archive', '--data', join(root, 'no-ticket'), '--join']);
    expect(ran.code).toBe(1);
    expect(ran.stdout).toMatch(/join refused: no ticket on standard input/);
  }, 60_000);

  it('refuses a ticket that does not decode, and never prints it', async () => {
    const ticket = 'sov1-not-a-real-ticket-9f2c41d7e0aa';
    const ran = await sovNode(['--role', 'server', '--data', join(root, 'bad-ticket'), '--join'], `${ticket}\n`);
    expect(ran.code).toBe(1);
    expect(ran.stdout).toMatch(/join refused: \w+/);
    expect(ran.stdout + ran.stderr).not.toContain(ticket);
    expect(ran.stdout + ran.stderr).not.toContain('9f2c41d7e0aa');
  }, 60_000);
});
