/**
 * `sov` explains itself: every command and subcommand answers --help with exit 0, naming
 * each option it takes (the lists below are written out here, not read from the code) with a
 * default where it has one, and an example; `sov --version` prints the package's version; a
 * command nobody defined is a usage error (exit 2).
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);

async function sov(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, ['src/cli/sov.mjs', ...args]);
    return { code: 0, stdout, stderr };
  } catch (e) {
    const failed = e as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

const OPTIONS: Record<string, readonly string[]> = {
  relay: ['port', 'host', 'data', 'static', 'tls-cert', 'tls-key', 'tap', 'heartbeat', 'founding', 'help'],
  node: ['role', 'data', 'name', 'join', 'help'],
  'object write': [
    'csv',
    'out',
    'row-group-size',
    'domain',
    'table',
    'time-column',
    'print-dek',
    'print-secret',
    'help',
  ],
  'parquet read': ['footer-key', 'column-key', 'aad-prefix', 'duckdb-no-aad', 'csv', 'help'],
  bench: ['help'],
};

describe('sov --help', () => {
  it.each(['--help', '-h', 'help'])('`sov %s` lists every command and exits 0', async (flag) => {
    const { code, stdout } = await sov(flag);
    expect(code).toBe(0);
    for (const command of ['relay', 'node', 'object', 'parquet', 'bench']) expect(stdout).toContain(`  ${command} `);
  });

  it.each(Object.entries(OPTIONS))(
    '`sov %s --help` names each option, a default and an example',
    async (command, options) => {
      const { code, stdout } = await sov(...command.split(' '), '--help');
      expect(code).toBe(0);
      expect(stdout).toMatch(/^usage: sov /);
      for (const option of options) expect(stdout).toContain(`--${option}`);
      expect(stdout).toMatch(/default/);
      expect(stdout).toMatch(/\nexample:\n {2}\S/);
    },
  );

  it('answers `sov object --help` and `sov parquet -h` before the subcommand is named', async () => {
    expect((await sov('object', '--help')).stdout).toBe((await sov('object', 'write', '--help')).stdout);
    expect((await sov('parquet', '-h')).stdout).toBe((await sov('parquet', 'read', '--help')).stdout);
  });

  it('prints the package version', async () => {
    const { version } = JSON.parse(readFileSync('package.json', 'utf8')) as { version: string };
    for (const flag of ['--version', '-V'])
      expect(await sov(flag)).toMatchObject({ code: 0, stdout: `sov ${version}\n` });
  });

  it('refuses no command and an unknown one as usage errors, with the usage on stderr', async () => {
    for (const args of [[], ['launch']]) {
      const { code, stdout, stderr } = await sov(...args);
      expect(code).toBe(2);
      expect(stdout).toBe('');
      expect(stderr).toContain('sov COMMAND --help');
    }
    expect((await sov('launch')).stderr).toContain("unknown command 'launch'");
  });
});
