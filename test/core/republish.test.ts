/**
 * Rows written while they could not be published go out under the key generation current at
 * publication (core/republish.ts): a machine removed from a domain meanwhile, which holds only
 * the older generation, cannot open them; readers of only the newer one can; rows already
 * published keep theirs; nothing changes in the writer's rows.
 */
import { describe, expect, it } from 'vitest';
import { decodeSealed } from '../../src/core/seal.js';
import { PUBLISHED } from '../../src/core/republish.js';
import { SyncEngine, type DeliveryMessage } from '../../src/core/sync.js';
import type { ColumnValue } from '../../src/core/schema.js';
import { makeMachine, makeMesh, seededRandom, type Machine } from '../helpers/deterministic.js';

async function mustWrite(m: Machine, table: string, row: string, cols: Record<string, ColumnValue>): Promise<void> {
  const result = await m.replica.write(table, row, cols);
  if (!result.ok) throw new Error(`write refused: ${result.error.type}`);
}

const rowsOf = async (m: Machine, table: string) =>
  Object.fromEntries((await m.store.rows(table)).map((r) => [r.row, r.cells['title']?.value]));

/**
 * A (admin) and B read RESTRICTED at generation 1; R reads it too and is the machine that will
 * be left out of generation 2; F holds only generation 2 (let in from now on). B's engine
 * records what it sends to A.
 */
async function setup(seed: string) {
  const mesh = makeMesh(seed);
  const first = seededRandom(`${seed}/gen1`).bytes(32);
  const second = seededRandom(`${seed}/gen2`).bytes(32);
  const withR = { domains: ['CONTROL', 'GENERAL', 'RESTRICTED'], keys: { RESTRICTED: first } };
  const a = makeMachine('A', `${seed}/A`, mesh, withR);
  const b = makeMachine('B', `${seed}/B`, mesh, withR);
  const r = makeMachine('R', `${seed}/R`, mesh, withR);
  const f = makeMachine('F', `${seed}/F`, mesh);
  f.keyring.add('RESTRICTED', 2, second);
  mesh.anchors.push(a.id);
  for (const m of [b, r, f]) await mustWrite(a, 'keyring', m.id, { name: m.name, endpoint: m.id });
  await mustWrite(a, 'domains', 'RESTRICTED', { purpose: 'cores' });
  const controlLog = (await a.store.entriesAfter(0, 100)).map((e) => e.sealed);
  for (const m of [b, r, f]) await m.replica.ingest(a.id, controlLog, 99);
  const sent: Uint8Array[] = [];
  const channel = {
    send: async (_peer: string, m: DeliveryMessage) => {
      if (m.t === 'events') sent.push(...m.events);
    },
  };
  const engine = new SyncEngine(b.replica, b.store, channel, { signerOf: (p) => (p === a.id ? a.id : undefined) });
  engine.setPeers([a.id]);
  /** The rotation that leaves R out: everyone else holds generation 2 from now on. */
  const rotate = () => {
    for (const m of [a, b]) m.keyring.add('RESTRICTED', 2, second);
  };
  return { a, b, r, f, engine, sent, rotate };
}

const gensOf = (envelopes: readonly Uint8Array[]) =>
  envelopes.flatMap((bytes) => {
    const sealed = decodeSealed(bytes);
    return sealed.ok && sealed.value.domain === 'RESTRICTED' ? [sealed.value.gen] : [];
  });

