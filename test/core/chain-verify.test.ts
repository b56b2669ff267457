/**
 * Chain-segment verification (src/core/chain-verify.ts): within one ingest
 * batch only the newest event of each hash-linked run of one signer has its
 * signature checked, and every outcome stays what per-event verification gives —
 * a tampered or forged event is rejected with SignatureInvalid, its genuine
 * neighbours still get in, and nothing is accepted through a broken link.
 */
import { everyTablePublic } from '../../src/core/sync-manifest.js';
import { describe, expect, it } from 'vitest';
import { toHex } from '../../src/core/bytes.js';
import { verifyChains } from '../../src/core/chain-verify.js';
import { encodeCbor } from '../../src/core/cbor.js';
import { decodeEvent, signEvent, signingPayload, type EventBody, type SignedEvent } from '../../src/core/event.js';
import { HLC_ZERO } from '../../src/core/hlc.js';
import type { Verifier } from '../../src/core/ports.js';
import { Replica, type IngestOutcome } from '../../src/core/replica.js';
import { decodeSealed, encodeSealed, openSealed, sealEvent } from '../../src/core/seal.js';
import { MemoryReplicaStore } from '../../src/storage/memory-store.js';
import {
  makeMachine,
  makeMesh,
  nobleVerifier,
  seededRandom,
  testClock,
  unsafeTestingSigner,
  type Machine,
  type Mesh,
} from '../helpers/deterministic.js';

/** Counts verifications and remembers which messages were checked. */
function countingVerifier(): Verifier & { calls: number; messages: string[] } {
  const counter = {
    calls: 0,
    messages: [] as string[],
    verify(publicKey: Uint8Array, message: Uint8Array, signature: Uint8Array) {
      counter.calls++;
      counter.messages.push(toHex(message));
      return nobleVerifier.verify(publicKey, message, signature);
    },
  };
  return counter;
}

type Setup = { mesh: Mesh; writers: Machine[]; reader: Replica; verifier: ReturnType<typeof countingVerifier> };

function setup(seed: string, writerCount = 1): Setup {
  const mesh = makeMesh(seed);
  const clock = testClock();
  const writers = Array.from({ length: writerCount }, (_, i) => makeMachine(`w${i}`, `${seed}/w${i}`, mesh, { clock }));
  mesh.anchors.push(...writers.map((w) => w.id));
  const reader = makeMachine('reader', `${seed}/reader`, mesh, { clock });
  const verifier = countingVerifier();
  const replica = new Replica({
    store: new MemoryReplicaStore(),
    signer: reader.signer,
    verifier,
    envelopes: reader.keyring.envelopes(seededRandom(`${seed}/reader-seal`)),
    trust: { self: reader.id, anchors: () => mesh.anchors },
    privacy: everyTablePublic,
    clock,
  });
  return { mesh, writers, reader: replica, verifier };
}

/** Writes `n` edits on `writer` and returns their sealed envelopes in order. */
async function writeMany(writer: Machine, n: number, from = 0): Promise<Uint8Array[]> {
  for (let i = from; i < from + n; i++) {
    const result = await writer.replica.write('device_profiles', `pump-${i % 3}`, { name: `edit ${i}` });
    if (!result.ok) throw new Error(result.error.type);
  }
  return (await writer.store.entriesAfter(from, n)).map((e) => e.sealed);
}

function openWith(mesh: Mesh, envelope: Uint8Array): SignedEvent {
  const sealed = decodeSealed(envelope);
  if (!sealed.ok) throw new Error('test: envelope does not decode');
  const plain = openSealed(sealed.value, (domain) => mesh.keys[domain]);
  if (!plain.ok) throw new Error('test: envelope does not open');
  const event = decodeEvent(plain.value);
  if (!event.ok) throw new Error('test: event does not decode');
  return event.value;
}

function sealWith(mesh: Mesh, signedEvent: Uint8Array, seed: string): Uint8Array {
  return encodeSealed(sealEvent(signedEvent, 'GENERAL', 1, mesh.keys.GENERAL, seededRandom(seed)));
}

/** The same event with other columns and its original signature: what a tamperer holding the domain key can make. */
function tampered(mesh: Mesh, envelope: Uint8Array): Uint8Array {
  const event = openWith(mesh, envelope);
  const body: EventBody = { ...event.body, cols: { name: 'tampered' } };
  return sealWith(mesh, encodeCbor([encodeCbor(body), event.sig]), 'tamper');
}

/** A well-formed next event of `writer` (right seq and prev) signed by some other key. */
async function forgedNext(mesh: Mesh, writer: Machine, last: Uint8Array): Promise<Uint8Array> {
  const prev = openWith(mesh, last);
  const body: EventBody = {
    ...prev.body,
    seq: prev.body.seq + 1,
    prev: prev.id,
    cols: { name: 'forged' },
    hlc: { ...prev.body.hlc, counter: prev.body.hlc.counter + 1 },
  };
  const mallory = unsafeTestingSigner('mallory');
  const forged = await signEvent(body, { publicKey: writer.signer.publicKey, sign: mallory.sign });
  return sealWith(mesh, forged.bytes, 'forge');
}

