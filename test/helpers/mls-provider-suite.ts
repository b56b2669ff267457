/**
 * The MlsProvider acceptance suite (core/mls/provider.ts), run against every
 * provider: groups of real leaf bindings, adds with Welcomes, application
 * messages, removal, competing commits for one epoch (the staged state is
 * dropped, the winner processed), rejoin by external commit, the keyring's
 * veto on credentials, and hostile bytes answered with typed failures.
 */
import { ed25519 } from '@noble/curves/ed25519.js';
import { describe, expect, it } from 'vitest';
import { bytesEqual, toHex, utf8 } from '../../src/core/bytes.js';
import { bindLeaf, leafAuthenticator } from '../../src/core/mls/leaf-binding.js';
import type { KeyPackagePair, MlsProvider } from '../../src/core/mls/provider.js';
import type { Signer } from '../../src/core/ports.js';
import type { Result } from '../../src/core/result.js';

export type ProviderFactory = (authenticate: Parameters<typeof leafAuthenticator>[0]) => Promise<MlsProvider>;

function testSigner(seed: number): Signer {
  const secret = new Uint8Array(32).fill(seed);
  return { publicKey: ed25519.getPublicKey(secret), sign: (m) => Promise.resolve(ed25519.sign(m, secret)) };
}

function value<T>(result: Result<T, { reason: string }>): T {
  if (!result.ok) throw new Error(result.error.reason);
  return result.value;
}

type Member = {
  readonly machine: Signer;
  readonly identity: Uint8Array;
  readonly keys: KeyPackagePair;
  state: Uint8Array;
};

