/**
 * Known answers for every signed, sealed or hashed structure of the protocol: fixed keys
 * (the Ed25519 key of RFC 8032 §7.1 test 1), fixed nonces and bodies, and the exact bytes
 * they must give. A change to any label, field order, encoding or AAD layout fails here —
 * such a change breaks every other implementation and every stored envelope. The labels
 * and associated-data layouts are also rebuilt by hand from the format descriptions
 * (independently of the code) and checked with @noble directly. The same values are
 * published in docs/protocol-vectors.md, which this test checks too.
 */
import { gcm } from '@noble/ciphers/aes.js';
import { ed25519 } from '@noble/curves/ed25519.js';
import { blake3 } from '@noble/hashes/blake3.js';
import { hkdf } from '@noble/hashes/hkdf.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { concat, fromHex, toHex, utf8 } from '../../src/core/bytes.js';
import { signEvent, signingPayload, ZERO_HASH, type EventBody } from '../../src/core/event.js';
import { encodeFrame, encodeHeader, frameAad } from '../../src/core/frame.js';
import { topicOf } from '../../src/core/identity.js';
import { signReceipt } from '../../src/core/mls/receipt.js';
import { unwrapSecret, wrapSecret } from '../../src/core/object/access.js';
import { objectKeys, type StorageId } from '../../src/core/object/keys.js';
import { openManifest, sealManifest, type ObjectManifest } from '../../src/core/object/manifest.js';
import type { Random, Signer } from '../../src/core/ports.js';
import { decodeSealed, encodeSealed, openSealed, sealAad, sealEvent } from '../../src/core/seal.js';
import { fingerprint, shortFingerprint } from '../../src/core/identity.js';
import { pairingCommit, shortAuthString } from '../../src/core/pairing.js';
import { nobleVerifier } from '../helpers/deterministic.js';

/** RFC 8032 §7.1, test 1. */
const SECRET_KEY = fromHex('9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60')!;
const PUBLIC_KEY = fromHex('d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a')!;
const signer: Signer = { publicKey: PUBLIC_KEY, sign: (m) => Promise.resolve(ed25519.sign(m, SECRET_KEY)) };

/** `n` bytes counting up from `start` (mod 256): every key, nonce and id below is one of these. */
const run = (n: number, start: number): Uint8Array => Uint8Array.from({ length: n }, (_, i) => (start + i) & 0xff);
/** A Random that hands out the byte run from `start`: the nonce of each structure. */
const fixed = (start: number): Random => ({ bytes: (n) => run(n, start) });
const hex = (h: string): Uint8Array => fromHex(h)!;
const ascii = (s: string): string => toHex(utf8(s));

const T0 = 1_704_067_200_000; // 2024-01-01T00:00:00Z

const BODY: EventBody = {
  v: 1,
  domain: 'GENERAL',
  signer: PUBLIC_KEY,
  seq: 1,
  prev: ZERO_HASH,
  table: 'device_profiles',
  row: 'pump-1',
  op: 'put',
  cols: { name: 'Pump 1', active: true },
  hlc: { ms: T0, counter: 0 },
};
const DOMAIN_KEY = run(32, 0x00);
const STORAGE_ID = toHex(run(32, 0x40)) as StorageId;
const OBJECT_SECRET = run(32, 0x20);

