/**
 * `sov node` as a child process for tests of its command line and its API: its output lines,
 * a start that resolves once a line matches, and a stop.
 */
import { spawn, type ChildProcess } from 'node:child_process';

export type SovNode = { child: ChildProcess; lines: string[]; exited: Promise<number | null> };

/** `sov node` with `args`; resolves once a line matches `until` (rejects after 60 s or on exit). */
export async function sovNode(args: readonly string[], until: RegExp): Promise<SovNode> {
  const child = spawn(process.execPath, ['src/cli/sov.mjs', 'node', ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
  const lines: string[] = [];
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`sov node printed nothing matching ${until}:\n${lines.join('\n')}`)),
      60_000,
    );
    const take = (d: Buffer) => {
      lines.push(...d.toString().split('\n').filter(Boolean));
      if (lines.some((l) => until.test(l))) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout.on('data', take);
    child.stderr.on('data', take);
    void exited.then(() => {
      clearTimeout(timer);
      if (!lines.some((l) => until.test(l))) reject(new Error(`sov node exited:\n${lines.join('\n')}`));
    });
  });
  return { child, lines, exited };
}

export async function stop(node: SovNode): Promise<void> {
  if (node.child.exitCode === null) node.child.kill('SIGTERM');
  await node.exited;
}
