/**
 * What a relay holds, for privacy audits: every byte of its wire tap (bodies and HTTP heads)
 * and of every file under its data directory, and the byte forms a string or a key could take
 * there if some encoder let it out. Used by the relay-blindness e2e spec, the metadata test
 * (test/cli/metadata.test.ts) and `npm run bench -- metadata`.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { readTap } from '../../src/relay/tap.ts';

/** Every form a string can take in bytes that a careless encoder might use. */
export function forms(text: string): Buffer[] {
  const utf8 = Buffer.from(text, 'utf8');
  return [
    utf8,
    Buffer.from(text, 'utf16le'),
    Buffer.from(utf8.toString('hex'), 'latin1'),
    Buffer.from(utf8.toString('base64').replace(/=+$/, ''), 'latin1'),
    Buffer.from(utf8.toString('base64url').replace(/=+$/, ''), 'latin1'),
  ];
}

/** The forms of raw bytes (a key, a secret): as they are, hex and base64url. */
export function bytesForms(bytes: Uint8Array): Buffer[] {
  const b = Buffer.from(bytes);
  return [b, Buffer.from(b.toString('hex'), 'latin1'), Buffer.from(b.toString('base64url'), 'latin1')];
}

/** Every file under `dir`, recursively, as bytes. */
export function filesUnder(dir: string): Buffer[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? filesUnder(path) : [readFileSync(path)];
  });
}

/** The tap's records (bodies and heads) and every file of the relay's data directory. */
export function relayHoldings(tapFile: string, dataDir: string): Buffer[] {
  const tap = readTap(readFileSync(tapFile)).flatMap((r) => [Buffer.from(r.bytes), Buffer.from(r.head, 'utf8')]);
  return [...tap, ...filesUnder(dataDir)];
}

/** The names of the needles some form of which occurs in any haystack. */
export function hits(
  haystacks: readonly Buffer[],
  needles: readonly (readonly [string, readonly Buffer[]])[],
): string[] {
  return needles.flatMap(([name, variants]) =>
    haystacks.some((h) => variants.some((v) => h.includes(v))) ? [name] : [],
  );
}
