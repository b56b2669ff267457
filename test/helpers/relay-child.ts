/**
 * The real relay as a child process (`sov relay`), for the end-to-end tests and the browser
 * benchmarks: a free loopback port, and a start that resolves once the relay listens.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

/**
 * Starts `sov relay --port PORT --data DIR` with `extra` arguments; resolves once it logs that
 * it listens, rejects if it exits first or takes over 20 s. Its log lines go to `stdout`.
 */
export async function spawnRelay(
  port: number,
  dataDir: string,
  extra: readonly string[] = [],
  stdout: (chunk: Buffer) => void = () => undefined,
): Promise<ChildProcess> {
  const child = spawn(
    process.execPath,
    ['src/cli/sov.mjs', 'relay', '--port', String(port), '--data', dataDir, ...extra],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  child.stderr.on('data', (d: Buffer) => process.stderr.write(`[relay] ${d.toString()}`));
  child.stdout.on('data', stdout);
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('relay did not start in 20 s')), 20_000);
    child.stdout.on('data', (d: Buffer) => {
      if (d.toString().includes('listening')) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`relay exited early with ${code}`));
    });
  });
  return child;
}
