/**
 * The relay's blind object store end to end: a real relay on 127.0.0.1:0 with its store on a
 * temporary dataDir, `RelayObjectClient` for round trips and resumes, and requests signed
 * here with noble Ed25519 (exactly as core/relay-http.ts specifies) for the raw cases. Every
 * refusal is one row of a table: its code and status, and afterwards the statuses, the list
 * and the files of the mesh's object directory are exactly what they were before.
 *
 * Bugs this file found, fixed in the source:
 *   - object-store.ts created `<id>.meta`/`<id>.part` (and reserved quota) for an object it
 *     had never seen BEFORE checking the offset, so a first put at a non-zero offset answered
 *     `offset-mismatch` but left an upload in progress behind ("changes nothing" broken).
 *   - relay-objects.ts accepted any safe-integer `total` in a get response, and the client
 *     allocated `new Uint8Array(total)` from it: a relay answering total 2^40 made `download`
 *     throw a RangeError instead of returning BadResponse. The decoder now bounds it by
 *     MAX_OBJECT_BYTES, like the request side.
 */
import {
  appendFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ed25519 } from '@noble/curves/ed25519.js';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { admissionBody, admissionSigningPayload, encodeAdmission } from '../../src/core/admission.js';
import { bytesEqual, compareBytes, fromHex, toHex } from '../../src/core/bytes.js';
import { encodeCbor } from '../../src/core/cbor.js';
import { blake3 } from '../../src/core/hash.js';
import type { Random, Signer } from '../../src/core/ports.js';
import type { Result } from '../../src/core/result.js';
import {
  AUTH_HEADER,
  CBOR_CONTENT_TYPE,
  decodeErrorBody,
  encodeMailboxBody,
  type RelayHttpErrorCode,
} from '../../src/core/relay-http.js';
import {
  MAX_OBJECT_BYTES,
  MAX_OBJECT_CHUNK,
  OBJECT_ROUTES,
  decodeObjectRequest,
  decodeObjectResponse,
  encodeObjectBody,
  type GetResponse,
  type ListedObject,
  type ObjectResponse,
  type ObjectRoute,
} from '../../src/core/relay-objects.js';
import { BlindObjectStore } from '../../src/relay/object-store.js';
import { fileTap, readTap } from '../../src/relay/tap.js';
import { startRelay, type RelayHandle, type RelayOptions } from '../../src/relay/server.js';
import { RelayObjectClient, type ObjectClientError } from '../../src/runtime/relay-objects-client.js';
import { seededRandom } from '../helpers/deterministic.js';
import { freePort, spawnRelay } from '../helpers/relay-child.js';
import { joinRelay, type Key } from '../helpers/relay-client.js';
import { ALICE, authHeader, BOB, CAROL, DAVE, OTHER_TOPIC, TOPIC, type Signing } from '../helpers/relay-http.js';

const TAG = new Uint8Array(32).fill(0x11);
const OTHER_TAG = new Uint8Array(32).fill(0x22);
const CHUNK = 1000;

type StoredObject = { readonly id: Uint8Array; readonly bytes: Uint8Array };

/** Seeded bytes and their storage id. */
function object(size: number, seed: string): StoredObject {
  const bytes = seededRandom(`objects/${seed}`).bytes(size);
  return { id: blake3(bytes), bytes };
}

type Answer = { readonly status: number; readonly body: Uint8Array };
type Req = { readonly path: string; readonly body: Uint8Array; readonly headers: Record<string, string> };

/** A correctly signed request as raw parts, for cases that break one of them. */
function signed(who: Key, route: ObjectRoute, value: unknown, s: Signing = {}): Req {
  const body = encodeCbor(value);
  const path = OBJECT_ROUTES[route];
  return { path, body, headers: { 'Content-Type': CBOR_CONTENT_TYPE, [AUTH_HEADER]: authHeader(who, path, body, s) } };
}

async function post(relay: RelayHandle, r: Req): Promise<Answer> {
  const res = await fetch(`${relay.url}${r.path}`, {
    method: 'POST',
    headers: r.headers,
    body: new Uint8Array(r.body),
  });
  return { status: res.status, body: new Uint8Array(await res.arrayBuffer()) };
}

async function call<R extends ObjectRoute>(
  relay: RelayHandle,
  who: Key,
  route: R,
  value: unknown,
  s: Signing = {},
): Promise<ObjectResponse[R]> {
  const answer = await post(relay, signed(who, route, value, s));
  if (answer.status !== 200)
    throw new Error(`${route}: ${answer.status} ${JSON.stringify(decodeErrorBody(answer.body))}`);
  const decoded = decodeObjectResponse(route, answer.body);
  if (!decoded.ok) throw new Error(decoded.error.reason);
  return decoded.value;
}

function refusalOf(answer: Answer): { status: number; code: RelayHttpErrorCode } {
  const decoded = decodeErrorBody(answer.body);
  if (!decoded.ok) throw new Error(`not an error body (${answer.status}): ${decoded.error.reason}`);
  return { status: answer.status, code: decoded.value.code };
}

/** Puts `bytes[from, to)` of `o` in CHUNK-sized raw requests. */
async function putRange(relay: RelayHandle, who: Key, o: StoredObject, from: number, to: number, tag = TAG) {
  for (let offset = from; offset < to; offset += CHUNK) {
    const chunk = o.bytes.subarray(offset, Math.min(offset + CHUNK, to));
    await call(relay, who, 'put', { id: o.id, tag, total: o.bytes.length, offset, chunk });
  }
}

const signerOf = (who: Key): Signer => ({ publicKey: who.id, sign: async (m) => ed25519.sign(m, who.secret) });
let nonceStreams = 0;
/** A fresh seeded stream per client: two clients of one endpoint never share a nonce. */
const nonces = (): Random => seededRandom(`object-store/nonces/${nonceStreams++}`);

const listed = (objects: readonly ListedObject[]) =>
  objects.map((o) => ({ id: toHex(o.id), tag: toHex(o.tag), size: o.size }));

const urlOf = (input: Parameters<typeof fetch>[0]): string =>
  typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;