export const EXPECTED = {
  eventBody:
    'aa617601626f706370757463686c63a2626d731b0000018cc251f40067636f756e7465720063726f776670756d702d31' +
    '637365710164636f6c73a2646e616d656650756d70203166616374697665f56470726576582000000000000000000000' +
    '00000000000000000000000000000000000000000000657461626c656f6465766963655f70726f66696c657366646f6d' +
    '61696e6747454e4552414c667369676e65725820d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68' +
    'f707511a',
  signature:
    '8afd45dd12d2e6ffe12eaea53b8fd66716e2378265e265f076c5440c41d11c1887f8962d1eeba8ada0ab427d831dfa53' +
    'f33d69fc50bc782ee96adea68cd09d06',
  signedEvent:
    '8258c4aa617601626f706370757463686c63a2626d731b0000018cc251f40067636f756e7465720063726f776670756d' +
    '702d31637365710164636f6c73a2646e616d656650756d70203166616374697665f56470726576582000000000000000' +
    '00000000000000000000000000000000000000000000000000657461626c656f6465766963655f70726f66696c657366' +
    '646f6d61696e6747454e4552414c667369676e65725820d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af' +
    '021a68f707511a58408afd45dd12d2e6ffe12eaea53b8fd66716e2378265e265f076c5440c41d11c1887f8962d1eeba8' +
    'ada0ab427d831dfa53f33d69fc50bc782ee96adea68cd09d06',
  eventId: '2adaf78d70638d314ec96d9cf7359804e87bcfda6dd78f05056bb9d04afc572e',
  sealedEnvelope:
    'a4626374590125a0a1a2a3a4a5a6a7a8a9aaab6440b88724bd03dd0d15e4a3720ea3b61ccffb72ffc4596c9c0faa442e' +
    '5f7566b1193291db47213d3cee6bbf6f0af6943736772b11b56b7f253d6432d7d2e1ded5d1e00960d08990d4d39979ec' +
    'baa5cca8fecfd4b7a4ef22ce753e9ab19a4d948f842bab03ae8f9b9edb06508588ed28245061aede359b3c2faaaac5d6' +
    '399722a174c616b027df67453698e27e2fe2b0ecb6c00ad7be9dcbb883f8a7ee8b5258af7f71d4c43260c1d8922aa0de' +
    'd801343cd82e516661943063f085e3faa13af8362c243e6780a1b5b3d7bd8a9436e053ad08ca469a58576e8ad7bad2df' +
    'a338029827f765b52c0823d83bbac96f15abd7a61d697df4d16d7d385e9003996394ea39d6a3594940727d603fb2d8bf' +
    '429c766bcc2cc9fd175e1a866269645820a3e15503e76d9b1e7b0cbadd32b4cc6d4523f630c85704b0d0b8006d78af76' +
    '2a6367656e0166646f6d61696e6747454e4552414c',
  outerId: 'a3e15503e76d9b1e7b0cbadd32b4cc6d4523f630c85704b0d0b8006d78af762a',
  frameHeader:
    'a861760162746f5820505152535455565758595a5b5c5d5e5f606162636465666768696a6b6c6d6e6f6274731b000001' +
    '8cc251f40063656e635820909192939495969798999a9b9c9d9e9fa0a1a2a3a4a5a6a7a8a9aaabacadaeaf636b696458' +
    '20707172737475767778797a7b7c7d7e7f808182838485868788898a8b8c8d8e8f6372696450b0b1b2b3b4b5b6b7b8b9' +
    'babbbcbdbebf6466726f6d5820303132333435363738393a3b3c3d3e3f404142434445464748494a4b4c4d4e4f65746f' +
    '7069635820101112131415161718191a1b1c1d1e1f202122232425262728292a2b2c2d2e2f',
  frame:
    '8258e5a861760162746f5820505152535455565758595a5b5c5d5e5f606162636465666768696a6b6c6d6e6f6274731b' +
    '0000018cc251f40063656e635820909192939495969798999a9b9c9d9e9fa0a1a2a3a4a5a6a7a8a9aaabacadaeaf636b' +
    '69645820707172737475767778797a7b7c7d7e7f808182838485868788898a8b8c8d8e8f6372696450b0b1b2b3b4b5b6' +
    'b7b8b9babbbcbdbebf6466726f6d5820303132333435363738393a3b3c3d3e3f404142434445464748494a4b4c4d4e4f' +
    '65746f7069635820101112131415161718191a1b1c1d1e1f202122232425262728292a2b2c2d2e2f5821e0e1e2e3e4e5' +
    'e6e7e8e9eaebc610f25f272c05bce56301c08de2d13e6871081911',
  accessWrapped:
    '808182838485868788898a8b021eff3a5ba672c6b845afc8dee275e15e27d83d5bba55decec02c11737f994bae43e23c' +
    'aa84708db4fe48a3b4da10cd',
  dek: '51cc0eeeb519ba4e8b6270f1d56caaf7b54e18a53970a0e62e831463c070954d',
  manifestKey: 'c169a4b00c0fe8cfab391ec8444960996cdc5479dfb896885e14461cdcec85a6',
  sealedManifest:
    '333435363738393a3b3c3d3e03b2facd2757952d4d1b21ff8fa2e429f59a77b77fb9593826896fe06ef0680b1524ea64' +
    'ff8e4161a4633337479894bfb9fe9b15f152e7f3925fba382b765f4b422772c3baea3252faf4217ca6af12dae797857e' +
    'f9444bd30fa900bd01cbbdd0610bca64889d9c9728a12fde48049da3fa8097e9f68b425074630a3c7e7b8e0748d447c4' +
    'e4644d85033935f6a5e6f0d1ba1e0ae41433e56170e15f49936721c2cb566930096ecddbfea8bd0fd15b4d8d3e565d6a' +
    'fa8c940d620987f10dc98b8fc3da515a4fb2bb91c4e4a939a7052b9315de3f1d44441bbac92fc5a2aa3530904d408686' +
    '7f265ecbbe493224377f50354e256f9ee0823b9127c112e91142c9bf5eb7688ee018237bf4e41b3b38bb5c4e833ec2fb' +
    'f5dcb5836c274d0a43cf564f38db33ab9a2a76623ceeee21afe9f7c27946f2acd7d7fc449bd497d7e203ab736f2edc20' +
    '9bb419b3fed593dac263a343da8052bf2494abba1ae9fd74e8fd9776cd40126c87ef0bcb2108555e97582cb6e1573110' +
    '9c8e694c5d6253f01dd65d6ef61168b52415bd5248f4e5d750852030436d99e63b1035a0b58d582c88722842d1f06cbc' +
    'c695286bbb97b0760e28991f6a3f261587b8cea9f395ad71fa8d0e',
  receipt:
    '8258aba86176016261741b0000018cc251f400637365710264707265765820999a9b9c9d9e9fa0a1a2a3a4a5a6a7a8a9' +
    'aaabacadaeafb0b1b2b3b4b5b6b7b86565706f6368036567726f7570500102030405060708090a0b0c0d0e0f1065746f' +
    '7069635820101112131415161718191a1b1c1d1e1f202122232425262728292a2b2c2d2e2f6662756e646c6558207778' +
    '797a7b7c7d7e7f808182838485868788898a8b8c8d8e8f9091929394959658409961b4fe4d93351a32354209cb7bec5d' +
    '7858205133d117b90402b2532e5c8c5a4b04323a9b28f884e5c183e9cf83989e6c8e9439c67113d1906916b6ed27d00a',
  receiptHash: 'f15c6d455f1481d864cf4167953a64bbd0cd504f68031455e7fe35894a480071',
  topic: '6060aee661784dc4a9f4b2add4f16e651009cea9be546596c5422218981f60ac',
  fingerprint: '5d91649e2f322655d7f017fa17c9a4cc',
  pairingCommit: '9776dbab3678dba6493cf142fc9c00cb103e16945e83075bb53cd95e86b2266d',
};

