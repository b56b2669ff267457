/**
 * The relay hub's blind MLS sequencer desk (hub.ts hands `commit` and `commits` here):
 * commits from admitted members only (never a joiner on an invitation, never before the
 * founder pushed a list); first commit wins per (group, epoch); the winner is pushed to
 * the topic's other live members, who fetch what they missed with `commits`. Membership
 * changes come only from the stewards the admin-signed list names.
 */
import { mayChangeMembership, type AdmissionList } from '../core/admission.js';
import { checkBundle } from '../core/mls/bundle.js';
import type { BlindSequencer, SequencerStore } from '../core/mls/sequencer.js';
import {
  MAX_COMMIT_PAGE,
  type EndpointToRelay,
  type RelayErrorCode,
  type RelayToEndpoint,
} from '../core/relay-wire.js';

type CommitMessage = Extract<EndpointToRelay, { t: 'commit' | 'commits' }>;

/** The session a commit came from, as the hub knows it. */
export type Committer = {
  readonly topic: Uint8Array;
  readonly endpoint: Uint8Array;
  /** Whether the session is an admitted member (not a joiner, not before the first list). */
  readonly member: boolean;
};

/** What the desk needs of the hub, for one session. */
export type SequencingPort = {
  readonly sequencer: { readonly sequencer: BlindSequencer; readonly store: SequencerStore } | undefined;
  /** The admission list in force for the topic, if one was pushed. */
  list(topic: Uint8Array): AdmissionList | undefined;
  /** Answers the session. */
  write(msg: RelayToEndpoint): void;
  /** Refuses the session's message with a relay error. */
  reject(code: RelayErrorCode, message: string): void;
  /** Pushes a message to the topic's other live members. */
  broadcast(msg: RelayToEndpoint): void;
  count(reason: string): void;
  log(line: string): void;
};

/** Handles one `commit` or `commits` message of a session. */
export function sequence(port: SequencingPort, from: Committer, msg: CommitMessage): void {
  const seq = port.sequencer;
  if (!seq || !from.member) return port.reject('not-a-member', 'relay: only admitted members may sequence commits');
  const empty = new Uint8Array();
  if (msg.t === 'commit' && !mayCommit(port.list(from.topic), from.endpoint, msg.bundle)) {
    port.count('sequencer-NotASteward');
    return port.write({
      t: 'refused',
      rid: msg.rid,
      code: 'NotASteward',
      reason: 'relay: membership changes come from the admins’ machines (the admission list’s stewards)',
      receipt: empty,
      bundle: empty,
    });
  }
  const work =
    msg.t === 'commits'
      ? seq.store.since(from.topic, msg.group, msg.from, MAX_COMMIT_PAGE).then((page) => {
          port.write({ t: 'commit-log', rid: msg.rid, items: page.map((p) => [p.receipt, p.bundle]) });
        })
      : seq.sequencer.submit(from.topic, from.endpoint, msg.bundle).then((result) => {
          if (result.ok) {
            port.write({ t: 'sequenced', rid: msg.rid, receipt: result.value.bytes });
            port.broadcast({ t: 'accepted', receipt: result.value.bytes, bundle: msg.bundle });
            return;
          }
          const e = result.error;
          port.count(`sequencer-${e.type}`);
          const winner = e.type === 'EpochTaken' ? e.winner : undefined;
          port.write({
            t: 'refused',
            rid: msg.rid,
            code: e.type,
            reason: 'reason' in e ? e.reason : `epoch ${e.epoch}`,
            receipt: winner?.receipt ?? empty,
            bundle: winner?.bundle ?? empty,
          });
        });
  work.catch((e: unknown) => {
    port.log(`relay: sequencer error: ${(e as Error).message}`);
    port.reject('malformed', 'relay: the sequencer failed; retry');
  });
}

/**
 * Membership changes only from the stewards the admin-signed list names; an external
 * commit (a member rejoining itself) from any member. A bundle that does not parse is left
 * to the sequencer, which refuses it with its reason.
 */
function mayCommit(list: AdmissionList | undefined, endpoint: Uint8Array, bundle: Uint8Array): boolean {
  const checked = checkBundle(bundle);
  if (!list || !checked.ok || checked.value.external) return true;
  return mayChangeMembership(list, endpoint);
}
