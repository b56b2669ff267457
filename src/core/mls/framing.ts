/**
 * A key-less reader of MLS message framing (RFC 9420 §6, §6.2, §6.3.1, §12.4.3):
 * what the relay's blind sequencer and any storage-only machine may learn from
 * an MLS message without a single key — its wire format, and for handshake
 * messages the group id, epoch, content type and (cleartext) authenticated data.
 *
 *   MLSMessage     = version u16 (mls10 = 1) · wire_format u16 · body
 *   PublicMessage  = group_id<V> · epoch u64 · sender · authenticated_data<V> ·
 *                    content_type u8 · …   (sender = type u8 [· index u32])
 *   PrivateMessage = group_id<V> · epoch u64 · content_type u8 ·
 *                    authenticated_data<V> · encrypted_sender_data<V> · ciphertext<V>
 *   GroupInfo      = group_context (version u16 · suite u16 · group_id<V> · epoch u64 · …) · …
 *
 * `<V>` is the MLS variable-length vector: a 1-, 2- or 4-byte big-endian length
 * whose top two bits give its size (§2.1.2); the 8-byte form is invalid and a
 * length must use its shortest form. Everything read from the bytes is bounded
 * before it is used; a malformed message is a typed error, never an exception.
 * Only the fields above are parsed: the body beyond them is opaque here, and a
 * member's MLS library validates it.
 */
import { err, ok, type Result } from '../result.js';

export type WireFormat = 'public_message' | 'private_message' | 'welcome' | 'group_info' | 'key_package';
export type ContentType = 'application' | 'proposal' | 'commit';

const WIRE_FORMATS: Readonly<Record<number, WireFormat>> = {
  1: 'public_message',
  2: 'private_message',
  3: 'welcome',
  4: 'group_info',
  5: 'key_package',
};
const CONTENT_TYPES: Readonly<Record<number, ContentType>> = { 1: 'application', 2: 'proposal', 3: 'commit' };
/** Sender types whose sender carries a u32 index (§6.1): member, external. */
const INDEXED_SENDERS = new Set([1, 2]);
const KNOWN_SENDERS = new Set([1, 2, 3, 4]);
export type SenderType = 'member' | 'external' | 'new_member_proposal' | 'new_member_commit';
const SENDER_TYPES: Readonly<Record<number, SenderType>> = {
  1: 'member',
  2: 'external',
  3: 'new_member_proposal',
  4: 'new_member_commit',
};

export type MlsFraming =
  | {
      readonly wireFormat: 'public_message' | 'private_message';
      readonly groupId: Uint8Array;
      readonly epoch: bigint;
      readonly contentType: ContentType;
      readonly authenticatedData: Uint8Array;
      /** A PublicMessage's sender type (§6.1); a PrivateMessage hides its sender. */
      readonly sender?: SenderType;
    }
  | { readonly wireFormat: 'group_info'; readonly groupId: Uint8Array; readonly epoch: bigint }
  | { readonly wireFormat: 'welcome' | 'key_package' };

export type FramingError = { readonly type: 'MalformedMlsMessage'; readonly reason: string };

class Truncated extends Error {}

/** A bounded cursor over untrusted bytes; every read checks the remaining length first. */
export class TlsReader {
  #pos = 0;
  constructor(private readonly bytes: Uint8Array) {}

  #need(n: number): number {
    if (n > this.bytes.length - this.#pos) throw new Truncated(`mls: truncated at byte ${this.#pos}`);
    const at = this.#pos;
    this.#pos += n;
    return at;
  }

  u8(): number {
    return this.bytes[this.#need(1)]!;
  }

  u16(): number {
    const at = this.#need(2);
    return (this.bytes[at]! << 8) | this.bytes[at + 1]!;
  }

  u64(): bigint {
    const at = this.#need(8);
    let value = 0n;
    for (let i = 0; i < 8; i++) value = (value << 8n) | BigInt(this.bytes[at + i]!);
    return value;
  }

  /** An MLS variable-length integer (§2.1.2): 1, 2 or 4 bytes, shortest form only. */
  varint(): number {
    const first = this.bytes[this.#need(1)]!;
    const prefix = first >> 6;
    if (prefix === 0) return first & 0x3f;
    if (prefix === 3) throw new Truncated('mls: invalid 8-byte length prefix');
    const size = prefix === 1 ? 2 : 4;
    const at = this.#need(size - 1);
    let value = first & 0x3f;
    for (let i = 0; i < size - 1; i++) value = value * 256 + this.bytes[at + i]!;
    if ((size === 2 && value < 0x40) || (size === 4 && value < 0x4000)) {
      throw new Truncated('mls: length not in its shortest form');
    }
    return value;
  }

  /** A `<V>` vector's contents (a copy, never a view of the input). */
  vector(): Uint8Array {
    const length = this.varint();
    const at = this.#need(length);
    return this.bytes.slice(at, at + length);
  }

  skip(n: number): void {
    this.#need(n);
  }
}

/** Reads what a key-less party may learn from one MLSMessage; trailing bytes are not inspected. */
export function readFraming(bytes: Uint8Array): Result<MlsFraming, FramingError> {
  try {
    return readMessage(new TlsReader(bytes));
  } catch (e) {
    if (e instanceof Truncated) return malformed(e.message);
    throw e;
  }
}

function malformed(reason: string): Result<never, FramingError> {
  return err({ type: 'MalformedMlsMessage', reason });
}

function readMessage(r: TlsReader): Result<MlsFraming, FramingError> {
  const version = r.u16();
  if (version !== 1) return malformed(`mls: unsupported protocol version ${version}`);
  const code = r.u16();
  const wireFormat = WIRE_FORMATS[code];
  if (!wireFormat) return malformed(`mls: unknown wire format ${code}`);
  switch (wireFormat) {
    case 'public_message':
      return readPublic(r);
    case 'private_message':
      return readPrivate(r);
    case 'group_info': {
      r.u16(); // group_context.version
      r.u16(); // group_context.cipher_suite
      const groupId = r.vector();
      return ok({ wireFormat, groupId, epoch: r.u64() });
    }
    default:
      return ok({ wireFormat });
  }
}

function readPublic(r: TlsReader): Result<MlsFraming, FramingError> {
  const groupId = r.vector();
  const epoch = r.u64();
  const senderType = r.u8();
  if (!KNOWN_SENDERS.has(senderType)) return malformed(`mls: unknown sender type ${senderType}`);
  if (INDEXED_SENDERS.has(senderType)) r.skip(4);
  const authenticatedData = r.vector();
  const contentType = CONTENT_TYPES[r.u8()];
  if (!contentType) return malformed('mls: unknown content type');
  const sender = SENDER_TYPES[senderType]!;
  return ok({ wireFormat: 'public_message', groupId, epoch, contentType, authenticatedData, sender });
}

function readPrivate(r: TlsReader): Result<MlsFraming, FramingError> {
  const groupId = r.vector();
  const epoch = r.u64();
  const contentType = CONTENT_TYPES[r.u8()];
  if (!contentType) return malformed('mls: unknown content type');
  const authenticatedData = r.vector();
  r.vector(); // encrypted_sender_data
  r.vector(); // ciphertext
  return ok({ wireFormat: 'private_message', groupId, epoch, contentType, authenticatedData });
}