describe('known answers: events', () => {
  it('signing payload is "sov/1/event" ‖ canonical body, and the signature is over exactly that', async () => {
    const event = await signEvent(BODY, signer);
    expect(toHex(event.bodyBytes)).toBe(EXPECTED.eventBody);
    const payload = signingPayload(event.bodyBytes);
    expect(toHex(payload)).toBe(ascii('sov/1/event') + EXPECTED.eventBody);
    expect(ascii('sov/1/event')).toBe('736f762f312f6576656e74');
    expect(toHex(event.sig)).toBe(EXPECTED.signature);
    expect(ed25519.verify(event.sig, concat(utf8('sov/1/event'), event.bodyBytes), PUBLIC_KEY)).toBe(true);
  });

  it('signed event is cbor([body, sig]) and its id is BLAKE3 of those bytes', async () => {
    const event = await signEvent(BODY, signer);
    expect(toHex(event.bytes)).toBe(EXPECTED.signedEvent);
    // array(2), bytes(196) body, bytes(64) signature
    expect(EXPECTED.signedEvent).toBe('8258c4' + EXPECTED.eventBody + '5840' + EXPECTED.signature);
    expect(toHex(event.id)).toBe(EXPECTED.eventId);
    expect(toHex(blake3(hex(EXPECTED.signedEvent)))).toBe(EXPECTED.eventId);
  });
});

