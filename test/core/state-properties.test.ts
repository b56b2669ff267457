/**
 * Property tests of the state plane at the replica level (issue 3, "What must be
 * shown"): 3–5 replicas make random edits, deletes and resurrecting edits of a
 * few rows, while the admin removes a member that keeps writing and rotates
 * domain keys (a new generation reaches some members at once, others only when
 * the network heals, and never a member already removed); frames are
 * reordered, duplicated and dropped, then the network heals. Every run must end
 * with
 *  - byte-identical materialised state on every replica that holds every
 *    generation, equal to a model built
 *    independently from the generated events (per-cell max stamp, max delete
 *    stamp, min removal mark, revoked events left out), envelopes held opaque
 *    until their generation arrived filled in where they lie;
 *  - on a member removed before a rotation, nothing sealed under a generation
 *    it never received opened or materialised;
 *  - the removed member's events above the mark revoked everywhere and below it
 *    kept;
 *  - every (delete, put) pair of one row with the put stamped higher, neither
 *    revoked, in every replica's resurrections, reported exactly once there.
 *
 * Signatures use the fast keyed-hash stand-in: this file is about merge and
 * delivery, and Ed25519 would make 1,000 runs take minutes (forgery is covered
 * in replica.test.ts).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { toHex } from '../../src/core/bytes.js';
import { encodeCbor } from '../../src/core/cbor.js';
import type { EventBody } from '../../src/core/event.js';
import type { Stamp } from '../../src/core/hlc.js';
import { modelCompareStamps } from '../helpers/model-order.js';
import { isAlive, type Cell, type RowState } from '../../src/core/merge.js';
import type { IngestOutcome, WriteOutcome } from '../../src/core/replica.js';
import { TABLES, type ColumnValue, type DomainName } from '../../src/core/schema.js';
import { makeMachine, makeMesh, seededRandom, TestNetwork, type Machine } from '../helpers/deterministic.js';
import { runs } from '../helpers/runs.js';

const NUM_RUNS = runs(1000);
const ROWS = ['pump', 'valve'] as const;
const COLUMNS = ['name', 'location', 'schedule', 'notes', 'active'] as const;

type After =
  | { readonly kind: 'none' }
  | { readonly kind: 'push' }
  | { readonly kind: 'resend' }
  | { readonly kind: 'deliver'; readonly frames: number };

type Op = (
  | { readonly kind: 'put'; readonly by: number; readonly row: number; readonly cols: Record<string, ColumnValue> }
  | { readonly kind: 'del'; readonly by: number; readonly row: number }
  | { readonly kind: 'remove'; readonly victim: number }
  /** A new generation of `domain`; members whose bit is set in `late` receive it only when the network heals. */
  | { readonly kind: 'rotate'; readonly domain: 'GENERAL' | 'CONTROL'; readonly late: number }
) & { readonly dt: number; readonly after: After };

type Scenario = {
  readonly replicas: number;
  readonly ops: readonly Op[];
  readonly loss: number;
  readonly duplicate: number;
  readonly reorder: boolean;
  readonly seed: number;
  readonly topology: { readonly parents: readonly number[]; readonly extra: readonly (readonly [number, number])[] };
};

/** Machine 1 is the member that gets removed most often, so it writes more than the others. */
const writer = fc.oneof(fc.constant(1), fc.integer({ min: 0, max: 4 }));

const afterArb: fc.Arbitrary<After> = fc.oneof(
  { weight: 2, arbitrary: fc.constant({ kind: 'none' as const }) },
  { weight: 3, arbitrary: fc.constant({ kind: 'push' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'resend' as const }) },
  { weight: 3, arbitrary: fc.integer({ min: 1, max: 6 }).map((frames) => ({ kind: 'deliver' as const, frames })) },
);

const colsArb = fc
  .dictionary(fc.constantFrom(...COLUMNS), fc.oneof(fc.constantFrom('a', 'b', 'c'), fc.constant(null)), {
    minKeys: 1,
    maxKeys: 3,
  })
  .map((cols) => (cols['active'] === undefined ? cols : { ...cols, active: cols['active'] !== null }));

