/**
 * Hand-made MLS framing (RFC 9420 §6.3.1) for sequencer tests: the framing a
 * relay reads, around random ciphertext no key opens. Real commits from ts-mls
 * are used where members must process them (test/mls/domains.test.ts).
 */
import { concat } from '../../src/core/bytes.js';
import { commitAuthenticatedData, encodeBundle } from '../../src/core/mls/bundle.js';

function vector(bytes: Uint8Array): Uint8Array {
  if (bytes.length < 0x40) return concat(Uint8Array.of(bytes.length), bytes);
  if (bytes.length < 0x4000) return concat(Uint8Array.of(0x40 | (bytes.length >> 8), bytes.length & 0xff), bytes);
  throw new Error('mls-frames: test vectors stay short');
}

function u64(n: number): Uint8Array {
  const out = new Uint8Array(8);
  new DataView(out.buffer).setBigUint64(0, BigInt(n));
  return out;
}

const CONTENT = { application: 1, proposal: 2, commit: 3 } as const;

export function privateMessage(
  group: Uint8Array,
  epoch: number,
  content: keyof typeof CONTENT,
  authenticatedData: Uint8Array,
  filler = 1,
): Uint8Array {
  return concat(
    Uint8Array.of(0, 1, 0, 2),
    vector(group),
    u64(epoch),
    Uint8Array.of(CONTENT[content]),
    vector(authenticatedData),
    vector(new Uint8Array(16).fill(filler)),
    vector(new Uint8Array(48).fill(filler)),
  );
}

export const welcomeMessage = (): Uint8Array => concat(Uint8Array.of(0, 1, 0, 3), new Uint8Array(40).fill(9));

/** A PublicMessage (RFC 9420 §6.2), a commit unless told: from a member (leaf 0) or from a new member (an external commit). */
export function publicCommit(
  group: Uint8Array,
  epoch: number,
  sender: 'member' | 'new_member_commit',
  authenticatedData: Uint8Array,
  content: keyof typeof CONTENT = 'commit',
): Uint8Array {
  return concat(
    Uint8Array.of(0, 1, 0, 1),
    vector(group),
    u64(epoch),
    sender === 'member' ? Uint8Array.of(1, 0, 0, 0, 0) : Uint8Array.of(4),
    vector(authenticatedData),
    Uint8Array.of(CONTENT[content]),
    vector(new Uint8Array(40).fill(7)),
  );
}

/** A bundle of an external commit (sender type new_member_commit) posted by `endpoint`. */
export function externalCommit(group: Uint8Array, epoch: number, endpoint: Uint8Array): Uint8Array {
  return encodeBundle({
    commit: publicCommit(group, epoch, 'new_member_commit', commitAuthenticatedData(endpoint)),
    welcome: undefined,
    kek: undefined,
  });
}

/** A bundle whose commit at `epoch` is posted by `endpoint`; `variant` makes distinct bundles for one epoch. */
export function fakeBundle(group: Uint8Array, epoch: number, endpoint: Uint8Array, variant = 1): Uint8Array {
  return encodeBundle({
    commit: privateMessage(group, epoch, 'commit', commitAuthenticatedData(endpoint), variant),
    welcome: welcomeMessage(),
    kek: privateMessage(group, epoch + 1, 'application', new Uint8Array(), variant),
  });
}