describe('known answers: sealed envelopes', () => {
  it('AAD is "sov/1/seal" ‖ cbor([domain, gen(, lane)])', () => {
    // "sov/1/seal", array(2), text(7) "GENERAL", uint 1
    expect(toHex(sealAad('GENERAL', 1))).toBe('736f762f312f7365616c' + '82' + '67' + ascii('GENERAL') + '01');
    // array(3), text(7) "GENERAL", uint 3, text(7) "trusted"
    expect(toHex(sealAad('GENERAL', 3, 'trusted'))).toBe(
      ascii('sov/1/seal') + '83' + '67' + ascii('GENERAL') + '03' + '67' + ascii('trusted'),
    );
  });

  it('seals to the pinned envelope, whose outer id is BLAKE3(ct), and opens with the hand-built AAD', async () => {
    const event = await signEvent(BODY, signer);
    const sealed = sealEvent(event.bytes, 'GENERAL', 1, DOMAIN_KEY, fixed(0xa0));
    expect(toHex(encodeSealed(sealed))).toBe(EXPECTED.sealedEnvelope);
    expect(toHex(sealed.id)).toBe(EXPECTED.outerId);
    expect(toHex(blake3(sealed.ct))).toBe(EXPECTED.outerId);
    const aad = concat(utf8('sov/1/seal'), hex('82' + '67' + ascii('GENERAL') + '01'));
    const plain = gcm(DOMAIN_KEY, sealed.ct.subarray(0, 12), aad).decrypt(sealed.ct.subarray(12));
    expect(toHex(plain)).toBe(EXPECTED.signedEvent);
    const decoded = decodeSealed(hex(EXPECTED.sealedEnvelope));
    if (!decoded.ok) throw new Error(decoded.error.type);
    const opened = openSealed(decoded.value, (d, g) => (d === 'GENERAL' && g === 1 ? DOMAIN_KEY : undefined));
    expect(opened.ok && toHex(opened.value)).toBe(EXPECTED.signedEvent);
  });
});

describe('known answers: frames', () => {
  const header = {
    v: 1 as const,
    topic: run(32, 0x10),
    from: run(32, 0x30),
    to: run(32, 0x50),
    kid: run(32, 0x70),
    enc: run(32, 0x90),
    rid: run(16, 0xb0),
    ts: T0,
  };

  it('header bytes, AAD = "sov/1/frame" ‖ header, and the frame around an AES-256-GCM layer', () => {
    const headerBytes = encodeHeader(header);
    expect(toHex(headerBytes)).toBe(EXPECTED.frameHeader);
    expect(toHex(frameAad(headerBytes))).toBe(ascii('sov/1/frame') + EXPECTED.frameHeader);
    const [key, nonce] = [run(32, 0xc0), run(12, 0xe0)];
    const ct = gcm(key, nonce, concat(utf8('sov/1/frame'), headerBytes)).encrypt(utf8('hello'));
    expect(toHex(encodeFrame(headerBytes, concat(nonce, ct)))).toBe(EXPECTED.frame);
  });
});