/** How a client call ended: 'ok', the error type, or the relay's refusal as `code status`. */
function outcome(r: Result<unknown, ObjectClientError>): string {
  if (r.ok) return 'ok';
  return r.error.type === 'HttpRefused' ? `${r.error.code} ${r.error.status}` : r.error.type;
}

function unwrap<T>(r: Result<T, ObjectClientError>): T {
  if (!r.ok) throw new Error(`unexpected ${JSON.stringify(r.error)}`);
  return r.value;
}

describe('relay blind object store', () => {
  let dir: string;
  const relays: RelayHandle[] = [];
  const dataDir = (): string => join(dir, 'data');
  const topicDir = (topic = TOPIC): string => join(dataDir(), 'objects', toHex(topic));
  /** The mesh's object directory: every file and its size. */
  const files = (topic = TOPIC): Array<[string, number]> =>
    existsSync(topicDir(topic))
      ? readdirSync(topicDir(topic))
          .sort()
          .map((name) => [name, statSync(join(topicDir(topic), name)).size])
      : [];

  const start = async (options: Partial<RelayOptions> = {}): Promise<RelayHandle> => {
    const relay = await startRelay({
      port: 0,
      dataDir: dataDir(),
      log: () => undefined,
      admission: 'open',
      ...options,
    });
    relays.push(relay);
    return relay;
  };
  const restart = async (relay: RelayHandle, options: Partial<RelayOptions> = {}): Promise<RelayHandle> => {
    relays.splice(relays.indexOf(relay), 1);
    await relay.close();
    return start(options);
  };
  /** Authenticates each endpoint once over WebSocket (membership), then leaves. */
  const members = async (relay: RelayHandle, topic: Uint8Array, ...who: Key[]): Promise<void> => {
    for (const w of who) {
      const client = await joinRelay(relay.wsUrl, topic, w.id, (payload) => ed25519.sign(payload, w.secret));
      await client.close();
    }
  };
  const clientOf = (
    relay: RelayHandle,
    options: { who?: Key; topic?: Uint8Array; fetch?: typeof fetch } = {},
  ): RelayObjectClient =>
    new RelayObjectClient({
      baseUrl: relay.url,
      topic: options.topic ?? TOPIC,
      signer: signerOf(options.who ?? ALICE),
      clock: { now: () => Date.now() },
      random: nonces(),
      chunkBytes: CHUNK,
      fetch: options.fetch,
    });

  const cbor = (body: Uint8Array, status = 200): Response =>
    new Response(new Uint8Array(body), { status, headers: { 'Content-Type': CBOR_CONTENT_TYPE } });
  /** A client of a relay that serves gets as `serve` says; `gets` records each request's offset. */
  const servedBy = (
    serve: (offset: number, length: number) => GetResponse | Response,
    gets: number[] = [],
  ): RelayObjectClient => {
    const fake: typeof fetch = (input, init) => {
      expect(urlOf(input)).toBe(`http://relay.test${OBJECT_ROUTES.get}`);
      const request = decodeObjectRequest('get', init?.body as Uint8Array);
      if (!request.ok) throw new Error(request.error.reason);
      gets.push(request.value.offset);
      const served = serve(request.value.offset, request.value.length);
      return Promise.resolve(served instanceof Response ? served : cbor(encodeObjectBody(served)));
    };
    return new RelayObjectClient({
      baseUrl: 'http://relay.test',
      topic: TOPIC,
      signer: signerOf(ALICE),
      clock: { now: () => Date.now() },
      random: nonces(),
      chunkBytes: CHUNK,
      fetch: fake,
    });
  };

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'sov-objects-'));
  });
  afterEach(async () => {
    await Promise.all(relays.splice(0).map((r) => r.close()));
    rmSync(dir, { recursive: true, force: true });
  });

  describe('round trips through the client', () => {
    it('uploads a many-chunk object, lists it under its tag only, and downloads the same bytes', async () => {
      const relay = await start();
      await members(relay, TOPIC, ALICE);
      const client = clientOf(relay);
      const o = object(10_240, 'round-trip');

      const sent: number[] = [];
      expect(unwrap(await client.upload(o.id, TAG, o.bytes, (done, total) => sent.push(done, total)))).toEqual({
        resumedFrom: 0,
      });
      const steps = [1000, 2000, 3000, 4000, 5000, 6000, 7000, 8000, 9000, 10_000, 10_240];
      expect(sent).toEqual(steps.flatMap((s) => [s, 10_240]));
      expect(unwrap(await client.status(o.id))).toEqual({ have: 10_240, total: 10_240, complete: true });

      const received: number[] = [];
      const back = unwrap(await client.download(o.id, (done) => received.push(done)));
      expect(bytesEqual(back, o.bytes)).toBe(true);
      expect(received).toEqual(steps);

      const entry = { id: toHex(o.id), tag: toHex(TAG), size: 10_240 };
      expect(listed(unwrap(await client.listAll(TAG)))).toEqual([entry]);
      expect(unwrap(await client.listAll(OTHER_TAG))).toEqual([]);
      expect(listed(unwrap(await client.listAll(null)))).toEqual([entry]);

      // On disk: the object under its id, its tag beside it, nothing in progress.
      expect(files()).toEqual([
        [toHex(o.id), 10_240],
        [`${toHex(o.id)}.tag`, 64],
      ]);
      expect(bytesEqual(new Uint8Array(readFileSync(join(topicDir(), toHex(o.id)))), o.bytes)).toBe(true);
    });

    it('a tapped relay records every object request and answer whole: heads, bodies, times and connections', async () => {
      const tapFile = join(dir, 'wire.tap');
      const relay = await start({ tap: fileTap(tapFile) });
      await members(relay, TOPIC, ALICE);
      const client = clientOf(relay);
      const o = object(2500, 'tapped');
      unwrap(await client.upload(o.id, TAG, o.bytes));
      unwrap(await client.status(o.id));
      unwrap(await client.listAll(TAG));
      const back = unwrap(await client.download(o.id));
      const records = readTap(readFileSync(tapFile));
      const http = records.filter((r) => r.channel === 'http');
      const routes = http.filter((r) => r.direction === 'in').map((r) => r.head.split('\n')[0]);
      for (const route of ['put', 'status', 'list', 'get']) expect(routes).toContain(`POST /api/v1/objects/${route}`);
      // Requests carry their headers (the signed authorization among them); answers their status.
      const put = http.find((r) => r.head.startsWith('POST /api/v1/objects/put'))!;
      expect(put.head.toLowerCase()).toContain('content-type: application/cbor');
      expect(put.head.toLowerCase()).toContain(`\n${AUTH_HEADER}: `);
      // Every byte of the object crossed the tap, in the put requests and again in the get answers.
      const contains = (dir: 'in' | 'out') =>
        Buffer.concat(http.filter((r) => r.direction === dir).map((r) => Buffer.from(r.bytes))).includes(
          Buffer.from(o.bytes.subarray(0, 1000)),
        );
      expect(contains('in')).toBe(true);
      expect(contains('out')).toBe(true);
      expect(bytesEqual(back, o.bytes)).toBe(true);
      // Each answer follows its request on the same connection; times never go back.
      for (const [i, r] of http.entries()) {
        if (r.direction === 'out') expect([http[i - 1]!.direction, http[i - 1]!.conn]).toEqual(['in', r.conn]);
      }
      expect(http.every((r) => r.head.length > 0 && r.conn > 0)).toBe(true);
      const times = records.map((r) => r.at);
      expect(times).toEqual([...times].sort((a, b) => a - b));
      expect(times[0]).toBeGreaterThan(Date.now() - 60_000);
      // The WebSocket session that made Alice a member is there too, under its serial.
      expect(records.some((r) => r.channel === 'ws' && r.direction === 'in' && r.conn >= 1)).toBe(true);
    });

    it('answers complete, without change, when a complete object is put again', async () => {
      const relay = await start();
      await members(relay, TOPIC, ALICE);
      const client = clientOf(relay);
      const o = object(3500, 'again');
      unwrap(await client.upload(o.id, TAG, o.bytes));
      const before = files();

      const progress: number[] = [];
      expect(unwrap(await client.upload(o.id, TAG, o.bytes, (done) => progress.push(done)))).toEqual({
        resumedFrom: 3500,
      });
      expect(progress).toEqual([3500]);
      // A raw put of the first chunk, even under another tag, changes nothing either.
      const again = { id: o.id, tag: OTHER_TAG, total: 3500, offset: 0, chunk: o.bytes.subarray(0, CHUNK) };
      expect(await call(relay, ALICE, 'put', again)).toEqual({ have: 3500, complete: true });

      expect(files()).toEqual(before);
      expect(listed(unwrap(await client.listAll(null)))).toEqual([{ id: toHex(o.id), tag: toHex(TAG), size: 3500 }]);
      expect(bytesEqual(unwrap(await client.download(o.id)), o.bytes)).toBe(true);
    });

    it('keeps the objects of one mesh invisible to another mesh, even one the same endpoint belongs to', async () => {
      const relay = await start();
      await members(relay, TOPIC, ALICE);
      await members(relay, OTHER_TOPIC, ALICE, DAVE);
      const o = object(2500, 'private');
      unwrap(await clientOf(relay).upload(o.id, TAG, o.bytes));

      for (const who of [DAVE, ALICE]) {
        const other = clientOf(relay, { who, topic: OTHER_TOPIC });
        expect(unwrap(await other.listAll(null))).toEqual([]);
        expect(unwrap(await other.listAll(TAG))).toEqual([]);
        expect(unwrap(await other.status(o.id))).toEqual({ have: 0, total: 0, complete: false });
        const got = await other.download(o.id);
        expect(outcome(got)).toBe('NotFound');
      }
      expect(files(OTHER_TOPIC)).toEqual([]);
      expect(files().map(([name]) => name)).toEqual([toHex(o.id), `${toHex(o.id)}.tag`]);
    });
  });

  describe('resuming', () => {
    it('continues from what the relay has, and reports progress from there', async () => {
      const relay = await start();
      await members(relay, TOPIC, ALICE);
      const o = object(10_000, 'resume');
      await putRange(relay, ALICE, o, 0, 2 * CHUNK);
      const client = clientOf(relay);
      expect(unwrap(await client.status(o.id))).toEqual({ have: 2000, total: 10_000, complete: false });
      expect(unwrap(await client.listAll(null))).toEqual([]);

      const progress: number[] = [];
      expect(unwrap(await client.upload(o.id, TAG, o.bytes, (done) => progress.push(done)))).toEqual({
        resumedFrom: 2000,
      });
      // The first chunk sent is the third: nothing below what the relay already had is re-sent.
      expect(progress).toEqual([3000, 4000, 5000, 6000, 7000, 8000, 9000, 10_000]);
      expect(bytesEqual(unwrap(await client.download(o.id)), o.bytes)).toBe(true);
    });

    it('keeps a partial upload across a relay restart and resumes it with a new client', async () => {
      let relay = await start();
      await members(relay, TOPIC, ALICE);
      const o = object(10_000, 'restart');
      // The connection drops after the fourth put: the client answers Network, the relay keeps 4000.
      let puts = 0;
      const flaky: typeof fetch = (input, init) => {
        if (urlOf(input).endsWith(OBJECT_ROUTES.put) && ++puts > 4) return Promise.reject(new Error('connection lost'));
        return fetch(input, init);
      };
      const dropped = await clientOf(relay, { fetch: flaky }).upload(o.id, TAG, o.bytes);
      expect(outcome(dropped)).toBe('Network');
      const partial = files();
      expect(partial).toEqual([
        [`${toHex(o.id)}.meta`, partial[0]![1]],
        [`${toHex(o.id)}.part`, 4000],
      ]);

      relay = await restart(relay);
      const client = clientOf(relay);
      expect(unwrap(await client.status(o.id))).toEqual({ have: 4000, total: 10_000, complete: false });
      const progress: number[] = [];
      expect(unwrap(await client.upload(o.id, TAG, o.bytes, (done) => progress.push(done)))).toEqual({
        resumedFrom: 4000,
      });
      expect(progress[0]).toBe(5000);

      relay = await restart(relay);
      const after = clientOf(relay);
      expect(unwrap(await after.status(o.id))).toEqual({ have: 10_000, total: 10_000, complete: true });
      expect(listed(unwrap(await after.listAll(TAG)))).toEqual([{ id: toHex(o.id), tag: toHex(TAG), size: 10_000 }]);
      expect(bytesEqual(unwrap(await after.download(o.id)), o.bytes)).toBe(true);
    });

    it('finishes on restart an upload whose last chunk arrived before the relay died (sov relay, SIGKILL)', async () => {
      // A real relay process, killed with SIGKILL after 9 of 10 chunks; the dead process had
      // appended the last chunk but not yet hashed and renamed it, which is what is on disk.
      const port = await freePort();
      let child = await spawnRelay(port, dataDir());
      const url = `http://127.0.0.1:${port}`;
      const handle = { url, wsUrl: `ws://127.0.0.1:${port}/ws` } as RelayHandle;
      try {
        // `sov relay` enforces admission: an admin's list names ALICE, pushed from her session.
        const body = admissionBody({
          v: 1,
          topic: TOPIC,
          version: 1,
          signer: DAVE.id,
          admins: [DAVE.id],
          endpoints: [ALICE.id],
          invites: [],
        });
        const alice = await joinRelay(handle.wsUrl, TOPIC, ALICE.id, (p) => ed25519.sign(p, ALICE.secret));
        alice.send({
          t: 'admit',
          record: encodeAdmission(body, ed25519.sign(admissionSigningPayload(body), DAVE.secret)),
        });
        await alice.expect('admitted');
        await alice.close();
        const o = object(10_000, 'killed');
        await putRange(handle, ALICE, o, 0, 9000);
        child.kill('SIGKILL');
        await new Promise((resolve) => child.once('exit', resolve));
        appendFileSync(join(topicDir(), `${toHex(o.id)}.part`), o.bytes.subarray(9000));
        expect(files().map(([name]) => name)).toEqual([`${toHex(o.id)}.meta`, `${toHex(o.id)}.part`]);

        child = await spawnRelay(port, dataDir());
        const client = clientOf(handle);
        expect(unwrap(await client.status(o.id))).toEqual({ have: 10_000, total: 10_000, complete: true });
        expect(bytesEqual(unwrap(await client.download(o.id)), o.bytes)).toBe(true);
        expect(files().map(([name]) => name)).toEqual([toHex(o.id), `${toHex(o.id)}.tag`]);
      } finally {
        child.kill('SIGKILL');
      }
    });

    it('on restart, completes, drops or tidies what a crash left at each step of completing an upload', async () => {
      let relay = await start();
      await members(relay, TOPIC, ALICE);
      const [whole, renamed, forged] = [object(3000, 'whole'), object(3000, 'renamed'), object(3000, 'forged')];
      relay = await restart(relay);
      await relay.close();
      relays.splice(relays.indexOf(relay), 1);
      const meta = (o: StoredObject) => JSON.stringify({ tag: toHex(TAG), total: o.bytes.length });
      mkdirSync(topicDir(), { recursive: true });
      // Every byte arrived, nothing hashed yet.
      writeFileSync(join(topicDir(), `${toHex(whole.id)}.meta`), meta(whole));
      writeFileSync(join(topicDir(), `${toHex(whole.id)}.part`), whole.bytes);
      // Renamed into place; the `.meta` not yet removed.
      writeFileSync(join(topicDir(), `${toHex(renamed.id)}.meta`), meta(renamed));
      writeFileSync(join(topicDir(), `${toHex(renamed.id)}.tag`), toHex(TAG));
      writeFileSync(join(topicDir(), toHex(renamed.id)), renamed.bytes);
      // All bytes "arrived", but they are not the object's: dropped, never listed.
      writeFileSync(join(topicDir(), `${toHex(forged.id)}.meta`), meta(forged));
      writeFileSync(join(topicDir(), `${toHex(forged.id)}.part`), whole.bytes);
      // A `.part` with no `.meta` (an older relay's leftover): no upload, removed.
      writeFileSync(join(topicDir(), `${'ab'.repeat(32)}.part`), new Uint8Array(10));

      relay = await start();
      const client = clientOf(relay);
      expect(unwrap(await client.status(whole.id))).toEqual({ have: 3000, total: 3000, complete: true });
      expect(unwrap(await client.status(renamed.id))).toEqual({ have: 3000, total: 3000, complete: true });
      expect(unwrap(await client.status(forged.id))).toEqual({ have: 0, total: 0, complete: false });
      expect(files().map(([name]) => name)).toEqual(
        [toHex(whole.id), `${toHex(whole.id)}.tag`, toHex(renamed.id), `${toHex(renamed.id)}.tag`].sort(),
      );
      // The forged id can be uploaded for real now.
      expect(outcome(await client.upload(forged.id, TAG, forged.bytes))).toBe('ok');
    });

    it('releases the reservation of an abandoned upload once it has been idle, so others can store', async () => {
      const limits = { maxBytesPerTopic: 20_000, uploadIdleMs: 60_000 };
      const relay = await start({ objectLimits: limits });
      await members(relay, TOPIC, ALICE);
      // Eight 1-byte puts declaring 2,500 bytes each reserve the whole quota.
      const abandoned = Array.from({ length: 8 }, (_, i) => object(2500, `abandoned-${i}`));
      for (const o of abandoned) await putRange(relay, ALICE, o, 0, 1);
      const client = clientOf(relay);
      const fresh = object(2000, 'fresh');
      expect(outcome(await client.upload(fresh.id, TAG, fresh.bytes))).toBe('quota 507');
      // An hour passes with no chunk for them: their reservations are released.
      const hourAgo = new Date(Date.now() - 3_600_000);
      for (const o of abandoned) utimesSync(join(topicDir(), `${toHex(o.id)}.part`), hourAgo, hourAgo);
      expect(outcome(await client.upload(fresh.id, TAG, fresh.bytes))).toBe('ok');
      expect(files().filter(([name]) => name.endsWith('.part'))).toEqual([]);
    });

    it('forgets the put queue of an object once its puts have settled', async () => {
      const store = await BlindObjectStore.open(dataDir());
      for (let i = 0; i < 20; i++) {
        const o = object(1500, `queue-${i}`);
        const puts = [0, 1000].map((offset) =>
          store.put(TOPIC, { id: o.id, tag: TAG, total: 1500, offset, chunk: o.bytes.subarray(offset, offset + 1000) }),
        );
        expect(store.busy).toBe(1);
        expect((await Promise.all(puts)).map((r) => r.ok)).toEqual([true, true]);
      }
      await new Promise((resolve) => setTimeout(resolve, 0));
      expect(store.busy).toBe(0);
    });

    it('picks up after another writer moved the upload on (offset-mismatch, then status once)', async () => {
      const relay = await start();
      await members(relay, TOPIC, ALICE, BOB);
      const o = object(5000, 'two-writers');
      // Before the client's third put, Bob (another tab) puts that chunk himself.
      let puts = 0;
      const racing: typeof fetch = async (input, init) => {
        if (urlOf(input).endsWith(OBJECT_ROUTES.put) && ++puts === 3) await putRange(relay, BOB, o, 2000, 3000);
        return fetch(input, init);
      };
      const progress: number[] = [];
      const client = clientOf(relay, { fetch: racing });
      expect(unwrap(await client.upload(o.id, TAG, o.bytes, (done) => progress.push(done)))).toEqual({
        resumedFrom: 0,
      });
      expect(progress).toEqual([1000, 2000, 4000, 5000]);
      expect(bytesEqual(unwrap(await client.download(o.id)), o.bytes)).toBe(true);
    });
  });

  describe('refusals leave the store as it was', () => {
    const KEPT = object(3000, 'kept');
    const PARTIAL = object(5000, 'partial');
    const FRESH = object(3000, 'fresh');
    const IMPOSTOR = object(3000, 'impostor');

    type Case = {
      readonly name: string;
      readonly code: RelayHttpErrorCode;
      readonly status: number;
      readonly options?: Partial<RelayOptions>;
      readonly send: (relay: RelayHandle) => Promise<Answer>;
    };
    /** The put that would succeed next: PARTIAL's third chunk. */
    const nextPut = (s: Signing = {}, who = ALICE): Req =>
      signed(
        who,
        'put',
        { id: PARTIAL.id, tag: TAG, total: 5000, offset: 2000, chunk: PARTIAL.bytes.subarray(2000, 3000) },
        s,
      );
    const putFresh = (fields: Record<string, unknown>): Req =>
      signed(ALICE, 'put', {
        id: FRESH.id,
        tag: TAG,
        total: 3000,
        offset: 0,
        chunk: FRESH.bytes.subarray(0, CHUNK),
        ...fields,
      });
    const withoutAuth = (r: Req): Req => ({ ...r, headers: { 'Content-Type': CBOR_CONTENT_TYPE } });
    /** A body signed as is and posted as is. */
    const raw = (route: ObjectRoute, body: Uint8Array): Req => {
      const path = OBJECT_ROUTES[route];
      return {
        path,
        body,
        headers: { 'Content-Type': CBOR_CONTENT_TYPE, [AUTH_HEADER]: authHeader(ALICE, path, body) },
      };
    };

    const cases: Case[] = [
      // Resuming and hashing.
      {
        name: 'put behind what the relay has',
        code: 'offset-mismatch',
        status: 409,
        send: (relay) =>
          post(
            relay,
            signed(ALICE, 'put', {
              id: PARTIAL.id,
              tag: TAG,
              total: 5000,
              offset: 1000,
              chunk: PARTIAL.bytes.subarray(1000, 2000),
            }),
          ),
      },
      {
        name: 'put ahead of what the relay has',
        code: 'offset-mismatch',
        status: 409,
        send: (relay) =>
          post(
            relay,
            signed(ALICE, 'put', {
              id: PARTIAL.id,
              tag: TAG,
              total: 5000,
              offset: 3000,
              chunk: PARTIAL.bytes.subarray(3000, 4000),
            }),
          ),
      },
      {
        name: 'first put of an unknown object at a non-zero offset',
        code: 'offset-mismatch',
        status: 409,
        send: (relay) => post(relay, putFresh({ offset: 1000, chunk: FRESH.bytes.subarray(1000, 2000) })),
      },
      {
        name: 'put with another total than the upload in progress',
        code: 'offset-mismatch',
        status: 409,
        send: (relay) =>
          post(
            relay,
            signed(ALICE, 'put', {
              id: PARTIAL.id,
              tag: TAG,
              total: 6000,
              offset: 2000,
              chunk: PARTIAL.bytes.subarray(2000, 3000),
            }),
          ),
      },
      {
        name: 'put with another tag than the upload in progress',
        code: 'offset-mismatch',
        status: 409,
        send: (relay) =>
          post(
            relay,
            signed(ALICE, 'put', {
              id: PARTIAL.id,
              tag: OTHER_TAG,
              total: 5000,
              offset: 2000,
              chunk: PARTIAL.bytes.subarray(2000, 3000),
            }),
          ),
      },
      {
        name: 'whole upload whose bytes do not hash to the id (the partial upload is dropped)',
        code: 'hash-mismatch',
        status: 422,
        send: async (relay) => {
          await putRange(relay, ALICE, { id: FRESH.id, bytes: IMPOSTOR.bytes }, 0, 2000);
          expect(await call(relay, ALICE, 'status', { id: FRESH.id })).toEqual({
            have: 2000,
            total: 3000,
            complete: false,
          });
          return post(relay, putFresh({ offset: 2000, chunk: IMPOSTOR.bytes.subarray(2000) }));
        },
      },
      {
        name: 'upload over the mesh quota (uploads in progress count in full)',
        code: 'quota',
        status: 507,
        // KEPT (3000) + PARTIAL (5000 reserved, 2000 held) + FRESH (3000) > 10 000.
        options: { objectLimits: { maxBytesPerTopic: 10_000 } },
        send: (relay) => post(relay, putFresh({})),
      },
      {
        name: 'total 0',
        code: 'object-too-large',
        status: 413,
        send: (relay) => post(relay, putFresh({ total: 0 })),
      },
      {
        name: 'total over MAX_OBJECT_BYTES',
        code: 'object-too-large',
        status: 413,
        send: (relay) => post(relay, putFresh({ total: MAX_OBJECT_BYTES + 1 })),
      },
      // Reads.
      {
        name: 'get of an unknown id',
        code: 'not-found',
        status: 404,
        send: (relay) => post(relay, signed(ALICE, 'get', { id: FRESH.id, offset: 0, length: CHUNK })),
      },
      {
        name: 'get of an upload still in progress',
        code: 'not-found',
        status: 404,
        send: (relay) => post(relay, signed(ALICE, 'get', { id: PARTIAL.id, offset: 0, length: CHUNK })),
      },
      {
        name: 'get at the end of the object',
        code: 'malformed',
        status: 400,
        send: (relay) => post(relay, signed(ALICE, 'get', { id: KEPT.id, offset: 3000, length: CHUNK })),
      },
      // Malformed bodies.
      {
        name: 'put without a tag',
        code: 'malformed',
        status: 400,
        send: (relay) =>
          post(
            relay,
            signed(ALICE, 'put', { id: FRESH.id, total: 3000, offset: 0, chunk: FRESH.bytes.subarray(0, CHUNK) }),
          ),
      },
      {
        name: 'put with an extra field',
        code: 'malformed',
        status: 400,
        send: (relay) => post(relay, putFresh({ extra: 1 })),
      },
      {
        name: 'put with a 31-byte id',
        code: 'malformed',
        status: 400,
        send: (relay) => post(relay, putFresh({ id: FRESH.id.subarray(0, 31) })),
      },
      {
        name: 'put with a chunk past total',
        code: 'malformed',
        status: 400,
        send: (relay) => post(relay, putFresh({ total: 999 })),
      },
      {
        name: 'put with an empty chunk',
        code: 'malformed',
        status: 400,
        send: (relay) => post(relay, putFresh({ chunk: new Uint8Array(0) })),
      },
      {
        name: 'put with a chunk over MAX_OBJECT_CHUNK',
        code: 'malformed',
        status: 400,
        send: (relay) =>
          post(relay, putFresh({ total: MAX_OBJECT_CHUNK + 1, chunk: new Uint8Array(MAX_OBJECT_CHUNK + 1) })),
      },
      {
        name: 'status with a 31-byte id',
        code: 'malformed',
        status: 400,
        send: (relay) => post(relay, signed(ALICE, 'status', { id: KEPT.id.subarray(0, 31) })),
      },
      {
        name: 'get with length 0',
        code: 'malformed',
        status: 400,
        send: (relay) => post(relay, signed(ALICE, 'get', { id: KEPT.id, offset: 0, length: 0 })),
      },
      {
        name: 'list with limit 0',
        code: 'malformed',
        status: 400,
        send: (relay) => post(relay, signed(ALICE, 'list', { tag: null, after: null, limit: 0 })),
      },
      {
        name: 'list with limit 1001',
        code: 'malformed',
        status: 400,
        send: (relay) => post(relay, signed(ALICE, 'list', { tag: null, after: null, limit: 1001 })),
      },
      {
        name: 'list with a 31-byte tag',
        code: 'malformed',
        status: 400,
        send: (relay) => post(relay, signed(ALICE, 'list', { tag: TAG.subarray(0, 31), after: null, limit: 10 })),
      },
      {
        name: 'body not CBOR (signed as is)',
        code: 'malformed',
        status: 400,
        send: (relay) => post(relay, raw('status', new TextEncoder().encode('{"id":"00"}'))),
      },
      {
        name: 'status body over its small bound',
        code: 'frame-too-large',
        status: 413,
        send: (relay) => post(relay, raw('status', new Uint8Array(4097))),
      },
      // Authentication, as the mailbox refuses it.
      {
        name: 'missing sov-auth header',
        code: 'malformed',
        status: 400,
        send: (relay) => post(relay, withoutAuth(nextPut())),
      },
      {
        name: 'signature by another key',
        code: 'auth-failed',
        status: 401,
        send: (relay) => post(relay, nextPut({ signer: BOB })),
      },
      {
        name: 'another route signed',
        code: 'auth-failed',
        status: 401,
        send: (relay) => post(relay, nextPut({ signedPath: OBJECT_ROUTES.status })),
      },
      {
        name: 'another topic signed than claimed',
        code: 'auth-failed',
        status: 401,
        send: (relay) => post(relay, nextPut({ signedTopic: OTHER_TOPIC })),
      },
      {
        name: 'timestamp 121 s old',
        code: 'stale',
        status: 401,
        send: (relay) => post(relay, nextPut({ ts: Date.now() - 121_000 })),
      },
      {
        name: 'endpoint that never authenticated over WebSocket',
        code: 'unknown-endpoint',
        status: 403,
        send: (relay) => post(relay, nextPut({}, CAROL)),
      },
      {
        name: 'member of another topic only, claiming this one',
        code: 'unknown-endpoint',
        status: 403,
        send: (relay) => post(relay, nextPut({}, DAVE)),
      },
      {
        name: 'member of this topic claiming another, where it is no member',
        code: 'unknown-endpoint',
        status: 403,
        send: (relay) => post(relay, nextPut({ topic: OTHER_TOPIC })),
      },
      {
        name: 'replayed nonce (the first use asked status, the replay puts)',
        code: 'replayed',
        status: 401,
        send: async (relay) => {
          const nonce = new Uint8Array(16).fill(7);
          const ts = Date.now();
          await call(relay, ALICE, 'status', { id: PARTIAL.id }, { nonce, ts });
          return post(relay, nextPut({ nonce, ts }));
        },
      },
      {
        name: 'replay of an accepted put',
        code: 'replayed',
        status: 401,
        send: async (relay) => {
          const r = signed(ALICE, 'put', {
            id: KEPT.id,
            tag: TAG,
            total: 3000,
            offset: 0,
            chunk: KEPT.bytes.subarray(0, CHUNK),
          });
          expect((await post(relay, r)).status).toBe(200);
          return post(relay, r);
        },
      },
      {
        name: 'requests over the rate',
        code: 'rate-limited',
        status: 429,
        // Enough for ALICE's setup and snapshots; BOB spends his whole burst first.
        options: { rateLimit: { perSecond: 0.001, burst: 20 } },
        send: async (relay) => {
          for (let i = 0; i < 20; i++) await call(relay, BOB, 'status', { id: PARTIAL.id });
          return post(relay, nextPut({}, BOB));
        },
      },
      // HTTP shape.
      {
        name: 'wrong content type',
        code: 'malformed',
        status: 415,
        send: (relay) => {
          const r = nextPut();
          return post(relay, { ...r, headers: { ...r.headers, 'Content-Type': 'application/json' } });
        },
      },
      {
        name: 'GET instead of POST',
        code: 'malformed',
        status: 405,
        send: async (relay) => {
          const res = await fetch(`${relay.url}${OBJECT_ROUTES.list}`);
          return { status: res.status, body: new Uint8Array(await res.arrayBuffer()) };
        },
      },
      {
        name: 'unknown objects route',
        code: 'malformed',
        status: 404,
        send: (relay) => post(relay, { ...nextPut(), path: '/api/v1/objects/delete' }),
      },
    ];

    /** What a refusal must not change, as ALICE sees it (raw requests, so the rate of BOB is untouched). */
    const snapshot = async (relay: RelayHandle) => ({
      statuses: await Promise.all([KEPT, PARTIAL, FRESH].map((o) => call(relay, ALICE, 'status', { id: o.id }))),
      list: listed((await call(relay, ALICE, 'list', { tag: null, after: null, limit: 1000 })).objects),
      files: files(),
      otherTopic: files(OTHER_TOPIC),
    });

    for (const c of cases) {
      it(`${c.name} → ${c.status} ${c.code}`, async () => {
        const relay = await start(c.options);
        await members(relay, TOPIC, ALICE, BOB);
        await members(relay, OTHER_TOPIC, DAVE);
        await putRange(relay, ALICE, KEPT, 0, 3000);
        await putRange(relay, ALICE, PARTIAL, 0, 2000);
        const before = await snapshot(relay);
        expect(before.statuses).toEqual([
          { have: 3000, total: 3000, complete: true },
          { have: 2000, total: 5000, complete: false },
          { have: 0, total: 0, complete: false },
        ]);

        expect(refusalOf(await c.send(relay))).toEqual({ status: c.status, code: c.code });

        expect(await snapshot(relay)).toEqual(before);
      });
    }

    it('reports the relay refusals to the client as typed values (HttpRefused, NotFound)', async () => {
      const relay = await start({ objectLimits: { maxBytesPerTopic: 7000 } });
      await members(relay, TOPIC, ALICE);
      const client = clientOf(relay);
      unwrap(await client.upload(KEPT.id, TAG, KEPT.bytes));

      const bad = await client.upload(FRESH.id, TAG, IMPOSTOR.bytes);
      expect(outcome(bad)).toBe('hash-mismatch 422');
      expect(unwrap(await client.status(FRESH.id))).toEqual({ have: 0, total: 0, complete: false });

      const over = await client.upload(PARTIAL.id, TAG, PARTIAL.bytes);
      expect(outcome(over)).toBe('quota 507');
      expect(unwrap(await client.status(PARTIAL.id))).toEqual({ have: 0, total: 0, complete: false });
      // The dropped upload gave its reservation back: 3000 + 4000 fits the 7000 exactly.
      const fits = object(4000, 'fits');
      unwrap(await client.upload(fits.id, OTHER_TAG, fits.bytes));

      const missing = await client.download(FRESH.id);
      expect(outcome(missing)).toBe('NotFound');
      expect(unwrap(await client.listAll(TAG)).map((o) => toHex(o.id))).toEqual([toHex(KEPT.id)]);
      expect(
        files().filter(([name]) => name.startsWith(toHex(FRESH.id)) || name.startsWith(toHex(PARTIAL.id))),
      ).toEqual([]);
    });
  });

  describe('the client verifies what it downloads', () => {
    const o = object(5000, 'served');
    const honest = (offset: number, length: number): GetResponse => ({
      total: o.bytes.length,
      chunk: o.bytes.subarray(offset, Math.min(offset + length, o.bytes.length)),
    });

    type Case = {
      readonly name: string;
      readonly serve: (offset: number, length: number) => GetResponse | Response;
      readonly expected: 'ok' | ObjectClientError['type'];
    };
    const cases: Case[] = [
      { name: 'an honest relay', serve: honest, expected: 'ok' },
      {
        name: 'bytes that do not hash to the id',
        serve: (offset, length) => {
          const part = honest(offset, length);
          const chunk = part.chunk.slice();
          if (offset === 2000) chunk[17] = chunk[17]! ^ 1;
          return { ...part, chunk };
        },
        expected: 'HashMismatch',
      },
      {
        name: 'a total that changes between chunks',
        serve: (offset, length) => ({ ...honest(offset, length), total: offset === 0 ? 5000 : 4000 }),
        expected: 'BadResponse',
      },
      {
        name: 'a first total smaller than its chunk',
        serve: (offset, length) => ({ ...honest(offset, length), total: 500 }),
        expected: 'BadResponse',
      },
      {
        name: 'a total beyond MAX_OBJECT_BYTES (must not be allocated)',
        serve: (offset, length) => ({ ...honest(offset, length), total: 2 ** 40 }),
        expected: 'BadResponse',
      },
      {
        name: 'an empty chunk before the end',
        serve: (offset, length) =>
          offset === 3000 ? { total: 5000, chunk: new Uint8Array(0) } : honest(offset, length),
        expected: 'BadResponse',
      },
      {
        name: 'a body that is not a get response',
        serve: () => cbor(encodeObjectBody({ have: 1, complete: true })),
        expected: 'BadResponse',
      },
      {
        name: 'a not-found refusal',
        serve: () => cbor(encodeMailboxBody({ code: 'not-found', message: 'no such object' }), 404),
        expected: 'NotFound',
      },
    ];

    for (const c of cases) {
      it(`${c.name} → ${c.expected}`, async () => {
        const gets: number[] = [];
        const client = servedBy(c.serve, gets);
        const got = await client.download(o.id);
        if (c.expected === 'ok') {
          expect(bytesEqual(unwrap(got), o.bytes)).toBe(true);
          expect(gets).toEqual([0, 1000, 2000, 3000, 4000]);
        } else {
          expect(outcome(got)).toBe(c.expected);
        }
      });
    }
  });

  describe('ranged reads (queries of objects not held here)', () => {
    const o = object(5000, 'ranged');
    const honest = (offset: number, length: number): GetResponse => ({
      total: o.bytes.length,
      chunk: o.bytes.subarray(offset, Math.min(offset + length, o.bytes.length)),
    });

    it('fetches exactly the range, in chunks, from a real relay and from a fake', async () => {
      const relay = await start();
      await members(relay, TOPIC, ALICE);
      const real = clientOf(relay);
      unwrap(await real.upload(o.id, TAG, o.bytes));
      expect(bytesEqual(unwrap(await real.range(o.id, 5000, 1500, 3700)), o.bytes.subarray(1500, 3700))).toBe(true);
      expect(unwrap(await real.range(o.id, 5000, 4990, 5000)).length).toBe(10);
      const gets: number[] = [];
      const fake = servedBy(honest, gets);
      expect(bytesEqual(unwrap(await fake.range(o.id, 5000, 1500, 3700)), o.bytes.subarray(1500, 3700))).toBe(true);
      expect(gets).toEqual([1500, 2500, 3500]);
      expect(unwrap(await fake.range(o.id, 5000, 10, 10)).length).toBe(0);
    });

    it('refuses a relay holding another size than the manifest says, or answering short', async () => {
      const other = servedBy((offset, length) => ({ ...honest(offset, length), total: 4999 }));
      expect(outcome(await other.range(o.id, 5000, 0, 100))).toBe('BadResponse');
      const short = servedBy((offset, length) => honest(offset, length - 1));
      expect(outcome(await short.range(o.id, 5000, 0, 100))).toBe('BadResponse');
      const gone = servedBy(() => cbor(encodeMailboxBody({ code: 'not-found', message: 'no such object' }), 404));
      expect(outcome(await gone.range(o.id, 5000, 0, 100))).toBe('NotFound');
      const none = servedBy(honest);
      await expect(none.range(o.id, 5000, 4000, 5001)).rejects.toThrow(RangeError);
      await expect(none.range(o.id, 5000, 20, 10)).rejects.toThrow(RangeError);
    });
  });

  describe('listing', () => {
    it('pages by limit in id order, with `more` until the end, and filters by tag', async () => {
      const relay = await start();
      await members(relay, TOPIC, ALICE);
      const client = clientOf(relay);
      const objects = [0, 1, 2, 3, 4].map((i) => ({
        ...object(100 + i, `page-${i}`),
        tag: i % 2 === 0 ? TAG : OTHER_TAG,
      }));
      for (const o of objects) unwrap(await client.upload(o.id, o.tag, o.bytes));
      const inOrder = [...objects].sort((a, b) => compareBytes(a.id, b.id));
      const expected = inOrder.map((o) => ({ id: toHex(o.id), tag: toHex(o.tag), size: o.bytes.length }));

      const pages: Array<{ ids: string[]; more: boolean }> = [];
      for (let after: Uint8Array | null = null; ;) {
        const page: ObjectResponse['list'] = await call(relay, ALICE, 'list', { tag: null, after, limit: 2 });
        pages.push({ ids: page.objects.map((e) => toHex(e.id)), more: page.more });
        if (!page.more) break;
        after = page.objects.at(-1)!.id;
      }
      const ids = expected.map((e) => e.id);
      expect(pages).toEqual([
        { ids: ids.slice(0, 2), more: true },
        { ids: ids.slice(2, 4), more: true },
        { ids: ids.slice(4), more: false },
      ]);

      expect(listed(unwrap(await client.listAll(null)))).toEqual(expected);
      expect(listed(unwrap(await client.listAll(TAG)))).toEqual(expected.filter((e) => e.tag === toHex(TAG)));
      const tagged = await call(relay, ALICE, 'list', { tag: OTHER_TAG, after: null, limit: 1 });
      expect(tagged.more).toBe(true);
      expect(listed(tagged.objects)).toEqual(expected.filter((e) => e.tag === toHex(OTHER_TAG)).slice(0, 1));
    });

    it('collects more than one page (1001 objects) with listAll, in id order', async () => {
      // Seeded on disk in the store's own layout (object-store.ts header) before the relay starts,
      // which also exercises loading complete objects on start; uploading 1001 would only be slow.
      mkdirSync(topicDir(), { recursive: true });
      const expected: Array<{ id: string; tag: string; size: number }> = [];
      for (let i = 0; i < 1001; i++) {
        const bytes = Uint8Array.of(i >> 8, i & 0xff, 0x5a);
        const id = toHex(blake3(bytes));
        writeFileSync(join(topicDir(), id), bytes);
        writeFileSync(join(topicDir(), `${id}.tag`), toHex(TAG));
        expected.push({ id, tag: toHex(TAG), size: 3 });
      }
      expected.sort((a, b) => (a.id < b.id ? -1 : 1));

      const relay = await start();
      await members(relay, TOPIC, ALICE);
      let lists = 0;
      const counting: typeof fetch = (input, init) => {
        if (urlOf(input).endsWith(OBJECT_ROUTES.list)) lists++;
        return fetch(input, init);
      };
      const client = clientOf(relay, { fetch: counting });
      expect(listed(unwrap(await client.listAll(null)))).toEqual(expected);
      expect(lists).toBe(2);
      expect(unwrap(await client.listAll(OTHER_TAG))).toEqual([]);
      const one = expected[500]!;
      expect(unwrap(await client.download(fromHex(one.id)!))).toHaveLength(3);
    });
  });
});
