/**
 * SSP/1 signed events.
 *
 * Wire layout (canonical CBOR):
 *   EventBody   = {v:1, domain, signer: 32B, seq: uint ≥ 1, prev: 32B, table, row,
 *                  op, cols, hlc: {ms, counter}}
 *   op "put"    cols = {column: value, …}    per-column last-writer-wins
 *   op "del"    cols = {}                    tombstones the row; a later put resurrects it
 *   op "remove" cols = {hwm: uint, trusted_hwm?: uint, domain_hwms?: string}  keyring only:
 *                                            permanent removal that keeps the removed signer's
 *                                            public-lane events with seq ≤ hwm, trusted-lane ones
 *                                            with seq ≤ trusted_hwm (absent: none), and in each
 *                                            created domain's chain those ≤ its mark in
 *                                            domain_hwms ("RESTRICTED=4,RESTRICTED/trusted=1";
 *                                            a chain not named keeps none)
 *   lane        optional "trusted" | "local": the privacy lane (sync-manifest.ts),
 *               absent for the public lane; each lane of a signer is its own chain
 *   gen         the key generation the envelope is sealed under, in a created domain's
 *               events (absent in CONTROL and GENERAL, and in events written before it
 *               existed): each generation of a created domain is its own chain (chains.ts),
 *               and the opener refuses an envelope of another generation
 *   SignedEvent = [body: bytes, sig: 64B]        sig = Ed25519("sov/1/event" ‖ body)
 *   EventId     = BLAKE3(SignedEvent bytes)
 *
 * `seq` and `prev` chain each signer's events per lane (prev of seq 1 is 32 zero bytes), so
 * a replica can tell a gap, a fork or a rewrite from a duplicate. The body is kept
 * as the exact signed bytes; decoding refuses anything non-canonical, so an event
 * has one byte string, one id and one signature.
 */
import { concat, isBytes, toHex, utf8 } from './bytes.js';
import { decodeCbor, encodeCbor, isRecord } from './cbor.js';
import { blake3 } from './hash.js';
import { isHlc, type Hlc } from './hlc.js';
import type { Signer, Verifier } from './ports.js';
import { err, ok, type Result } from './result.js';
import {
  domainOf,
  isBuiltInDomain,
  isDomainName,
  tableSpec,
  type ColumnValue,
  type DomainName,
  type TableSpec,
} from './schema.js';
import { parseDomainMarks } from './chains.js';

export const EVENT_VERSION = 1;
export const MAX_EVENT_BYTES = 64 * 1024;
export const MAX_COLUMNS = 64;
export const MAX_VALUE_CHARS = 16 * 1024;
/**
 * Table and row names. 192 fits the longest row key the schema forms: an object access
 * record's `<DOMAIN>:<writer hex>:<storage id hex>:<generation>` (at most 173 characters).
 */
export const MAX_NAME_CHARS = 192;
export const ZERO_HASH = new Uint8Array(32);
const SIGN_LABEL = utf8('sov/1/event');

export type EventBody = {
  readonly v: number;
  readonly domain: DomainName;
  readonly signer: Uint8Array;
  readonly seq: number;
  readonly prev: Uint8Array;
  readonly table: string;
  readonly row: string;
  readonly op: EventOp;
  readonly cols: Readonly<Record<string, ColumnValue>>;
  readonly hlc: Hlc;
  /** Absent in the public lane. */
  readonly lane?: 'trusted' | 'local';
  /** A created domain's key generation the event is sealed under (chains.ts). */
  readonly gen?: number;
};

export type EventOp = 'put' | 'del' | 'remove';
export const EVENT_OPS: readonly EventOp[] = ['put', 'del', 'remove'];

export type SignedEvent = {
  readonly body: EventBody;
  readonly bodyBytes: Uint8Array;
  readonly sig: Uint8Array;
  readonly bytes: Uint8Array;
  readonly id: Uint8Array;
};

export type EventError =
  { readonly type: 'MalformedEvent'; readonly reason: string } | { readonly type: 'SignatureInvalid' };

const malformed = (reason: string): Result<never, EventError> => err({ type: 'MalformedEvent', reason });

function isName(value: unknown): value is string {
  return typeof value === 'string' && value.length > 0 && value.length <= MAX_NAME_CHARS && /^[\w.:-]+$/.test(value);
}

function checkOp(table: string, op: EventOp, cols: unknown): string | undefined {
  const spec = tableSpec(table);
  if (!spec) return `unknown table ${table}`;
  if (!isRecord(cols)) return 'cols is not a map';
  if (op === 'del') {
    if (!spec.deletable) return `rows of ${table} cannot be deleted`;
    return Object.keys(cols).length === 0 ? undefined : 'a delete carries no columns';
  }
  if (op === 'remove') {
    if (!spec.removable) return `rows of ${table} cannot be removed`;
    const mark = (v: unknown) => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
    const { domain_hwms: domainMarks, ...rest } = cols;
    const names = Object.keys(rest).sort().join(',');
    const shaped = names === 'hwm' || (names === 'hwm,trusted_hwm' && mark(cols['trusted_hwm']));
    const domainsShaped = domainMarks === undefined || parseDomainMarks(domainMarks) !== undefined;
    return shaped && domainsShaped && mark(cols['hwm'])
      ? undefined
      : 'a removal carries only {hwm: uint, trusted_hwm?: uint, domain_hwms?: "DOMAIN[/lane]=seq,…"}';
  }
  return checkColumns(table, spec, cols);
}

