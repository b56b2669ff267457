/** Standard input as lines, for `sov node` and `sov node invite` (a ticket, a code, a y). */
import { createInterface } from 'node:readline';

/** Lines of standard input, one at a time. */
export function stdinLines(): { next: () => Promise<string | undefined>; close: () => void } {
  const rl = createInterface({ input: process.stdin, terminal: false });
  const lines: string[] = [];
  const waiting: ((line: string | undefined) => void)[] = [];
  let closed = false;
  rl.on('line', (line) => {
    const next = waiting.shift();
    if (next) next(line);
    else lines.push(line);
  });
  rl.on('close', () => {
    closed = true;
    for (const w of waiting.splice(0)) w(undefined);
  });
  return {
    next: () =>
      new Promise((resolve) => {
        if (lines.length > 0) resolve(lines.shift());
        else if (closed) resolve(undefined);
        else waiting.push(resolve);
      }),
    close: () => rl.close(),
  };
}