const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      kind: fc.constant('put' as const),
      by: writer,
      row: fc.integer({ min: 0, max: 1 }),
      cols: colsArb,
      dt: fc.integer({ min: 0, max: 3 }),
      after: afterArb,
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('del' as const),
      by: writer,
      row: fc.integer({ min: 0, max: 1 }),
      dt: fc.integer({ min: 0, max: 3 }),
      after: afterArb,
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('remove' as const),
      victim: fc.oneof(fc.constant(1), fc.integer({ min: 1, max: 4 })),
      dt: fc.integer({ min: 0, max: 3 }),
      after: afterArb,
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('rotate' as const),
      domain: fc.constantFrom('GENERAL' as const, 'CONTROL' as const),
      late: fc.nat(31),
      dt: fc.integer({ min: 0, max: 3 }),
      after: afterArb,
    }),
  },
);

const scenarioArb: fc.Arbitrary<Scenario> = fc.record({
  replicas: fc.integer({ min: 3, max: 5 }),
  ops: fc.array(opArb, { minLength: 1, maxLength: 12 }),
  loss: fc.constantFrom(0, 0.15, 0.3),
  duplicate: fc.constantFrom(0, 0.2),
  reorder: fc.boolean(),
  seed: fc.integer({ min: 0, max: 2 ** 30 }),
  topology: fc.record({
    parents: fc.array(fc.nat(), { minLength: 4, maxLength: 4 }),
    extra: fc.array(fc.tuple(fc.nat(4), fc.nat(4)), { maxLength: 2 }),
  }),
});

/**
 * Who syncs with whom: a random spanning tree plus a few extra links, so events
 * also travel through machines that only forward them, and every machine is reachable.
 */
function links(s: Scenario, ids: readonly string[]): [string, string][] {
  const out = new Set<string>();
  const add = (a: number, b: number) => {
    if (a !== b) out.add(a < b ? `${a},${b}` : `${b},${a}`);
  };
  for (let i = 1; i < ids.length; i++) add(i, s.topology.parents[i - 1]! % i);
  for (const [a, b] of s.topology.extra) add(a % ids.length, b % ids.length);
  return [...out].map((pair) => pair.split(',').map((i) => ids[Number(i)]!) as [string, string]);
}

/** One generated event as its writer signed it. */
type Generated = { readonly eventId: string; readonly outerId: string; readonly body: EventBody };

type Run = {
  readonly machines: Machine[];
  readonly net: TestNetwork;
  readonly events: Generated[];
  /** Resurrection keys reported to the application, per machine id, with their count. */
  readonly reported: Map<string, Map<string, number>>;
  /** Machines the admin has removed so far (indices): a rotation leaves them out. */
  readonly removed: Set<number>;
  /** Newest generation per domain, and the generations still to hand out when the network heals. */
  readonly generation: Record<'GENERAL' | 'CONTROL', number>;
  readonly late: {
    readonly machine: number;
    readonly domain: 'GENERAL' | 'CONTROL';
    readonly gen: number;
    readonly key: Uint8Array;
  }[];
};

function count(run: Run, machine: string, resurrections: readonly { key: string }[]): void {
  const seen = run.reported.get(machine)!;
  for (const r of resurrections) seen.set(r.key, (seen.get(r.key) ?? 0) + 1);
}

const appliedResurrections = (outcomes: readonly IngestOutcome[]) =>
  outcomes.flatMap((o) => (o.type === 'Applied' ? o.resurrections : []));

async function setUp(s: Scenario): Promise<Run> {
  const mesh = makeMesh(`props/${s.seed}`);
  const machines = Array.from({ length: s.replicas }, (_, i) =>
    makeMachine(`M${i}`, `props/${s.seed}/${i}`, mesh, { fastSignatures: true }),
  );
  const net = new TestNetwork(`props/${s.seed}`);
  const run: Run = {
    machines,
    net,
    events: [],
    reported: new Map(machines.map((m) => [m.id, new Map<string, number>()])),
    removed: new Set(),
    generation: { GENERAL: 1, CONTROL: 1 },
    late: [],
  };
  for (const m of machines) net.join(m, { onApplied: (outcomes) => count(run, m.id, appliedResurrections(outcomes)) });
  const admin = machines[0]!;
  mesh.anchors.push(admin.id);
  for (const m of machines.slice(1)) {
    await record(run, admin, await admin.replica.write('keyring', m.id, { name: m.name, endpoint: m.id }));
  }
  net.faults = { loss: s.loss, duplicate: s.duplicate, reorder: s.reorder };
  await net.connectAll(
    links(
      s,
      machines.map((m) => m.id),
    ),
  );
  return run;
}