const types = (outcomes: readonly IngestOutcome[]) =>
  outcomes.map((o) =>
    o.type === 'Rejected' ? `Rejected:${o.error.type}` : o.type === 'Parked' ? `Parked:${o.reason}` : o.type,
  );

describe('chain-segment verification in Replica.ingest', () => {
  it('checks one signature per linked run: the newest event of each signer', async () => {
    const { mesh, writers, reader, verifier } = setup('runs', 2);
    const [a, b] = writers as [Machine, Machine];
    const fromA = await writeMany(a, 6);
    const fromB = await writeMany(b, 4);
    const batch = [
      fromA[0]!,
      fromB[0]!,
      fromA[1]!,
      fromA[2]!,
      fromB[1]!,
      fromB[2]!,
      fromA[3]!,
      fromA[4]!,
      fromA[5]!,
      fromB[3]!,
    ];
    expect(types(await reader.ingest('peer', batch))).toEqual(Array<string>(10).fill('Applied'));
    expect(verifier.calls).toBe(2);
    const tails = [fromA[5]!, fromB[3]!].map((e) => toHex(signingPayload(openWith(mesh, e).bodyBytes)));
    expect(verifier.messages.sort()).toEqual(tails.sort());
  });

  it('rejects a tampered middle event and accepts nothing through the broken link', async () => {
    const { mesh, writers, reader, verifier } = setup('tamper');
    const log = await writeMany(writers[0]!, 5);
    const batch = [log[0]!, log[1]!, tampered(mesh, log[2]!), log[3]!, log[4]!];
    expect(types(await reader.ingest('peer', batch))).toEqual([
      'Applied',
      'Applied',
      'Rejected:SignatureInvalid',
      'Parked:ChainGap',
      'Parked:ChainGap',
    ]);
    // Run [1, 2, 3'] fails at its tail, so 1 and 2 are checked one by one; run [4, 5] costs one check.
    expect(verifier.calls).toBe(4);
    // The genuine third event closes the gap and the parked successors follow.
    const healed = await reader.ingest('peer', [log[2]!]);
    expect(types(healed)).toEqual(['Applied', 'Applied', 'Applied']);
    expect(verifier.calls).toBe(5);
  });

  it('falls back to one check per event when the newest signature is forged', async () => {
    const { mesh, writers, reader, verifier } = setup('forge');
    const log = await writeMany(writers[0]!, 4);
    const forged = await forgedNext(mesh, writers[0]!, log[3]!);
    expect(types(await reader.ingest('peer', [...log, forged]))).toEqual([
      'Applied',
      'Applied',
      'Applied',
      'Applied',
      'Rejected:SignatureInvalid',
    ]);
    expect(verifier.calls).toBe(5);
  });

  it('links a run split across two batches through the stored chain head', async () => {
    const { writers, reader, verifier } = setup('split');
    const log = await writeMany(writers[0]!, 6);
    expect(types(await reader.ingest('peer', log.slice(0, 3)))).toEqual(['Applied', 'Applied', 'Applied']);
    expect(types(await reader.ingest('peer', log.slice(3)))).toEqual(['Applied', 'Applied', 'Applied']);
    expect(verifier.calls).toBe(2);
  });

  it('keeps admission in call order when batches are ingested concurrently', async () => {
    const { writers, reader } = setup('order');
    const log = await writeMany(writers[0]!, 6);
    const [first, second] = await Promise.all([
      reader.ingest('peer', log.slice(0, 3)),
      reader.ingest('peer', log.slice(3)),
    ]);
    expect(types([...first, ...second])).toEqual(Array<string>(6).fill('Applied'));
  });
});

describe('verifyChains', () => {
  const event = async (seq: number, prev: Uint8Array, signer = unsafeTestingSigner('v')): Promise<SignedEvent> =>
    signEvent(
      {
        v: 1,
        domain: 'GENERAL',
        signer: signer.publicKey,
        seq,
        prev,
        table: 'device_profiles',
        row: 'pump-1',
        op: 'put',
        cols: { name: `n${seq}` },
        hlc: { ...HLC_ZERO, ms: seq },
      },
      signer,
    );

  it('verifies duplicates once and forks on their own', async () => {
    const e1 = await event(1, new Uint8Array(32));
    const e2 = await event(2, e1.id);
    const fork = await event(2, new Uint8Array(32).fill(1));
    const verifier = countingVerifier();
    expect(await verifyChains([e2, e1, undefined, e2, fork], verifier)).toEqual([true, true, false, true, true]);
    // Run [e1, e2] by its tail, and the fork alone.
    expect(verifier.calls).toBe(2);
  });

  it('does not let a run cross signers', async () => {
    const other = unsafeTestingSigner('other');
    const e1 = await event(1, new Uint8Array(32));
    const e2 = await event(2, e1.id, other);
    const verifier = countingVerifier();
    expect(await verifyChains([e1, e2], verifier)).toEqual([true, true]);
    expect(verifier.calls).toBe(2);
  });
});