export function mlsProviderSuite(name: string, factory: ProviderFactory): void {
  describe(`MlsProvider acceptance: ${name}`, () => {
    const admitted = new Set<string>();
    const make = () => factory(async (machine) => admitted.has(toHex(machine)));

    async function member(p: MlsProvider, seed: number, admit = true): Promise<Member> {
      const machine = testSigner(seed);
      if (admit) admitted.add(toHex(machine.publicKey));
      const key = await p.signatureKey();
      const identity = await bindLeaf(machine, key.publicKey);
      return { machine, identity, keys: await p.keyPackage(identity, key), state: new Uint8Array() };
    }

    /** A founds a group and adds B and C in one commit; all three at epoch 1. */
    async function trio(p: MlsProvider) {
      const [a, b, c] = [await member(p, 1), await member(p, 2), await member(p, 3)];
      a.state = value(await p.createGroup(utf8('group-trio'), a.keys));
      const staged = value(
        await p.commit(a.state, {
          add: [b.keys.publicPackage, c.keys.publicPackage],
          remove: [],
          authenticatedData: utf8('ad'),
        }),
      );
      a.state = staged.state;
      b.state = value(await p.join(staged.welcome!, b.keys));
      c.state = value(await p.join(staged.welcome!, c.keys));
      return { a, b, c };
    }

    it('agrees on the epoch authenticator across members, and a new one each epoch', async () => {
      const p = await make();
      const { a, b } = await trio(p);
      const auth = (state: Uint8Array) => toHex(value(p.summary(state)).epochAuthenticator);
      expect(auth(a.state)).toBe(auth(b.state));
      const before = auth(a.state);
      const staged = value(await p.commit(a.state, { add: [], remove: [], authenticatedData: utf8('e') }));
      const processed = value(await p.process(b.state, staged.commit));
      expect(processed.kind).toBe('commit');
      expect(auth(processed.state)).toBe(auth(staged.state));
      expect(auth(staged.state)).not.toBe(before);
    });

    it('adds members by Welcome; every member sees the same group, epoch and members', async () => {
      const p = await make();
      const { a, b, c } = await trio(p);
      const views = [a, b, c].map((m) => value(p.summary(m.state)));
      for (const v of views) {
        expect(v.epoch).toBe(1n);
        expect(toHex(v.groupId)).toBe(toHex(utf8('group-trio')));
        expect(v.members.map(toHex)).toEqual([a, b, c].map((m) => toHex(m.identity)));
      }
      expect(toHex(views[1]!.self)).toBe(toHex(b.identity));
    });

    it('carries application messages between members', async () => {
      const p = await make();
      const { a, b, c } = await trio(p);
      const sent = value(await p.encrypt(a.state, utf8('generation 2')));
      a.state = sent.state;
      for (const m of [b, c]) {
        const got = value(await p.process(m.state, sent.message));
        if (got.kind !== 'application') throw new Error('expected an application message');
        expect(new TextDecoder().decode(got.message)).toBe('generation 2');
        m.state = got.state;
      }
    });

    it('removes a member: the rest move on, and the removed one cannot read the new epoch', async () => {
      const p = await make();
      const { a, b, c } = await trio(p);
      const staged = value(await p.commit(a.state, { add: [], remove: [c.identity], authenticatedData: utf8('ad') }));
      a.state = staged.state;
      const atB = value(await p.process(b.state, staged.commit));
      expect(atB.kind === 'commit' && atB.epoch).toBe(2n);
      b.state = atB.state;
      expect(value(p.summary(b.state)).members.map(toHex)).toEqual([a, b].map((m) => toHex(m.identity)));
      const secret = value(await p.encrypt(a.state, utf8('after removal')));
      expect((await p.process(c.state, secret.message)).ok).toBe(false);
      expect((await p.process(b.state, secret.message)).ok).toBe(true);
    });

    it('two commits for one epoch: the loser drops its staged state and processes the winner', async () => {
      const p = await make();
      const { a, b, c } = await trio(p);
      const d = await member(p, 4);
      const e = await member(p, 5);
      const fromA = value(
        await p.commit(a.state, { add: [d.keys.publicPackage], remove: [], authenticatedData: utf8('a') }),
      );
      const fromB = value(
        await p.commit(b.state, { add: [e.keys.publicPackage], remove: [], authenticatedData: utf8('b') }),
      );
      // The sequencer took B's: A never adopts its staged state.
      b.state = fromB.state;
      a.state = value(await p.process(a.state, fromB.commit)).state;
      c.state = value(await p.process(c.state, fromB.commit)).state;
      const views = [a, b, c].map((m) => value(p.summary(m.state)));
      expect(new Set(views.map((v) => v.epoch))).toEqual(new Set([2n]));
      expect(views.every((v) => v.members.some((id) => bytesEqual(id, e.identity)))).toBe(true);
      expect(views.some((v) => v.members.some((id) => bytesEqual(id, d.identity)))).toBe(false);
      // And the group still talks.
      const hello = value(await p.encrypt(a.state, utf8('on the new epoch')));
      expect((await p.process(b.state, hello.message)).ok).toBe(true);
      // A's own commit, staged but never adopted, is simply dropped.
      expect(fromA.commit.length).toBeGreaterThan(0);
    });

    it('lets a member that lost its state rejoin by external commit', async () => {
      const p = await make();
      const { a, b, c } = await trio(p);
      const info = value(await p.groupInfo(a.state));
      // C lost its state and with it its leaf key: a new key, a new binding, the same machine.
      const key = await p.signatureKey();
      const identity = await bindLeaf(c.machine, key.publicKey);
      const keys = await p.keyPackage(identity, key);
      const staged = value(await p.rejoin(info, keys, utf8('ad')));
      a.state = value(await p.process(a.state, staged.commit)).state;
      b.state = value(await p.process(b.state, staged.commit)).state;
      const rejoined = staged.state;
      const ping = value(await p.encrypt(rejoined, utf8('back')));
      expect((await p.process(a.state, ping.message)).ok).toBe(true);
      // C's old leaf is still there until the next commit removes it.
      const members = value(p.summary(a.state)).members;
      expect(members.some((m) => bytesEqual(m, identity))).toBe(true);
      expect(members.some((m) => bytesEqual(m, b.identity))).toBe(true);
    });

    it('refuses to add a machine the keyring does not admit', async () => {
      const p = await make();
      const a = await member(p, 11);
      const stranger = await member(p, 12, false);
      a.state = value(await p.createGroup(utf8('group-veto'), a.keys));
      const staged = await p.commit(a.state, {
        add: [stranger.keys.publicPackage],
        remove: [],
        authenticatedData: utf8('ad'),
      });
      expect(staged.ok).toBe(false);
      if (!staged.ok) expect(staged.error.type).toBe('MlsRejected');
    });

    it('answers hostile bytes with a typed failure, never a throw', async () => {
      const p = await make();
      const { a, b } = await trio(p);
      const junk = [new Uint8Array(), Uint8Array.of(0, 1, 0, 2, 9), new Uint8Array(300).fill(7)];
      for (const bytes of junk) {
        expect((await p.process(a.state, bytes)).ok).toBe(false);
        expect((await p.join(bytes, b.keys)).ok).toBe(false);
        expect(p.summary(bytes).ok).toBe(false);
        expect((await p.commit(bytes, { add: [], remove: [], authenticatedData: bytes })).ok).toBe(false);
      }
      // The join options and key import refuse what does not decode, too.
      const welcome = value(
        await p.commit(a.state, {
          add: [(await member(p, 9)).keys.publicPackage],
          remove: [],
          authenticatedData: utf8('w'),
        }),
      ).welcome!;
      for (const bytes of junk) {
        expect((await p.join(welcome, b.keys, { ratchetTree: bytes.length ? bytes : Uint8Array.of(1) })).ok).toBe(
          false,
        );
        expect(p.importKeyPackage(bytes, { init: bytes, encryption: bytes, signature: bytes }).ok).toBe(false);
      }
      const sent = value(await p.encrypt(a.state, utf8('x')));
      const tampered = sent.message.slice();
      tampered[tampered.length - 3]! ^= 1;
      expect((await p.process(b.state, tampered)).ok).toBe(false);
      // A replayed message is refused too (its generation's key is gone).
      b.state = value(await p.process(b.state, sent.message)).state;
      expect((await p.process(b.state, sent.message)).ok).toBe(false);
    });
  });
}
