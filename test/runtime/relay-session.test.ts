/**
 * The relay session against a fake connection, a fake service-worker inbox and a moved clock
 * (src/runtime/relay-session.ts): frames are handled one at a time, in order, and acknowledged
 * only once handled; the inbox drains into the same queue; network events suspend and resume;
 * the timers run the batch cycle and re-evaluation until the session closes.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { MachineEnv } from '../../src/runtime/machine-env.js';
import type { RelayHandlers } from '../../src/runtime/relay-connection.js';
import { STORAGE_FULL_INBOUND_TEXT, storeFailedText } from '../../src/runtime/storage-full.js';
import {
  MAX_FRAMES_PER_BATCH,
  BATCH_CYCLE_MS,
  REEVALUATE_MS,
  RelaySession,
  type Connection,
  type SessionPort,
} from '../../src/runtime/relay-session.js';

const flush = () => vi.advanceTimersByTimeAsync(0);
const frame = (id: number, byte: number) => ({
  t: 'frame' as const,
  id,
  from: new Uint8Array(32).fill(byte),
  body: Uint8Array.of(id),
});

function setUp(over: Partial<SessionPort> = {}) {
  const log: string[] = [];
  const handlers: { current?: RelayHandlers } = {};
  const gates = new Map<number, () => void>();
  const network: { online?: () => void; offline?: () => void } = {};
  const inbox: [string, Uint8Array][] = [];
  const connection: Connection = {
    start: () => void log.push('start'),
    stop: () => void log.push('stop'),
    resume: () => void log.push('resume'),
    suspend: (why) => void log.push(`suspend:${why}`),
    send: () => true,
    admit: () => true,
    sequencer: () => true,
    ack: (ids) => {
      log.push(`ack:${ids.join(',')}`);
      return true;
    },
  };
  const port: SessionPort = {
    url: () => 'ws://relay',
    topic: () => 'ab'.repeat(32),
    authenticate: async () => ({ topic: new Uint8Array(32), endpoint: new Uint8Array(32), sig: new Uint8Array(64) }),
    pinnedRelayKey: () => undefined,
    pinRelayKey: () => undefined,
    admissionRecord: async () => undefined,
    prepare: async () => void log.push('prepare'),
    // A batch waits until the test opens the gate of its first frame (when it has one).
    frames: (frames) =>
      new Promise<void>((resolve, reject) => {
        const ns = frames.map((f) => f.body[0]!);
        log.push(`frames:${frames.map((f, i) => `${ns[i]}:${f.from.slice(0, 2)}`).join(',')}`);
        if (ns.includes(99)) return reject(new Error('broken'));
        // A store with no room, as IndexedDB says it (Dexie keeps the DOMException as `inner`).
        if (ns.includes(98)) {
          const full = new DOMException('the quota has been exceeded', 'QuotaExceededError');
          return reject(Object.assign(new Error('AbortError: transaction aborted'), { inner: full }));
        }
        const gate = gates.get(ns[0]!);
        if (gate) gates.set(ns[0]!, resolve);
        else resolve();
      }),
    drainable: () => true,
    stateChanged: (state) => void log.push(`state:${state}`),
    sequencer: () => undefined,
    relayError: () => undefined,
    batchCycle: async (online) => void log.push(`batch:${online}`),
    reevaluate: async () => void log.push('reevaluate'),
    notice: (_kind, text) => void log.push(`notice:${text}`),
    ...over,
  };
  const env: MachineEnv = {
    withLock: (fn) => fn(),
    session: () => ({
      requestLeadership: () => undefined,
      announceChange: () => undefined,
      reloadAll: () => undefined,
      close: () => undefined,
    }),
    onNetwork: (online, offline) => Object.assign(network, { online, offline }),
    background: () => ({
      request: async () => undefined,
      drain: async (handle) => {
        let n = 0;
        for (const [from, body] of inbox.splice(0)) {
          await handle(from, body);
          n++;
        }
        return n;
      },
      close: () => void log.push('background-closed'),
    }),
  };
  const session = new RelaySession(port, env, (_url, h) => {
    handlers.current = h;
    return connection;
  });
  /** Frame `n` will wait until `open(n)`. */
  const hold = (n: number) => gates.set(n, () => undefined);
  const open = (n: number) => gates.get(n)?.();
  return { session, log, handlers, network, inbox, hold, open };
}

