/**
 * Chain-segment signature verification (SSP/1: each signer's events form a hash
 * chain, `prev` = event id = BLAKE3 of the previous signed event).
 *
 * Within one batch, the events of one signer are ordered by seq and cut into
 * runs where each event's `prev` is the id of the one before it. Only the
 * newest event of a run has its signature checked: that signature covers its
 * body, hence its `prev`, hence the exact bytes of its predecessor, signature
 * included, and so on back to the oldest event of the run. Whether the oldest
 * links to what this replica already holds is admission's chain check, as for
 * any event. If the newest signature does not verify, every event of the run is
 * verified on its own, so good events still get in and the bad one is rejected.
 *
 * Identical events (same id) share one result. A run's events all name the same
 * signer key, which is the key the newest signature is checked under.
 *
 * Threat note: a run is accepted on the word of its newest signature. An
 * admitted signer that deliberately chains a validly signed event onto one it
 * signed badly gets the bad one accepted by a replica that sees both in one
 * batch and rejected by one that sees it alone; only that signer's own key can
 * do this (as it can fork its chain), and removal is the answer to both.
 */
import { bytesEqual, internedHex } from './bytes.js';
import { eventIdOf, verifyEvent, type SignedEvent } from './event.js';
import type { Verifier } from './ports.js';

/** Indices of one signer's distinct events in seq order, then cut into linked runs. */
function runsOf(
  events: readonly (SignedEvent | undefined)[],
  ids: readonly string[],
  firstOfId: Map<string, number>,
): number[][] {
  const bySigner = new Map<string, number[]>();
  events.forEach((event, i) => {
    if (!event) return;
    const id = ids[i]!;
    if (firstOfId.has(id)) return;
    firstOfId.set(id, i);
    const signer = internedHex(event.body.signer);
    const list = bySigner.get(signer);
    if (list) list.push(i);
    else bySigner.set(signer, [i]);
  });
  const runs: number[][] = [];
  for (const indices of bySigner.values()) {
    indices.sort((a, b) => events[a]!.body.seq - events[b]!.body.seq || a - b);
    let run: number[] = [];
    for (const i of indices) {
      const last = run.length > 0 ? events[run[run.length - 1]!]! : undefined;
      const event = events[i]!;
      if (last && (event.body.seq !== last.body.seq + 1 || !bytesEqual(event.body.prev, last.id))) {
        runs.push(run);
        run = [];
      }
      run.push(i);
    }
    if (run.length > 0) runs.push(run);
  }
  return runs;
}

const verified = async (event: SignedEvent, verifier: Verifier): Promise<boolean> =>
  (await verifyEvent(event, verifier)).ok;

async function verifyRun(run: readonly number[], events: readonly (SignedEvent | undefined)[], verifier: Verifier) {
  const tail = run[run.length - 1]!;
  if (await verified(events[tail]!, verifier)) return run.map(() => true);
  const rest = await Promise.all(run.slice(0, -1).map((i) => verified(events[i]!, verifier)));
  return [...rest, false];
}

/**
 * Whether each event's signature is good, directly or through the newest event
 * of its run; `undefined` entries (envelopes that did not open) come back false.
 * Runs are checked concurrently, so an asynchronous verifier may use every core.
 */
export async function verifyChains(
  events: readonly (SignedEvent | undefined)[],
  verifier: Verifier,
  /** Each event's `eventIdOf`, when the caller has them already. */
  ids: readonly string[] = events.map((event) => (event ? eventIdOf(event) : '')),
): Promise<boolean[]> {
  const firstOfId = new Map<string, number>();
  const runs = runsOf(events, ids, firstOfId);
  const results = await Promise.all(runs.map((run) => verifyRun(run, events, verifier)));
  const good: boolean[] = events.map(() => false);
  runs.forEach((run, r) => run.forEach((i, k) => (good[i] = results[r]![k]!)));
  events.forEach((event, i) => {
    if (event) good[i] = good[firstOfId.get(ids[i]!)!]!;
  });
  return good;
}
