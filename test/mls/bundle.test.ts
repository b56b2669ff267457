/**
 * What a key-less relay checks of a commit bundle (core/mls/bundle.ts), one
 * refusal at a time with the reason it gives: the bundle's own fields, the
 * commit's framing (wire format, content type, group id length, epoch range,
 * the endpoint its authenticated data names), the Welcome and the KEK message.
 * Frames are hand-made (test/helpers/mls-frames.ts): no key is needed to check them.
 */
import { describe, expect, it } from 'vitest';
import { encodeCbor } from '../../src/core/cbor.js';
import { checkBundle, commitAuthenticatedData, decodeBundle, encodeBundle } from '../../src/core/mls/bundle.js';
import { privateMessage, publicCommit, welcomeMessage } from '../helpers/mls-frames.js';

const group = new Uint8Array(16).fill(3);
const poster = new Uint8Array(32).fill(5);
const ad = commitAuthenticatedData(poster);
const commit = privateMessage(group, 7, 'commit', ad);
const kek = privateMessage(group, 8, 'application', new Uint8Array());

const refused = (reason: string) => ({ ok: false, error: { type: 'MalformedBundle', reason } });
const bundle = (parts: { commit?: Uint8Array; welcome?: Uint8Array; kek?: Uint8Array }) =>
  encodeBundle({ commit, welcome: undefined, kek: undefined, ...parts });

