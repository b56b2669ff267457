/**
 * The relay's key-less MLS framing reader (core/mls/framing.ts) against the IETF
 * `messages.json` and `deserialization.json` vectors, cross-checked with
 * ts-mls decoding the same bytes, plus every truncation of every message: a
 * typed error, never an exception.
 */
import { decodeMlsMessage, encodeMlsMessage } from 'ts-mls';
import { decodeCommit, encodeCommit } from 'ts-mls/commit.js';
import { decodeGroupSecrets, encodeGroupSecrets } from 'ts-mls/groupSecrets.js';
import {
  decodeAdd,
  decodeExternalInit,
  decodeGroupContextExtensions,
  decodePSK,
  decodeReinit,
  decodeRemove,
  decodeUpdate,
  encodeAdd,
  encodeExternalInit,
  encodeGroupContextExtensions,
  encodePSK,
  encodeReinit,
  encodeRemove,
  encodeUpdate,
} from 'ts-mls/proposal.js';
import { decodeRatchetTree, encodeRatchetTree } from 'ts-mls/ratchetTree.js';
import { describe, expect, it } from 'vitest';
import { fromHex, toHex } from '../../src/core/bytes.js';
import { readFraming, TlsReader } from '../../src/core/mls/framing.js';
import { describeVectors, hasVector, readJsonVector } from '../helpers/vectors.js';

type MessagesVector = Record<string, string>;
type VarintVector = { vlbytes_header: string; length: number };

const hex = (s: string): Uint8Array => fromHex(s)!;

describeVectors('MLS framing: messages.json', 'mls/messages.json', () => {
  const vectors = hasVector('mls/messages.json') ? (readJsonVector('mls/messages.json') as MessagesVector[]) : [];

  it('reads the wire format of every whole message', () => {
    const expected: Record<string, string> = {
      mls_welcome: 'welcome',
      mls_group_info: 'group_info',
      mls_key_package: 'key_package',
      public_message_application: 'public_message',
      public_message_proposal: 'public_message',
      public_message_commit: 'public_message',
      private_message: 'private_message',
    };
    let checked = 0;
    for (const vector of vectors) {
      for (const [field, wire] of Object.entries(expected)) {
        const framing = readFraming(hex(vector[field]!));
        expect(framing.ok && framing.value.wireFormat, field).toBe(wire);
        checked++;
      }
    }
    expect(checked).toBe(vectors.length * 7);
  });

  it('agrees with ts-mls on group id, epoch and content type', () => {
    for (const vector of vectors) {
      for (const field of ['public_message_application', 'public_message_proposal', 'public_message_commit']) {
        const bytes = hex(vector[field]!);
        const ours = readFraming(bytes);
        const theirs = decodeMlsMessage(bytes, 0)?.[0];
        if (!ours.ok || ours.value.wireFormat !== 'public_message' || theirs?.wireformat !== 'mls_public_message') {
          throw new Error(`${field}: not read as a public message`);
        }
        const content = theirs.publicMessage.content;
        expect(toHex(ours.value.groupId)).toBe(toHex(content.groupId));
        expect(ours.value.epoch).toBe(content.epoch);
        expect(ours.value.contentType).toBe(content.contentType);
        expect(toHex(ours.value.authenticatedData)).toBe(toHex(content.authenticatedData));
        expect(ours.value.contentType).toBe(field.replace('public_message_', ''));
      }
      const bytes = hex(vector['private_message']!);
      const ours = readFraming(bytes);
      const theirs = decodeMlsMessage(bytes, 0)?.[0];
      if (!ours.ok || ours.value.wireFormat !== 'private_message' || theirs?.wireformat !== 'mls_private_message') {
        throw new Error('private_message: not read as a private message');
      }
      expect(toHex(ours.value.groupId)).toBe(toHex(theirs.privateMessage.groupId));
      expect(ours.value.epoch).toBe(theirs.privateMessage.epoch);
      expect(ours.value.contentType).toBe(theirs.privateMessage.contentType);
      const info = readFraming(hex(vector['mls_group_info']!));
      const decodedInfo = decodeMlsMessage(hex(vector['mls_group_info']!), 0)?.[0];
      if (!info.ok || info.value.wireFormat !== 'group_info' || decodedInfo?.wireformat !== 'mls_group_info') {
        throw new Error('group_info: not read');
      }
      expect(toHex(info.value.groupId)).toBe(toHex(decodedInfo.groupInfo.groupContext.groupId));
      expect(info.value.epoch).toBe(decodedInfo.groupInfo.groupContext.epoch);
    }
  });

  it('decodes every structure of every vector and encodes it back to the same bytes (ts-mls)', () => {
    // Each field of the vector, with the codec of its structure (RFC 9420 test-vectors.md, "Messages").
    type Codec = {
      decode: (b: Uint8Array, offset: number) => [unknown, number] | undefined;
      encode: (v: never) => Uint8Array;
    };
    const codec = <T>(
      decode: (b: Uint8Array, o: number) => [T, number] | undefined,
      encode: (v: T) => Uint8Array,
    ): Codec => ({ decode, encode });
    const message = codec(decodeMlsMessage, encodeMlsMessage);
    const codecs: Record<string, Codec> = {
      mls_welcome: message,
      mls_group_info: message,
      mls_key_package: message,
      ratchet_tree: codec(decodeRatchetTree, encodeRatchetTree),
      group_secrets: codec(decodeGroupSecrets, encodeGroupSecrets),
      add_proposal: codec(decodeAdd, encodeAdd),
      update_proposal: codec(decodeUpdate, encodeUpdate),
      remove_proposal: codec(decodeRemove, encodeRemove),
      pre_shared_key_proposal: codec(decodePSK, encodePSK),
      re_init_proposal: codec(decodeReinit, encodeReinit),
      external_init_proposal: codec(decodeExternalInit, encodeExternalInit),
      group_context_extensions_proposal: codec(decodeGroupContextExtensions, encodeGroupContextExtensions),
      commit: codec(decodeCommit, encodeCommit),
      public_message_application: message,
      public_message_proposal: message,
      public_message_commit: message,
      private_message: message,
    };
    expect(Object.keys(vectors[0] ?? {}).sort()).toEqual(Object.keys(codecs).sort());
    let checked = 0;
    for (const [i, vector] of vectors.entries()) {
      for (const [field, { decode, encode }] of Object.entries(codecs)) {
        const bytes = hex(vector[field]!);
        const decoded = decode(bytes, 0);
        if (!decoded) throw new Error(`vector ${i} ${field}: does not decode`);
        expect(decoded[1], `vector ${i} ${field}: bytes left over`).toBe(bytes.length);
        expect(toHex(encode(decoded[0] as never)), `vector ${i} ${field}`).toBe(vector[field]);
        checked++;
      }
    }
    expect(checked).toBe(vectors.length * 17);
  });

  it('refuses every truncation of a handshake message with a typed error', () => {
    for (const vector of vectors.slice(0, 20)) {
      for (const field of ['public_message_commit', 'private_message', 'mls_group_info']) {
        const bytes = hex(vector[field]!);
        const whole = readFraming(bytes);
        if (!whole.ok) throw new Error(`${field}: whole message refused`);
        // Cut inside the parsed prefix: at least one field is then incomplete.
        const parsedPrefix = field === 'private_message' ? bytes.length : Math.min(bytes.length, 64);
        for (let cut = 0; cut < parsedPrefix; cut++) {
          const result = readFraming(bytes.subarray(0, cut));
          if (result.ok && field === 'private_message') throw new Error(`private_message cut at ${cut} accepted`);
          if (!result.ok) expect(result.error.type).toBe('MalformedMlsMessage');
        }
      }
    }
  });
});

