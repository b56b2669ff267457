/**
 * A tiny mesh for domains on MLS in one process: machines with seeded Ed25519 keys, one
 * keyring of machines and one set of admins, a real ts-mls provider and the blind sequencer
 * the relay runs, with every bundle it accepted kept in order.
 */
import { ed25519 } from '@noble/curves/ed25519.js';
import { toHex } from '../../src/core/bytes.js';
import type { DomainDeps, DomainMember } from '../../src/core/mls/domain.js';
import { leafAuthenticator } from '../../src/core/mls/leaf-binding.js';
import { BlindSequencer, MemorySequencerStore } from '../../src/core/mls/sequencer.js';
import type { Signer } from '../../src/core/ports.js';
import { TsMlsProvider } from '../../src/runtime/mls/ts-mls-provider.js';
import { seededRandom } from './deterministic.js';

export function seededSigner(seed: number): Signer {
  const secret = new Uint8Array(32).fill(seed);
  return { publicKey: ed25519.getPublicKey(secret), sign: (m) => Promise.resolve(ed25519.sign(m, secret)) };
}

export type DomainMachine = { readonly key: Signer; readonly endpoint: Uint8Array; readonly deps: DomainDeps };

export type DomainMeshOptions = {
  /** The relay topic the sequencer files bundles under. */
  readonly topic: Uint8Array;
  /** Names each machine's seeded randomness. */
  readonly label: string;
  /** Accept every leaf, bound to a machine of the keyring or not (to reach paths that check it later). */
  readonly admitAnyLeaf?: boolean;
};

export async function domainMesh(options: DomainMeshOptions) {
  const admins = new Set<string>();
  const keyring = new Set<string>();
  const sequencer = new BlindSequencer({
    store: new MemorySequencerStore(),
    secretKey: new Uint8Array(32).fill(0x5e),
    now: () => 1,
  });
  const accepted: Uint8Array[] = [];
  const provider = await TsMlsProvider.create(
    options.admitAnyLeaf ? async () => true : leafAuthenticator(async (m) => keyring.has(toHex(m))),
  );
  const machine = (seed: number, role: 'admin' | 'member', overrides: Partial<DomainDeps> = {}): DomainMachine => {
    const key = seededSigner(seed);
    keyring.add(toHex(key.publicKey));
    if (role === 'admin') admins.add(toHex(key.publicKey));
    const endpoint = new Uint8Array(32).fill(seed + 100);
    const deps: DomainDeps = {
      provider,
      machine: key,
      endpoint,
      random: seededRandom(`${options.label}-${seed}`),
      isAdmin: async (m) => admins.has(toHex(m)),
      sequence: async (bundle) => {
        const verdict = await sequencer.submit(options.topic, endpoint, bundle);
        if (verdict.ok) accepted.push(bundle);
        return verdict;
      },
      ...overrides,
    };
    return { key, endpoint, deps };
  };
  /** Delivers every accepted bundle to every member, in order (receive is idempotent). */
  const deliver = async (members: readonly DomainMember[]) => {
    for (const m of members) for (const bundle of accepted) await m.receive(bundle);
  };
  return { provider, machine, deliver, accepted, keyring };
}
