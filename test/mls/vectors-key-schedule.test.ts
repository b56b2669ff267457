/**
 * The IETF vectors of the epoch secrets (mls-implementations test-vectors.md) against ts-mls on
 * the mesh's crypto provider, every case of all seven cipher suites:
 * - `key-schedule.json` (RFC 9420 §8): for each epoch, the GroupContext we encode equals
 *   `group_context`; from the previous epoch's init secret (ours, chained: the first is
 *   `initial_init_secret`), `commit_secret` and `psk_secret`, every key schedule output equals
 *   the vector's (joiner, welcome, init, sender data, encryption, exporter, external,
 *   confirmation, membership, resumption, epoch authenticator); the external public key derived
 *   from `external_secret` equals `external_pub`; MLS-Exporter gives `exporter.secret`;
 * - `psk_secret.json` (§8.4): the psk_secret of 0 to 10 external PSKs equals the vector's;
 * - `transcript-hashes.json` (§8.2): the AuthenticatedContent holds a Commit whose confirmation
 *   tag is the MAC we compute over `confirmed_transcript_hash_after` (and fails to verify over
 *   another hash); the confirmed and interim transcript hashes we compute equal the vector's.
 */
import type { CiphersuiteImpl } from 'ts-mls';
import { decodeAuthenticatedContent } from 'ts-mls/authenticatedContent.js';
import { createConfirmationTag, verifyConfirmationTag } from 'ts-mls/framedContent.js';
import { encodeGroupContext } from 'ts-mls/groupContext.js';
import { initializeEpoch, mlsExporter } from 'ts-mls/keySchedule.js';
import { computePskSecret, type PreSharedKeyID } from 'ts-mls/presharedkey.js';
import { createConfirmedHash, createInterimHash } from 'ts-mls/transcriptHash.js';
import { expect, it } from 'vitest';
import { toHex } from '../../src/core/bytes.js';
import {
  ALL_SUITES,
  bySuite,
  flipped,
  hex,
  loadVectors,
  suiteImpl,
  vectorContext,
} from '../helpers/mls-vector-suites.js';
import { describeVectors } from '../helpers/vectors.js';

type KeyScheduleVector = {
  cipher_suite: number;
  group_id: string;
  initial_init_secret: string;
  epochs: Epoch[];
};

type Epoch = {
  tree_hash: string;
  commit_secret: string;
  psk_secret: string;
  confirmed_transcript_hash: string;
  group_context: string;
  joiner_secret: string;
  welcome_secret: string;
  init_secret: string;
  sender_data_secret: string;
  encryption_secret: string;
  exporter_secret: string;
  epoch_authenticator: string;
  external_secret: string;
  confirmation_key: string;
  membership_key: string;
  resumption_psk: string;
  external_pub: string;
  exporter: { label: string; context: string; length: number; secret: string };
};

type PskVector = {
  cipher_suite: number;
  psks: { psk_id: string; psk: string; psk_nonce: string }[];
  psk_secret: string;
};

type TranscriptVector = {
  cipher_suite: number;
  confirmation_key: string;
  authenticated_content: string;
  interim_transcript_hash_before: string;
  confirmed_transcript_hash_after: string;
  interim_transcript_hash_after: string;
};

/** One epoch's key schedule; returns our init secret for the next epoch. */
async function checkEpoch(
  v: KeyScheduleVector,
  n: number,
  initSecret: Uint8Array,
  cs: CiphersuiteImpl,
): Promise<Uint8Array> {
  const e = v.epochs[n]!;
  const at = `epoch ${n}`;
  const context = vectorContext({ ...v, ...e, epoch: n });
  expect(toHex(encodeGroupContext(context)), `${at} group_context`).toBe(e.group_context);
  const secrets = await initializeEpoch(initSecret, hex(e.commit_secret), context, hex(e.psk_secret), cs.kdf);
  const ks = secrets.keySchedule;
  expect(
    {
      joiner_secret: toHex(secrets.joinerSecret),
      welcome_secret: toHex(secrets.welcomeSecret),
      init_secret: toHex(ks.initSecret),
      sender_data_secret: toHex(ks.senderDataSecret),
      encryption_secret: toHex(secrets.encryptionSecret),
      exporter_secret: toHex(ks.exporterSecret),
      external_secret: toHex(ks.externalSecret),
      confirmation_key: toHex(ks.confirmationKey),
      membership_key: toHex(ks.membershipKey),
      resumption_psk: toHex(ks.resumptionPsk),
      epoch_authenticator: toHex(ks.epochAuthenticator),
    },
    at,
  ).toEqual({
    joiner_secret: e.joiner_secret,
    welcome_secret: e.welcome_secret,
    init_secret: e.init_secret,
    sender_data_secret: e.sender_data_secret,
    encryption_secret: e.encryption_secret,
    exporter_secret: e.exporter_secret,
    external_secret: e.external_secret,
    confirmation_key: e.confirmation_key,
    membership_key: e.membership_key,
    resumption_psk: e.resumption_psk,
    epoch_authenticator: e.epoch_authenticator,
  });
  const { publicKey } = await cs.hpke.deriveKeyPair(ks.externalSecret);
  expect(toHex(await cs.hpke.exportPublicKey(publicKey)), `${at} external_pub`).toBe(e.external_pub);
  const x = e.exporter;
  const exported = await mlsExporter(ks.exporterSecret, x.label, hex(x.context), x.length, cs);
  expect(toHex(exported), `${at} exporter`).toBe(x.secret);
  return ks.initSecret;
}