describe('known answers: objects', () => {
  it('object keys: DEK and manifest key from the object secret', () => {
    const keys = objectKeys(OBJECT_SECRET);
    expect(toHex(keys.dek)).toBe(EXPECTED.dek);
    expect(toHex(keys.manifestKey)).toBe(EXPECTED.manifestKey);
  });

  it('access record: AAD = "sov/1/access" ‖ storage id ‖ domain ‖ generation (u32 BE)', () => {
    const kek = run(32, 0x60);
    const record = wrapSecret(OBJECT_SECRET, { storageId: STORAGE_ID, domain: 'GENERAL', gen: 2 }, kek, fixed(0x80));
    expect(toHex(record.wrapped)).toBe(EXPECTED.accessWrapped);
    const aad = hex(ascii('sov/1/access') + STORAGE_ID + ascii('GENERAL') + '00000002');
    const wrapped = hex(EXPECTED.accessWrapped);
    expect(toHex(gcm(kek, wrapped.subarray(0, 12), aad).decrypt(wrapped.subarray(12)))).toBe(toHex(OBJECT_SECRET));
    const unwrapped = unwrapSecret(record, kek);
    expect(unwrapped.ok && toHex(unwrapped.value)).toBe(toHex(OBJECT_SECRET));
  });

  it('manifest: signed over "sov/1/manifest" ‖ body, sealed with AAD "sov/1/manifest" ‖ storage id', async () => {
    const manifest: ObjectManifest = {
      storageId: STORAGE_ID,
      domain: 'GENERAL',
      table: 'measurements',
      schema: [
        { name: 'time', type: 'timestamp', nullable: false },
        { name: 'temperature', type: 'double', nullable: true },
      ],
      rows: 2,
      bytes: 1234,
      time: { column: 'time', min: T0, max: T0 + 60_000 },
      partitions: {},
      columns: { temperature: { nulls: 0, min: new Uint8Array(8), max: new Uint8Array(8) } },
      producer: toHex(PUBLIC_KEY),
      hlc: { ms: T0, counter: 1 },
      supersedes: [],
      rowOrigin: '0102030405060708',
    };
    const { manifestKey } = objectKeys(OBJECT_SECRET);
    const sealed = await sealManifest(manifest, signer, manifestKey, fixed(0x33));
    expect(toHex(sealed)).toBe(EXPECTED.sealedManifest);
    const plain = gcm(manifestKey, sealed.subarray(0, 12), hex(ascii('sov/1/manifest') + STORAGE_ID)).decrypt(
      sealed.subarray(12),
    );
    // cbor([body, sig]): array(2), bytes(u16 length) body, bytes(64) sig; the signature covers the label and the body
    expect(toHex(plain.subarray(0, 2))).toBe('8259');
    const bodyLength = (plain[2]! << 8) | plain[3]!;
    const body = plain.subarray(4, 4 + bodyLength);
    expect(toHex(plain.subarray(4 + bodyLength, 6 + bodyLength))).toBe('5840');
    const sig = plain.subarray(6 + bodyLength);
    expect(ed25519.verify(sig, concat(utf8('sov/1/manifest'), body), PUBLIC_KEY)).toBe(true);
    const opened = await openManifest(sealed, STORAGE_ID, manifestKey, nobleVerifier);
    expect(opened.ok).toBe(true);
  });
});