/** Notes a successful local write: the event it made, and the resurrections it reported. */
async function record(
  run: Run,
  m: Machine,
  result: { ok: true; value: WriteOutcome } | { ok: false; error: { type: string } },
): Promise<void> {
  if (!result.ok) {
    // The only refusal these histories can meet: a member that already learnt of its removal.
    expect(result.error.type).toBe('Removed');
    return;
  }
  count(run, m.id, result.value.resurrections);
  const entry = (await m.store.entriesAfter((await m.store.lastPos()) - 1, 1))[0]!;
  expect(entry.outerId).toBe(result.value.outerId);
  run.events.push({ eventId: entry.eventId!, outerId: entry.outerId, body: entry.body! });
}

async function play(run: Run, op: Op): Promise<void> {
  const { machines, net } = run;
  if (op.kind === 'remove') {
    const admin = machines[0]!;
    const index = op.victim % machines.length === 0 ? 1 : op.victim % machines.length;
    admin.clock.advance(op.dt);
    await record(run, admin, await admin.replica.remove(machines[index]!.id));
    run.removed.add(index);
  } else if (op.kind === 'rotate') {
    const gen = ++run.generation[op.domain];
    const key = seededRandom(`rotate/${op.domain}/${gen}/${op.late}`).bytes(32);
    for (const [i, m] of machines.entries()) {
      if (run.removed.has(i)) continue;
      if (i !== 0 && (op.late >> i) & 1) run.late.push({ machine: i, domain: op.domain, gen, key });
      else m.keyring.add(op.domain, gen, key);
    }
  } else {
    const m = machines[op.by % machines.length]!;
    m.clock.advance(op.dt);
    const row = ROWS[op.row]!;
    const result =
      op.kind === 'put'
        ? await m.replica.write('device_profiles', row, op.cols)
        : await m.replica.delete('device_profiles', row);
    await record(run, m, result);
  }
  switch (op.after.kind) {
    case 'push':
      return net.offerAll();
    case 'resend':
      return net.resendAll();
    case 'deliver':
      await net.deliver(op.after.frames);
      return;
    case 'none':
      return;
  }
}

/** Hands out the generations that were late, lets every machine open what it held, and syncs to the end. */
async function heal(run: Run): Promise<void> {
  run.net.faults = { reorder: true };
  // A member removed before a rotation cannot open what came after it, so its writer's later
  // events wait with it (one chain per signer and lane): it is no bridge. Healing gives every
  // machine a link to every other, as the relay's sessions do.
  if (run.machines.some((m) => !holdsAll(run, m))) await run.net.connectAll();
  await run.net.settle(100);
  for (const { machine, domain, gen, key } of run.late) run.machines[machine]!.keyring.add(domain, gen, key);
  for (const m of run.machines) count(run, m.id, appliedResurrections(await m.replica.reopen()));
  await run.net.settle(100);
}

/** The generation an envelope id names (`….DOMAIN.gen`, seal.ts `envelopeId`). */
const generationOf = (outerId: string): { domain: DomainName; gen: number } => {
  const [, domain, gen] = outerId.split('.');
  return { domain: domain as DomainName, gen: Number(gen) };
};

/** Whether a machine holds every generation that exists at the end of a run. */
const holdsAll = (run: Run, m: Machine): boolean =>
  (['GENERAL', 'CONTROL'] as const).every((d) => m.keyring.get(d, run.generation[d]) !== undefined);

// ---- the model -----------------------------------------------------------------------

const stampOf = (body: EventBody): Stamp => ({ ms: body.hlc.ms, counter: body.hlc.counter, node: body.signer });
const rowKey = (table: string, row: string) => `${table}\u0000${row}`;

/** Lowest removal mark per removed signer (hex). */
function marks(events: readonly Generated[]): Map<string, number> {
  const out = new Map<string, number>();
  for (const { body } of events) {
    if (body.op !== 'remove') continue;
    const hwm = body.cols['hwm'] as number;
    out.set(body.row, Math.min(hwm, out.get(body.row) ?? Infinity));
  }
  return out;
}

const isRevoked = (body: EventBody, removed: Map<string, number>): boolean =>
  body.seq > (removed.get(toHex(body.signer)) ?? Infinity);