describe('a commit bundle', () => {
  it('names its group, epoch and poster, and whether it is an external commit', () => {
    expect(checkBundle(bundle({ welcome: welcomeMessage(), kek }))).toMatchObject({
      ok: true,
      value: { group, epoch: 7, poster, external: false, bundle: { commit, kek } },
    });
    expect(checkBundle(bundle({ commit: publicCommit(group, 7, 'member', ad) }))).toMatchObject({
      ok: true,
      value: { external: false, bundle: { welcome: undefined, kek: undefined } },
    });
    expect(checkBundle(bundle({ commit: publicCommit(group, 7, 'new_member_commit', ad) }))).toMatchObject({
      ok: true,
      value: { external: true },
    });
  });

  it('takes group ids of 1 to 255 bytes and epochs below 2^53 - 1', () => {
    for (const id of [new Uint8Array(1), new Uint8Array(255)]) {
      expect(checkBundle(bundle({ commit: privateMessage(id, 7, 'commit', ad) })).ok).toBe(true);
    }
    const last = Number.MAX_SAFE_INTEGER - 1;
    expect(checkBundle(bundle({ commit: privateMessage(group, last, 'commit', ad) }))).toMatchObject({
      ok: true,
      value: { epoch: last },
    });
  });

  it.each<[string, Uint8Array, string]>([
    ['not CBOR', Uint8Array.of(0xff), 'bundle: '],
    ['an array', encodeCbor([commit]), 'bundle: fields'],
    ['version 2', encodeCbor({ v: 2, commit, welcome: new Uint8Array(), kek: new Uint8Array() }), 'bundle: fields'],
    ['without its kek field', encodeCbor({ v: 1, commit, welcome: new Uint8Array() }), 'bundle: fields'],
    [
      'with a field too many',
      encodeCbor({ v: 1, commit, welcome: new Uint8Array(), kek: new Uint8Array(), x: 1 }),
      'bundle: fields',
    ],
    [
      'an empty commit',
      encodeCbor({ v: 1, commit: new Uint8Array(), welcome: new Uint8Array(), kek: new Uint8Array() }),
      'bundle: field types',
    ],
    [
      'a commit as text',
      encodeCbor({ v: 1, commit: 'c', welcome: new Uint8Array(), kek: new Uint8Array() }),
      'bundle: field types',
    ],
    ['a welcome as a number', encodeCbor({ v: 1, commit, welcome: 0, kek: new Uint8Array() }), 'bundle: field types'],
    ['a kek as text', encodeCbor({ v: 1, commit, welcome: new Uint8Array(), kek: '' }), 'bundle: field types'],
    [
      'a commit that is not MLS',
      bundle({ commit: Uint8Array.of(0, 2, 0, 2) }),
      'bundle: commit: mls: unsupported protocol version 2',
    ],
    ['a Welcome as its commit', bundle({ commit: welcomeMessage() }), 'bundle: commit is a welcome'],
    [
      'an application message as its commit',
      bundle({ commit: privateMessage(group, 7, 'application', ad) }),
      'bundle: commit carries application content',
    ],
    [
      'an empty group id',
      bundle({ commit: privateMessage(new Uint8Array(), 7, 'commit', ad) }),
      'bundle: group id length',
    ],
    [
      'a group id of 256 bytes',
      bundle({ commit: privateMessage(new Uint8Array(256), 7, 'commit', ad) }),
      'bundle: group id length',
    ],
    [
      'epoch 2^53 - 1',
      bundle({ commit: privateMessage(group, Number.MAX_SAFE_INTEGER, 'commit', ad) }),
      'bundle: epoch beyond 2^53',
    ],
    [
      'no authenticated data',
      bundle({ commit: privateMessage(group, 7, 'commit', new Uint8Array()) }),
      'bundle: commit authenticated_data does not name its endpoint',
    ],
    [
      'authenticated data with a field too many',
      bundle({ commit: privateMessage(group, 7, 'commit', encodeCbor({ ep: poster, x: 1 })) }),
      'bundle: commit authenticated_data does not name its endpoint',
    ],
    [
      'an endpoint of 31 bytes',
      bundle({ commit: privateMessage(group, 7, 'commit', encodeCbor({ ep: poster.subarray(1) })) }),
      'bundle: commit authenticated_data does not name its endpoint',
    ],
    [
      'authenticated data that is an array',
      bundle({ commit: privateMessage(group, 7, 'commit', encodeCbor([poster])) }),
      'bundle: commit authenticated_data does not name its endpoint',
    ],
    [
      'authenticated data that is not CBOR',
      bundle({ commit: privateMessage(group, 7, 'commit', Uint8Array.of(0xff)) }),
      'bundle: commit authenticated_data does not name its endpoint',
    ],
    ['a welcome that is a commit', bundle({ welcome: commit }), 'bundle: welcome is not an MLS Welcome'],
    ['a welcome that is not MLS', bundle({ welcome: Uint8Array.of(9) }), 'bundle: welcome is not an MLS Welcome'],
    ['a kek that is not MLS', bundle({ kek: Uint8Array.of(9) }), 'bundle: kek is not a private application message'],
    ['a kek that is a Welcome', bundle({ kek: welcomeMessage() }), 'bundle: kek is not a private application message'],
    [
      'a kek that is a public commit',
      bundle({ kek: publicCommit(group, 8, 'member', ad) }),
      'bundle: kek is not a private application message',
    ],
    [
      'a kek that is a public application message',
      bundle({ kek: publicCommit(group, 8, 'member', ad, 'application') }),
      'bundle: kek is not a private application message',
    ],
    [
      'a kek that is a private commit',
      bundle({ kek: privateMessage(group, 8, 'commit', ad) }),
      'bundle: kek is not a private application message',
    ],
    [
      'a kek of the same epoch',
      bundle({ kek: privateMessage(group, 7, 'application', ad) }),
      'bundle: kek message is not of the next epoch of the same group',
    ],
    [
      'a kek of another group',
      bundle({ kek: privateMessage(new Uint8Array(16).fill(4), 8, 'application', ad) }),
      'bundle: kek message is not of the next epoch of the same group',
    ],
  ])('is refused when it is %s', (_, bytes, reason) => {
    const checked = checkBundle(bytes);
    expect(checked.ok).toBe(false);
    if (reason === 'bundle: ') {
      const decoded = decodeBundle(bytes);
      expect(checked).toEqual(decoded);
      expect(!checked.ok && checked.error.reason.startsWith('bundle: cbor')).toBe(true);
    } else {
      expect(checked).toEqual(refused(reason));
    }
  });
});