function checkColumns(table: string, spec: TableSpec, cols: Record<string, unknown>): string | undefined {
  const names = Object.keys(cols);
  if (names.length === 0 || names.length > MAX_COLUMNS) return 'cols count out of range';
  for (const name of names) {
    const kind = spec.columns[name];
    if (!kind) return `unknown column ${table}.${name}`;
    const value = cols[name];
    if (value === null) continue;
    if (typeof value !== kind) return `column ${table}.${name} expects ${kind}`;
    if (typeof value === 'string' && value.length > MAX_VALUE_CHARS) return `column ${table}.${name} too long`;
    if (typeof value === 'number' && !Number.isFinite(value)) return `column ${table}.${name} not finite`;
    const allowed = spec.ranked?.[name] ?? spec.choices?.[name];
    if (allowed && !allowed.includes(value as string)) {
      return `column ${table}.${name} expects one of ${allowed.join('|')}`;
    }
  }
  return undefined;
}

/** Validates a decoded body; returns a reason string for the first problem found. */
export function checkBody(body: unknown): string | undefined {
  if (!isRecord(body)) return 'body is not a map';
  const keys = Object.keys(body)
    .filter((k) => k !== 'lane' && k !== 'gen')
    .sort()
    .join(',');
  if (keys !== 'cols,domain,hlc,op,prev,row,seq,signer,table,v')
    return `unexpected fields ${Object.keys(body).sort().join(',')}`;
  const b = body;
  if ('gen' in b && (typeof b['gen'] !== 'number' || !Number.isSafeInteger(b['gen']) || b['gen'] < 1)) return 'bad gen';
  if ('gen' in b && isDomainName(b['domain']) && isBuiltInDomain(b['domain'])) {
    return 'a built-in domain names no generation';
  }
  if ('lane' in b && b['lane'] !== 'trusted' && b['lane'] !== 'local') return 'bad lane';
  if ('lane' in b && b['domain'] === 'CONTROL') return 'control records travel in the public lane';
  if (b['v'] !== EVENT_VERSION) return 'unsupported version';
  if (!isDomainName(b['domain'])) return 'unknown domain';
  if (!isBytes(b['signer'], 32)) return 'signer must be 32 bytes';
  if (typeof b['seq'] !== 'number' || !Number.isSafeInteger(b['seq']) || b['seq'] < 1) return 'bad seq';
  if (!isBytes(b['prev'], 32)) return 'prev must be 32 bytes';
  if (!isName(b['table']) || !isName(b['row'])) return 'bad table or row name';
  if (!EVENT_OPS.includes(b['op'] as EventOp)) return 'unsupported op';
  if (!isHlc(b['hlc'])) return 'bad hlc';
  if (domainOf(b['table'], b['row']) !== b['domain']) {
    return tableSpec(b['table'])?.domain === 'row'
      ? `row ${b['row']} of ${b['table']} is not in domain ${b['domain']}`
      : `table ${b['table']} is not in domain ${b['domain']}`;
  }
  return checkOp(b['table'], b['op'] as EventOp, b['cols']);
}

export function signingPayload(bodyBytes: Uint8Array): Uint8Array {
  return concat(SIGN_LABEL, bodyBytes);
}

/** Encodes, signs and names a new event. Throws if the body breaks an invariant (a bug, not input). */
export async function signEvent(body: EventBody, signer: Signer): Promise<SignedEvent> {
  const problem = checkBody(body);
  if (problem) throw new Error(`event: refusing to sign invalid body: ${problem}`);
  const bodyBytes = encodeCbor(body);
  if (bodyBytes.length > MAX_EVENT_BYTES) throw new Error('event: body exceeds size limit');
  const sig = await signer.sign(signingPayload(bodyBytes));
  const bytes = encodeCbor([bodyBytes, sig]);
  return { body, bodyBytes, sig, bytes, id: blake3(bytes) };
}

/** The event id (BLAKE3 of the signed event) in hex, as replicas index it. */
export function eventIdOf(event: SignedEvent): string {
  return toHex(event.id);
}

/** Decodes and checks shape only; the signature is checked by `verifyEvent`. */
export function decodeEvent(bytes: Uint8Array): Result<SignedEvent, EventError> {
  // Views: the body bytes and signature are read (decoded, verified), never stored; the body's own fields are copies.
  const outer = decodeCbor(bytes, MAX_EVENT_BYTES + 128, { views: true });
  if (!outer.ok) return malformed(outer.error.reason);
  const pair = outer.value;
  if (!Array.isArray(pair) || pair.length !== 2 || !isBytes(pair[0]) || !isBytes(pair[1], 64)) {
    return malformed('signed event must be [body, sig]');
  }
  const [bodyBytes, sig] = pair as [Uint8Array, Uint8Array];
  const inner = decodeCbor(bodyBytes, MAX_EVENT_BYTES);
  if (!inner.ok) return malformed(inner.error.reason);
  const problem = checkBody(inner.value);
  if (problem) return malformed(problem);
  return ok({ body: inner.value as EventBody, bodyBytes, sig, bytes, id: blake3(bytes) });
}

export async function verifyEvent(event: SignedEvent, verifier: Verifier): Promise<Result<SignedEvent, EventError>> {
  const valid = await verifier.verify(event.body.signer, signingPayload(event.bodyBytes), event.sig);
  return valid ? ok(event) : err({ type: 'SignatureInvalid' });
}