/** Rows as the spec defines them, computed from the surviving events without the merge code. */
function modelRows(surviving: readonly Generated[]): Map<string, RowState> {
  const rows = new Map<
    string,
    {
      table: string;
      row: string;
      cells: Record<string, Cell>;
      deleted?: Stamp;
      removed?: { hwm: number; trustedHwm: number };
    }
  >();
  for (const { body } of surviving) {
    const key = rowKey(body.table, body.row);
    let row = rows.get(key);
    if (!row) rows.set(key, (row = { table: body.table, row: body.row, cells: {} }));
    const stamp = stampOf(body);
    if (body.op === 'put') {
      for (const [column, value] of Object.entries(body.cols)) {
        const cell = row.cells[column];
        if (!cell || modelCompareStamps(stamp, cell.stamp) > 0) row.cells[column] = { value, stamp };
      }
    } else if (body.op === 'del') {
      if (!row.deleted || modelCompareStamps(stamp, row.deleted) > 0) row.deleted = stamp;
    } else {
      const hwm = body.cols['hwm'] as number;
      const trustedHwm = (body.cols['trusted_hwm'] as number | undefined) ?? 0;
      row.removed = {
        hwm: Math.min(hwm, row.removed?.hwm ?? hwm),
        trustedHwm: Math.min(trustedHwm, row.removed?.trustedHwm ?? trustedHwm),
      };
    }
  }
  return rows;
}

function modelAlive(row: RowState): boolean {
  if (row.removed) return false;
  const deleted = row.deleted;
  return !deleted || Object.values(row.cells).some((c) => modelCompareStamps(c.stamp, deleted) > 0);
}

/** Every (delete, put) pair of one row, the put stamped higher, both surviving. */
function modelPairs(surviving: readonly Generated[]): Set<string> {
  const pairs = new Set<string>();
  for (const del of surviving.filter((e) => e.body.op === 'del')) {
    for (const put of surviving.filter((e) => e.body.op === 'put')) {
      const sameRow = put.body.table === del.body.table && put.body.row === del.body.row;
      if (sameRow && modelCompareStamps(stampOf(put.body), stampOf(del.body)) > 0)
        pairs.add(`${del.eventId}:${put.eventId}`);
    }
  }
  return pairs;
}

const canonical = (rows: Iterable<RowState>): string =>
  toHex(encodeCbor([...rows].sort((a, b) => (rowKey(a.table, a.row) < rowKey(b.table, b.row) ? -1 : 1))));

async function rowsOf(m: Machine): Promise<RowState[]> {
  const all: RowState[] = [];
  for (const table of Object.keys(TABLES)) all.push(...(await m.store.rows(table)));
  return all;
}

// ---- the checks ----------------------------------------------------------------------

async function check(run: Run): Promise<void> {
  const { machines, events } = run;
  const removed = marks(events);
  const surviving = events.filter((e) => !isRevoked(e.body, removed));
  const expectedRows = modelRows(surviving);
  const expectedState = canonical(expectedRows.values());
  const expectedAlive = [...expectedRows.values()].map((r) => `${r.table}/${r.row}/${modelAlive(r)}`).sort();
  const expectedPairs = modelPairs(surviving);
  const anyPairs = modelPairs(events);
  const outerIds = events.map((e) => e.outerId).sort();
  const revokedStamps = events.filter((e) => isRevoked(e.body, removed)).map((e) => stampOf(e.body));
  const keptPuts = surviving.filter((e) => e.body.op === 'put').map((e) => e.body);

  for (const m of machines) {
    if (!holdsAll(run, m)) {
      await checkLockedOut(run, m);
      continue;
    }
    const problems: string[] = [];
    // Every event is held once, nothing waits, nothing was refused.
    const log = await m.store.entriesAfter(0, 10_000);
    expect(log.map((e) => e.outerId).sort()).toEqual(outerIds);
    expect(await m.store.parkedCount()).toBe(0);
    expect(await m.store.rejections(10)).toEqual([]);

    // Byte-identical state, equal to the model; the same rows alive.
    const rows = await rowsOf(m);
    expect(canonical(rows)).toBe(expectedState);
    expect(rows.map((r) => `${r.table}/${r.row}/${isAlive(r)}`).sort()).toEqual(expectedAlive);

    // Revocation: flagged exactly above the mark; nothing revoked shows in any cell.
    for (const entry of log) {
      if ((entry.revoked ?? false) !== isRevoked(entry.body!, removed))
        problems.push(`revoked flag of ${entry.outerId}`);
    }
    const cellStamps = rows.flatMap((r) => Object.values(r.cells).map((c) => c.stamp));
    for (const stamp of revokedStamps) {
      if (cellStamps.some((s) => modelCompareStamps(s, stamp) === 0)) problems.push('a revoked event is materialised');
    }
    // Kept events are materialised: each of their cells holds them or something newer.
    for (const body of keptPuts) {
      const row = rows.find((r) => r.table === body.table && r.row === body.row);
      for (const column of Object.keys(body.cols)) {
        const cell = row?.cells[column];
        if (!cell || modelCompareStamps(cell.stamp, stampOf(body)) < 0) problems.push(`lost ${body.row}.${column}`);
      }
    }

    // Resurrections: exactly the expected pairs, each reported once; revoked pairs at most once and not kept.
    const stored = (await m.store.resurrections(10_000)).map((r) => r.key).sort();
    expect(stored).toEqual([...expectedPairs].sort());
    const reported = run.reported.get(m.id)!;
    for (const pair of expectedPairs)
      if (reported.get(pair) !== 1) problems.push(`pair ${pair} reported ${reported.get(pair) ?? 0}x`);
    for (const [pair, n] of reported)
      if (!anyPairs.has(pair) || n !== 1) problems.push(`unexpected report ${pair} ${n}x`);
    expect(problems).toEqual([]);
  }
}