async function checkTranscript(v: TranscriptVector, cs: CiphersuiteImpl): Promise<void> {
  const decoded = decodeAuthenticatedContent(hex(v.authenticated_content), 0)?.[0];
  if (decoded?.content.contentType !== 'commit' || decoded.auth.contentType !== 'commit')
    throw new Error('vectors: authenticated_content is not a Commit');
  const { content, auth, wireformat } = decoded;
  const [key, confirmed] = [hex(v.confirmation_key), hex(v.confirmed_transcript_hash_after)];
  expect(toHex(await createConfirmationTag(key, confirmed, cs.hash)), 'confirmation tag').toBe(
    toHex(auth.confirmationTag),
  );
  expect(await verifyConfirmationTag(key, auth.confirmationTag, confirmed, cs.hash), 'tag').toBe(true);
  expect(await verifyConfirmationTag(key, auth.confirmationTag, flipped(confirmed), cs.hash), 'other hash').toBe(false);
  const input = { wireformat, content, signature: auth.signature };
  const confirmedAfter = await createConfirmedHash(hex(v.interim_transcript_hash_before), input, cs.hash);
  expect(toHex(confirmedAfter), 'confirmed_transcript_hash_after').toBe(v.confirmed_transcript_hash_after);
  const interimAfter = await createInterimHash(confirmedAfter, auth.confirmationTag, cs.hash);
  expect(toHex(interimAfter), 'interim_transcript_hash_after').toBe(v.interim_transcript_hash_after);
}

const external = (p: PskVector['psks'][number]): [PreSharedKeyID, Uint8Array] => [
  { psktype: 'external', pskId: hex(p.psk_id), pskNonce: hex(p.psk_nonce) },
  hex(p.psk),
];

const KEY_SCHEDULE = 'mls/key-schedule.json';
const PSK_SECRET = 'mls/psk_secret.json';
const TRANSCRIPT = 'mls/transcript-hashes.json';

describeVectors('ts-mls: key-schedule.json', KEY_SCHEDULE, () => {
  const vectors = loadVectors<KeyScheduleVector>(KEY_SCHEDULE);

  it('has cases for every cipher suite', () => {
    expect(bySuite(vectors).map(([suite]) => suite)).toEqual(ALL_SUITES);
  });

  for (const [suite, cases] of bySuite(vectors)) {
    const epochs = cases.reduce((n, v) => n + v.epochs.length, 0);
    it(`suite ${suite}: ${cases.length} case(s), ${epochs} epochs`, async () => {
      const cs = await suiteImpl(suite);
      for (const v of cases) {
        expect(v.epochs.length).toBeGreaterThan(0);
        let initSecret = hex(v.initial_init_secret);
        for (let n = 0; n < v.epochs.length; n++) initSecret = await checkEpoch(v, n, initSecret, cs);
      }
    });
  }
});

describeVectors('ts-mls: psk_secret.json', PSK_SECRET, () => {
  const vectors = loadVectors<PskVector>(PSK_SECRET);

  it('has cases for every cipher suite', () => {
    expect(bySuite(vectors).map(([suite]) => suite)).toEqual(ALL_SUITES);
  });

  for (const [suite, cases] of bySuite(vectors)) {
    it(`suite ${suite}: ${cases.length} case(s)`, async () => {
      const cs = await suiteImpl(suite);
      for (const v of cases) {
        const secret = await computePskSecret(v.psks.map(external), cs);
        expect(toHex(secret), `${v.psks.length} PSKs`).toBe(v.psk_secret);
      }
    });
  }
});

describeVectors('ts-mls: transcript-hashes.json', TRANSCRIPT, () => {
  const vectors = loadVectors<TranscriptVector>(TRANSCRIPT);

  it('has cases for every cipher suite', () => {
    expect(bySuite(vectors).map(([suite]) => suite)).toEqual(ALL_SUITES);
  });

  for (const [suite, cases] of bySuite(vectors)) {
    it(`suite ${suite}: ${cases.length} case(s)`, async () => {
      const cs = await suiteImpl(suite);
      for (const v of cases) await checkTranscript(v, cs);
    });
  }
});