describe('known answers: sequencer receipts and topics', () => {
  it('receipt: cbor([body, sig]), signed over "sov/1/receipt" ‖ body by the relay key', () => {
    const receipt = signReceipt(
      {
        v: 1,
        topic: run(32, 0x10),
        group: run(16, 0x01),
        epoch: 3,
        seq: 2,
        bundle: run(32, 0x77),
        prev: run(32, 0x99),
        at: T0,
      },
      SECRET_KEY,
    );
    expect(toHex(receipt.bytes)).toBe(EXPECTED.receipt);
    expect(toHex(receipt.hash)).toBe(EXPECTED.receiptHash);
    const bytes = hex(EXPECTED.receipt);
    const body = bytes.subarray(3, bytes.length - 66);
    expect(ed25519.verify(bytes.subarray(bytes.length - 64), concat(utf8('sov/1/receipt'), body), PUBLIC_KEY)).toBe(
      true,
    );
  });

  it('topic = BLAKE3(group secret ‖ "sovereign-sync-v1")', () => {
    const secret = run(32, 0x00);
    expect(toHex(topicOf(secret))).toBe(EXPECTED.topic);
    expect(toHex(blake3(concat(secret, utf8('sovereign-sync-v1'))))).toBe(EXPECTED.topic);
  });
});

describe('known answers: fingerprints', () => {
  it('fingerprint = BLAKE3("sov/1/fingerprint" ‖ public key)[0..16], shown as four groups of four hex digits', () => {
    expect(toHex(fingerprint(PUBLIC_KEY))).toBe(EXPECTED.fingerprint);
    expect(toHex(blake3(concat(utf8('sov/1/fingerprint'), PUBLIC_KEY)).subarray(0, 16))).toBe(EXPECTED.fingerprint);
    expect(shortFingerprint(PUBLIC_KEY)).toBe('5d91-649e-2f32-2655');
  });
});

describe('known answers: pairing', () => {
  const inviter = { signer: run(32, 0x00), endpoint: run(32, 0x20), frame: run(32, 0x40) };
  const joiner = { signer: run(32, 0x60), endpoint: run(32, 0x80), frame: run(32, 0xa0) };
  const joinerNonce = run(32, 0xc0);

  it('commitment = BLAKE3("sov/1/pair-commit" ‖ J.signer ‖ J.endpoint ‖ J.frame ‖ Nj)', () => {
    const commit = pairingCommit(joiner, joinerNonce);
    expect(toHex(commit)).toBe(EXPECTED.pairingCommit);
    const independent = blake3(
      concat(utf8('sov/1/pair-commit'), run(32, 0x60), run(32, 0x80), run(32, 0xa0), joinerNonce),
    );
    expect(toHex(independent)).toBe(EXPECTED.pairingCommit);
  });

  it('code = 6 digits of HKDF-SHA-256(BLAKE3(transcript), info "sov/1/sas", 6 bytes), as "ddd ddd"', () => {
    const commit = hex(EXPECTED.pairingCommit);
    const [topic, inv, inviterNonce] = [run(32, 0x10), run(16, 0xe0), run(32, 0xf0)];
    const sas = shortAuthString({ topic, inv, inviter, joiner, commit, inviterNonce, joinerNonce });
    expect(sas).toBe('200 228');
    const transcript = concat(
      utf8('sov/1/sas-transcript'),
      topic,
      inv,
      run(96, 0x00),
      run(96, 0x60),
      commit,
      inviterNonce,
      joinerNonce,
    );
    const bytes = hkdf(sha256, blake3(transcript), undefined, utf8('sov/1/sas'), 6);
    const value = bytes.reduce((v, byte) => v * 256 + byte, 0) % 1_000_000;
    expect(String(value).padStart(6, '0')).toBe(sas.replace(' ', ''));
  });
});

describe('docs/protocol-vectors.md', () => {
  it('publishes exactly these values', () => {
    const doc = readFileSync(new URL('../../docs/protocol-vectors.md', import.meta.url), 'utf8');
    for (const [name, value] of Object.entries(EXPECTED)) {
      const block = new RegExp(`### ${name}\\n\\n\`\`\`\\n([0-9a-f\\n]+)\`\`\``).exec(doc);
      expect(block, `docs/protocol-vectors.md has no ${name}`).not.toBeNull();
      expect(block![1]!.replace(/\n/g, ''), name).toBe(value);
    }
  });
});