describe('relay session', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('hands the admission version on: the one in force at ready, and each list taken since', async () => {
    const seen: string[] = [];
    const s = setUp({
      admissionRecord: async (inForce) => void seen.push(`record:${String(inForce)}`),
      admitted: (version) => void seen.push(`admitted:${version}`),
    });
    await flush();
    await s.handlers.current!.admissionRecord!(41);
    await s.handlers.current!.admissionRecord!(undefined);
    s.handlers.current!.onAdmitted!(42);
    expect(seen).toEqual(['record:41', 'record:undefined', 'admitted:42']);
    s.session.close();
  });

  it('prepares, then connects', async () => {
    const s = setUp();
    await flush();
    expect(s.log).toEqual(['prepare', 'start']);
    s.session.close();
  });

  it('hands frames over in order, those that arrived meanwhile as one batch, each acknowledged once handled', async () => {
    const s = setUp();
    await flush();
    s.log.length = 0;
    s.hold(1);
    s.handlers.current!.onFrame(frame(1, 0xaa));
    await flush();
    s.handlers.current!.onFrame(frame(2, 0xbb));
    s.handlers.current!.onFrame(frame(3, 0xaa));
    await flush();
    expect(s.log).toEqual(['frames:1:aa']); // the others wait for the first
    s.open(1);
    await flush();
    expect(s.log).toEqual(['frames:1:aa', 'ack:1', 'frames:2:bb,3:aa', 'ack:2,3']);
    s.session.close();
  });

  it('hands at most a batch of frames at once', async () => {
    const s = setUp();
    await flush();
    s.log.length = 0;
    for (let i = 0; i < MAX_FRAMES_PER_BATCH + 2; i++) s.handlers.current!.onFrame(frame(i + 1, 0xaa));
    await flush();
    const acks = s.log.filter((l) => l.startsWith('ack:')).map((l) => l.slice(4).split(',').length);
    expect(acks).toEqual([MAX_FRAMES_PER_BATCH, 2]);
    s.session.close();
  });

  it('does not acknowledge a frame whose handling failed (the relay redelivers it), and goes on', async () => {
    const s = setUp();
    await flush();
    s.log.length = 0;
    s.handlers.current!.onFrame(frame(99, 0xaa));
    s.handlers.current!.onFrame(frame(3, 0xaa));
    await flush();
    // The batch fails; each frame is tried on its own, so the good one is acknowledged.
    expect(s.log).toEqual([
      'frames:99:aa,3:aa',
      'frames:99:aa',
      `notice:${storeFailedText(new Error('broken'))}`,
      'frames:3:aa',
      'ack:3',
    ]);
    s.session.close();
  });

  it('says once that frames failed, until one is stored again', async () => {
    const s = setUp();
    await flush();
    s.log.length = 0;
    s.handlers.current!.onFrame(frame(99, 0xaa));
    await flush();
    s.handlers.current!.onFrame(frame(99, 0xbb));
    await flush();
    s.handlers.current!.onFrame(frame(98, 0xaa)); // then the store fills up: that is news
    await flush();
    s.handlers.current!.onFrame(frame(5, 0xaa));
    await flush();
    s.handlers.current!.onFrame(frame(99, 0xcc));
    await flush();
    const failed = `notice:${storeFailedText(new Error('broken'))}`;
    expect(s.log).toEqual([
      'frames:99:aa',
      failed,
      'frames:99:bb',
      'frames:98:aa',
      `notice:${STORAGE_FULL_INBOUND_TEXT}`,
      'frames:5:aa',
      'ack:5',
      'frames:99:cc',
      failed,
    ]);
    s.session.close();
  });

  it('leaves frames unacknowledged when the store is full, and says so once until frames are stored again', async () => {
    const s = setUp();
    await flush();
    s.log.length = 0;
    s.handlers.current!.onFrame(frame(98, 0xaa));
    s.handlers.current!.onFrame(frame(3, 0xaa));
    await flush();
    // A full store fails every frame alike: no frame-by-frame retry, nothing acknowledged.
    expect(s.log).toEqual(['frames:98:aa,3:aa', `notice:${STORAGE_FULL_INBOUND_TEXT}`]);
    s.handlers.current!.onFrame(frame(98, 0xbb));
    await flush();
    expect(s.log.slice(2)).toEqual(['frames:98:bb']); // said once
    s.handlers.current!.onFrame(frame(4, 0xaa));
    await flush();
    s.handlers.current!.onFrame(frame(98, 0xcc));
    await flush();
    expect(s.log.slice(3)).toEqual(['frames:4:aa', 'ack:4', 'frames:98:cc', `notice:${STORAGE_FULL_INBOUND_TEXT}`]);
    s.session.close();
  });

  it('drains the service worker’s inbox into the same queue, after the frames before it', async () => {
    const s = setUp();
    await flush();
    s.log.length = 0;
    s.hold(1);
    s.handlers.current!.onFrame(frame(1, 0xaa));
    s.inbox.push(['cc'.repeat(32), Uint8Array.of(7)]);
    const drained = s.session.drainInbox();
    await flush();
    expect(s.log).toEqual(['frames:1:aa']);
    s.open(1);
    await drained;
    expect(s.log).toEqual(['frames:1:aa', 'ack:1', 'frames:7:cc']);
    s.session.close();
  });

  it('suspends when the browser goes offline and resumes when it is back', async () => {
    const s = setUp();
    await flush();
    s.network.offline!();
    s.network.online!();
    expect(s.log.slice(-2)).toEqual(['suspend:browser offline', 'resume']);
    s.session.close();
  });

  it('runs the batch cycle and re-evaluation on their timers, reports its state, and stops all on close', async () => {
    const s = setUp();
    await flush();
    s.handlers.current!.onState('ready', 'ab12');
    expect(s.session.state).toBe('ready');
    expect(s.session.detail).toBe('ab12');
    await vi.advanceTimersByTimeAsync(BATCH_CYCLE_MS);
    expect(s.log).toContain('batch:true');
    expect(s.session.lastBatchAt).toBeDefined();
    await vi.advanceTimersByTimeAsync(REEVALUATE_MS - BATCH_CYCLE_MS);
    expect(s.log.filter((l) => l === 'reevaluate')).toHaveLength(1);
    s.handlers.current!.onRelayError('mailbox-full', 'relay: mailbox full');
    expect(s.session.detail).toBe('relay refused: relay: mailbox full');
    s.session.close();
    expect(s.log.slice(-2)).toEqual(['background-closed', 'stop']);
    const before = s.log.length;
    await vi.advanceTimersByTimeAsync(4 * REEVALUATE_MS);
    expect(s.log).toHaveLength(before);
  });
});