describe('rows written offline are sealed under the generation current at publication', () => {
  it('a row written under generation 1 and published after the rotation goes out under generation 2', async () => {
    const { b, r, f, engine, sent, rotate } = await setup('republish1');
    await mustWrite(b, 'field_notes', 'RESTRICTED:1', { title: 'offline core', text: '' });
    await mustWrite(b, 'field_notes', 'RESTRICTED:2', { title: 'second', text: '' });
    const before = await rowsOf(b, 'field_notes');
    rotate();
    await engine.connected();
    expect(gensOf(sent)).toEqual([2, 2]);
    // The writer's rows are what they were; its log keeps the originals, withdrawn.
    expect(await rowsOf(b, 'field_notes')).toEqual(before);
    const restricted = (await b.store.entriesAfter(0, 100)).filter((e) => e.domain === 'RESTRICTED');
    expect(restricted.map((e) => [e.body?.gen, e.seq, e.revoked === true])).toEqual([
      [1, 1, true],
      [1, 2, true],
      [2, 1, false],
      [2, 2, false],
    ]);
    expect(await b.store.cursor(PUBLISHED)).toBe(await b.store.lastPos());
    // A reader of generation 2 only applies both; the machine left out opens neither.
    expect((await f.replica.ingest(b.id, sent, 1)).map((o) => o.type)).toEqual(['Applied', 'Applied']);
    expect(await rowsOf(f, 'field_notes')).toEqual(before);
    expect((await r.replica.ingest(b.id, sent, 1)).map((o) => o.type)).toEqual(['StoredOpaque', 'StoredOpaque']);
    expect(await rowsOf(r, 'field_notes')).toEqual({});
  });

  it('rows already handed to the transport keep their generation; nothing is issued twice', async () => {
    const { b, engine, sent, rotate } = await setup('republish2');
    await mustWrite(b, 'field_notes', 'RESTRICTED:1', { title: 'published', text: '' });
    await engine.connected();
    expect(gensOf(sent)).toEqual([1]);
    const logged = await b.store.lastPos();
    rotate();
    expect(await b.replica.republish()).toEqual([]);
    await engine.resend(true);
    expect(await b.store.lastPos()).toBe(logged);
    expect(gensOf(sent)).toEqual([1, 1]); // the unacknowledged frame offered again, as it was
  });

  it('moved rows follow rows written under the new generation in its chain, and a second pass finds nothing', async () => {
    const { a, b, f, engine, sent, rotate } = await setup('republish3');
    await mustWrite(b, 'field_notes', 'RESTRICTED:1', { title: 'old', text: '' });
    rotate();
    b.clock.advance(5);
    await mustWrite(b, 'field_notes', 'RESTRICTED:2', { title: 'new', text: '' });
    const moved = await b.replica.republish();
    expect(moved.map((m) => [m.domain, m.from, m.to])).toEqual([['RESTRICTED', 1, 2]]);
    expect(await b.replica.republish()).toEqual([]);
    await engine.connected();
    const opened = (await b.store.entriesAfter(0, 100)).filter((e) => e.domain === 'RESTRICTED' && !e.revoked);
    expect(opened.map((e) => [e.body?.gen, e.seq, e.body?.row])).toEqual([
      [2, 1, 'RESTRICTED:2'],
      [2, 2, 'RESTRICTED:1'],
    ]);
    expect(gensOf(sent)).toEqual([2, 2]);
    // The chain links for every reader: no gap, both rows applied, on the admin too.
    for (const m of [f, a]) {
      const outcomes = await m.replica.ingest(b.id, sent, 1);
      expect(outcomes.filter((o) => o.type !== 'Applied')).toEqual([]);
      expect(await rowsOf(m, 'field_notes')).toEqual({ 'RESTRICTED:1': 'old', 'RESTRICTED:2': 'new' });
      expect(await m.store.parkedCount()).toBe(0);
    }
  });

  it('a withdrawn original is never offered again, and rows of built-in domains are never moved', async () => {
    const { b, engine, sent, rotate } = await setup('republish4');
    await mustWrite(b, 'field_notes', 'GENERAL:1', { title: 'open', text: '' });
    await mustWrite(b, 'field_notes', 'RESTRICTED:1', { title: 'closed', text: '' });
    rotate();
    await engine.connected();
    expect(sent).toHaveLength(2);
    expect(gensOf(sent)).toEqual([2]);
    // Offered again from the start (the cursor never moved: nothing was acknowledged).
    sent.length = 0;
    await engine.resend(true);
    expect(sent).toHaveLength(2);
    expect(gensOf(sent)).toEqual([2]);
    const withdrawn = (await b.store.entriesAfter(0, 100)).filter((e) => e.revoked);
    expect(withdrawn.map((e) => e.body?.row)).toEqual(['RESTRICTED:1']);
  });

  it('with nobody to offer to nothing moves; rows still unpublished move once a peer is there', async () => {
    const { a, b, engine, sent, rotate } = await setup('republish5');
    engine.setPeers([]);
    await mustWrite(b, 'field_notes', 'RESTRICTED:1', { title: 'alone', text: '' });
    rotate();
    const logged = await b.store.lastPos();
    await engine.connected();
    expect(await b.store.lastPos()).toBe(logged);
    engine.setPeers([a.id]);
    await engine.resend(true);
    expect(gensOf(sent)).toEqual([2]);
    expect(await b.store.lastPos()).toBe(logged + 1);
  });

  it('moves only its own rows: others’ rows it holds, withdrawn originals and local-lane rows stay as they are', async () => {
    const { a, b, engine, sent, rotate } = await setup('republish6');
    // A's row under generation 1, held by B and never offered by B: not B's to move.
    await mustWrite(a, 'field_notes', 'RESTRICTED:from-a', { title: 'a wrote it', text: '' });
    const fromA = (await a.store.entriesAfter(0, 100)).filter((e) => e.domain === 'RESTRICTED').map((e) => e.sealed);
    await b.replica.ingest(a.id, fromA, 99);
    await mustWrite(b, 'field_notes', 'RESTRICTED:from-b', { title: 'b wrote it', text: '' });
    rotate();
    const moved = await b.replica.republish();
    expect(moved.map((m) => [m.domain, m.from, m.to])).toEqual([['RESTRICTED', 1, 2]]);
    // A third generation: the withdrawn original is not moved again, the moved row is.
    const third = seededRandom('republish6/gen3').bytes(32);
    b.keyring.add('RESTRICTED', 3, third);
    const again = await b.replica.republish();
    expect(again.map((m) => [m.from, m.to])).toEqual([[2, 3]]);
    await engine.connected();
    expect(gensOf(sent)).toEqual([3]);
  });

  it('a removed machine moves nothing', async () => {
    const { a, b, rotate } = await setup('republish7');
    await mustWrite(b, 'field_notes', 'RESTRICTED:1', { title: 'before removal', text: '' });
    expect((await a.replica.remove(b.id)).ok).toBe(true);
    const removal = (await a.store.entriesAfter(0, 100)).map((e) => e.sealed);
    await b.replica.ingest(a.id, removal, 99);
    expect((await b.store.row('keyring', b.id))?.removed).toBeDefined();
    rotate();
    expect(await b.replica.republish()).toEqual([]);
  });
});
