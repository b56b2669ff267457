/**
 * `sov node --data DIR invite`: an admin node invites a machine from a terminal (issue 27).
 * It is a client of the running node's loopback API (found through `DIR/api.url` and
 * `DIR/api.token`, as `sov mcp` is), so the node keeps running and holding its stores:
 *
 *   1. `POST /v1/invitations`: the ticket, printed as text and as a QR code for a tablet's
 *      camera (standard output is the operator's screen, never the node's log);
 *   2. `GET /v1/pairings` until the joiner reveals the six-digit code, printed with the
 *      joiner's name and fingerprint;
 *   3. the operator compares it with the joiner's screen and answers `y` on standard input
 *      (anything else refuses): `POST /v1/pairings/{inv}`;
 *   4. it waits until the machine is admitted (in the status's machines), then exits 0.
 *
 * Exit codes: 0 admitted, 1 refused or failed, 2 usage.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { encode } from 'uqr';
import { NodeApiClient } from '../sdk/client.js';
import { TOKEN_FILE, URL_FILE } from '../node-api/token.js';
import { stdinLines } from './stdin.js';

export const INVITE_USAGE = 'node --data DIR invite   (the node must run with --api)';

/** How long the joiner has to scan the ticket and reveal the code. */
const WAIT_MS = 10 * 60_000;
const POLL_MS = 500;

/**
 * A QR code (ISO/IEC 18004, level M, the 4-module quiet zone) of `text` as terminal lines: two
 * module rows per line in half blocks, dark on light whatever the terminal's colours when
 * `colour` (a TTY), plain blocks otherwise.
 */
export function terminalQr(text: string, colour: boolean): string[] {
  const code = encode(Array.from(new TextEncoder().encode(text)), { ecc: 'M', border: 4 });
  const rows = code.data;
  const lines: string[] = [];
  for (let y = 0; y < rows.length; y += 2) {
    let line = '';
    for (let x = 0; x < rows[y]!.length; x++) {
      const top = rows[y]![x]!;
      const bottom = rows[y + 1]?.[x] ?? false;
      line += top && bottom ? '█' : top ? '▀' : bottom ? '▄' : ' ';
    }
    lines.push(colour ? `\x1b[30;47m${line}\x1b[0m` : line);
  }
  return lines;
}

export async function inviteMain(data: string): Promise<number> {
  const say = (line: string): void => void process.stdout.write(`sov node: ${line}\n`);
  let api: NodeApiClient;
  try {
    const url = readFileSync(join(data, URL_FILE), 'utf8').trim();
    api = new NodeApiClient({ url, token: readFileSync(join(data, TOKEN_FILE), 'utf8').trim() });
  } catch {
    say(`no running node to invite through in ${data}: start it with --api 127.0.0.1:PORT first`);
    return 1;
  }
  const before = await api.pairings();
  if (!before.ok) {
    say(`the node does not answer: ${before.error.type} ${before.error.reason}`);
    return 1;
  }
  const earlier = new Set(before.value.pairings.map((p) => p.inv));
  const invited = await api.invite();
  if (!invited.ok) {
    say(`invitation refused: ${invited.error.reason || invited.error.type}`);
    return 1;
  }
  const { ticket } = invited.value;
  say('pairing ticket (it holds the mesh secret: hand it over in person, never by mail or chat):');
  process.stdout.write(`${ticket}\n\n${terminalQr(ticket, process.stdout.isTTY).join('\n')}\n\n`);
  say('waiting for the machine to scan or paste it…');

  const asking = await poll(async () => {
    const p = await api.pairings();
    return p.ok ? p.value.pairings.find((x) => !earlier.has(x.inv) && x.sas !== undefined) : undefined;
  });
  if (!asking) {
    say('no machine answered the invitation in 10 minutes');
    return 1;
  }
  say(`${asking.name} (fingerprint ${asking.fingerprint}) shows pairing code ${asking.sas!}`);
  // Admitted: one more machine of that name in the mesh than before the answer.
  const named = async (): Promise<number | undefined> => {
    const s = await api.status();
    return s.ok ? s.value.machines.filter((m) => m.name === asking.name && !m.removed).length : undefined;
  };
  const namedBefore = (await named()) ?? 0;
  process.stdout.write('Does the joining machine show the same code? [y/N] ');
  const input = stdinLines();
  const answer = (await input.next())?.trim() ?? '';
  // Nothing more is read: standard input must not keep the process alive.
  input.close();
  process.stdin.destroy();
  const confirmed = /^y(es)?$/i.test(answer);
  const answered = await api.answerPairing(asking.inv, confirmed);
  if (!answered.ok) {
    say(`the answer was not taken: ${answered.error.type}`);
    return 1;
  }
  if (!confirmed) {
    say('refused: the machine is not admitted');
    return 1;
  }
  const admitted = await poll(async () => ((await named()) ?? 0) > namedBefore || undefined);
  say(admitted ? `${asking.name} is admitted` : `${asking.name} was not admitted in 10 minutes`);
  return admitted ? 0 : 1;
}

async function poll<T>(look: () => Promise<T | undefined>): Promise<T | undefined> {
  const deadline = Date.now() + WAIT_MS;
  while (Date.now() < deadline) {
    const found = await look();
    if (found !== undefined) return found;
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
  return undefined;
}
