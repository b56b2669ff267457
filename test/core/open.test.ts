/**
 * Opening envelopes before admission (core/open.ts), through both of its doors —
 * the asynchronous port the browser's crypto worker answers and the synchronous
 * one the headless node's open workers use — with the same outcome for every
 * kind of input: an event of each lane, an envelope of a domain this machine
 * holds no key for, bytes that are no envelope, a key that does not open it,
 * and an event that names another domain or lane than its envelope.
 */
import { describe, expect, it } from 'vitest';
import { ZERO_HASH, eventIdOf, signEvent, type EventBody } from '../../src/core/event.js';
import { openEnvelope, openEnvelopeSync, type Opening } from '../../src/core/open.js';
import type { DomainName } from '../../src/core/schema.js';
import { encodeSealed, envelopeId, openSealed, sealEvent, undecodableId, type SealLane } from '../../src/core/seal.js';
import { seededRandom, unsafeTestingSigner } from '../helpers/deterministic.js';

const random = seededRandom('open-tests');
const signer = unsafeTestingSigner('writer');
const KEY = random.bytes(32);
const keys = (domain: DomainName, gen: number) => (domain === 'GENERAL' && gen === 1 ? KEY : undefined);

async function envelope(
  over: Partial<EventBody> = {},
  seal: { domain?: DomainName; lane?: SealLane; key?: Uint8Array } = {},
): Promise<Uint8Array> {
  const body: EventBody = {
    v: 1,
    domain: 'GENERAL',
    signer: signer.publicKey,
    seq: 1,
    prev: ZERO_HASH,
    table: 'device_profiles',
    row: 'r1',
    op: 'put',
    cols: { name: 'probe' },
    hlc: { ms: 1_720_000_000_000, counter: 0 },
    ...over,
  };
  const event = await signEvent(body, signer);
  return encodeSealed(sealEvent(event.bytes, seal.domain ?? 'GENERAL', 1, seal.key ?? KEY, random, seal.lane));
}

/** Both doors, which must agree. */
async function open(bytes: Uint8Array): Promise<Opening> {
  const viaPort = await openEnvelope(bytes, async (sealed) => openSealed(sealed, keys));
  const viaSync = openEnvelopeSync(bytes, (sealed) => openSealed(sealed, keys));
  expect(viaSync).toEqual(viaPort);
  return viaPort;
}

describe('opening an envelope', () => {
  it.each<[string, SealLane | undefined]>([
    ['the public lane', undefined],
    ['the trusted lane', 'trusted'],
    ['the local lane', 'local'],
  ])('gives the event of %s with its names', async (_, lane) => {
    const bytes = await envelope(lane ? { lane } : {}, lane ? { lane } : {});
    const opening = await open(bytes);
    expect(opening.kind).toBe('event');
    if (opening.kind !== 'event') return;
    expect(opening.event.body.lane).toBe(lane);
    expect(opening.bytes).toBe(bytes);
    expect(opening.names).toEqual({ outerId: envelopeId(opening.sealed), eventId: eventIdOf(opening.event) });
  });

  it('keeps an envelope of a domain it holds no key for, unread', async () => {
    const bytes = await envelope({ domain: 'CONTROL', table: 'keyring' }, { domain: 'CONTROL' });
    expect(await open(bytes)).toMatchObject({ kind: 'opaque', bytes, sealed: { domain: 'CONTROL' } });
  });

  it('rejects bytes that are no envelope under an id of the bytes themselves', async () => {
    const bytes = Uint8Array.of(1, 2, 3);
    expect(await open(bytes)).toMatchObject({ kind: 'rejected', outerId: undecodableId(bytes) });
  });

  it('rejects an envelope the key does not open', async () => {
    expect(await open(await envelope({}, { key: random.bytes(32) }))).toMatchObject({
      kind: 'rejected',
      error: { type: 'DecryptFailed' },
    });
  });

  it.each<[string, Partial<EventBody>, { domain?: DomainName; lane?: SealLane }, object]>([
    [
      'an event of another domain',
      { domain: 'CONTROL', table: 'keyring' },
      {},
      { type: 'DomainMismatch', envelope: 'GENERAL', event: 'CONTROL' },
    ],
    [
      'a public event in a trusted envelope',
      {},
      { lane: 'trusted' },
      { type: 'LaneMismatch', envelope: 'trusted', event: 'public' },
    ],
    [
      'a trusted event in a public envelope',
      { lane: 'trusted' },
      {},
      { type: 'LaneMismatch', envelope: 'public', event: 'trusted' },
    ],
    [
      'a local event in a trusted envelope',
      { lane: 'local' },
      { lane: 'trusted' },
      { type: 'LaneMismatch', envelope: 'trusted', event: 'local' },
    ],
  ])('rejects %s', async (_, over, seal, error) => {
    const opening = await open(await envelope(over, seal));
    expect(opening).toMatchObject({ kind: 'rejected', error });
  });
});