/**
 * A member removed before a rotation: it still stores and forwards every envelope, but opens
 * nothing sealed under a generation it never received, and nothing of such an envelope shows
 * in its rows.
 */
async function checkLockedOut(run: Run, m: Machine): Promise<void> {
  const log = await m.store.entriesAfter(0, 10_000);
  const parked = await m.store.parkedCount();
  expect(log.length + parked).toBeGreaterThanOrEqual(run.events.length);
  const unreadable = new Set<string>();
  for (const entry of log) {
    const { domain, gen } = generationOf(entry.outerId);
    const readable = m.keyring.get(domain, gen) !== undefined;
    // Readable is not enough to be opened: an event chained after one it cannot read waits for ever.
    if (entry.body !== undefined) expect(readable, `${entry.outerId} opened`).toBe(true);
    if (!readable) unreadable.add(entry.outerId);
  }
  const sealedUnread = run.events.filter((e) => unreadable.has(e.outerId)).map((e) => stampOf(e.body));
  const cellStamps = (await rowsOf(m)).flatMap((r) => Object.values(r.cells).map((c) => c.stamp));
  for (const stamp of sealedUnread) expect(cellStamps.some((s) => modelCompareStamps(s, stamp) === 0)).toBe(false);
}

describe('state plane properties (replica level)', () => {
  it(`${NUM_RUNS} random histories over a bad network converge byte for byte and match the model`, async () => {
    const stats = { removals: 0, revoked: 0, pairs: 0, rotations: 0, lateKeys: 0, lockedOut: 0 };
    await fc.assert(
      fc.asyncProperty(scenarioArb, async (s) => {
        const run = await setUp(s);
        for (const op of s.ops) await play(run, op);
        await heal(run);
        await check(run);
        const removed = marks(run.events);
        stats.removals += removed.size;
        stats.revoked += run.events.filter((e) => isRevoked(e.body, removed)).length;
        stats.pairs += modelPairs(run.events.filter((e) => !isRevoked(e.body, removed))).size;
        stats.rotations += run.generation.GENERAL + run.generation.CONTROL - 2;
        stats.lateKeys += run.late.length;
        stats.lockedOut += run.machines.filter((m) => !holdsAll(run, m)).length;
      }),
      { numRuns: NUM_RUNS },
    );
    // The generator must actually reach the interesting cases.
    expect(stats.removals).toBeGreaterThan(NUM_RUNS / 4);
    expect(stats.revoked).toBeGreaterThan(NUM_RUNS / 10);
    expect(stats.pairs).toBeGreaterThan(NUM_RUNS / 2);
    expect(stats.rotations).toBeGreaterThan(NUM_RUNS / 2);
    expect(stats.lateKeys).toBeGreaterThan(NUM_RUNS / 4);
    expect(stats.lockedOut).toBeGreaterThan(NUM_RUNS / 20);
  }, 600_000);
});