describeVectors('MLS varint: deserialization.json', 'mls/deserialization.json', () => {
  it('reads every length header', () => {
    const vectors = readJsonVector('mls/deserialization.json') as VarintVector[];
    expect(vectors.length).toBeGreaterThan(0);
    for (const { vlbytes_header, length } of vectors) {
      expect(new TlsReader(hex(vlbytes_header)).varint(), vlbytes_header).toBe(length);
    }
  });
});

describe('MLS framing: hostile input', () => {
  it('refuses unknown versions, wire formats, sender and content types, and non-minimal lengths', () => {
    const cases: [string, string][] = [
      ['0002 0001', 'unsupported protocol version 2'],
      ['0001 0009', 'unknown wire format 9'],
      ['0001 0001 01aa 0000000000000000 09', 'unknown sender type 9'],
      ['0001 0002 01aa 0000000000000000 07', 'unknown content type'],
      ['0001 0002 4001aa', 'shortest form'],
      ['0001 0002 80000001aa', 'shortest form'],
      ['0001 0001 01aa 0000000000000000 01 00000000 00 07', 'unknown content type'],
      ['0001 0002 c000000000000001aa', 'invalid 8-byte length prefix'],
      ['0001 0002 3f', 'truncated'],
    ];
    for (const [hexText, reason] of cases) {
      const result = readFraming(hex(hexText.replaceAll(' ', '')));
      expect(result.ok, hexText).toBe(false);
      if (!result.ok) expect(result.error.reason).toContain(reason);
    }
  });

  it('never throws on random bytes', () => {
    let seed = 7;
    const next = () => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) & 0xff;
    for (let i = 0; i < 2000; i++) {
      const bytes = Uint8Array.from({ length: 4 + (i % 80) }, next);
      if (i % 3 === 0) bytes.set([0, 1, 0, 1 + (i % 5)]);
      expect(() => readFraming(bytes)).not.toThrow();
    }
  });
});
