/**
 * Frames from peers, arrived live or through the inbox, handed to whoever handles each
 * message: the two sides of the pairing ceremony, the domains' MLS groups, or the state
 * plane. The crypto worker opens a batch in one call and refuses a frame before anything is
 * imported unless its sender is bound in the keyring (or it is a pairing message this
 * machine is waiting for); each refusal is counted by reason, never thrown.
 *
 * Consecutive `events` messages of one peer that continue each other are taken in as one
 * (a catch-up delivers thousands of small frames): one ingest, one store transaction, one
 * acknowledgement. A gap between two ranges is never joined (core/sync.ts).
 */
import type { PeerMessage } from '../core/peer-wire.js';
import { continuesEvents, joinEvents } from '../core/sync.js';
import type { CryptoPort } from './ports.js';
import type { PeerAddress } from './crypto-service.js';
import type { InboundFrame } from './relay-session.js';
import type { MeshStatus } from './node-snapshot.js';
import type { MeshRoster } from './mesh-roster.js';

type Message<T extends PeerMessage['t']> = Extract<PeerMessage, { t: T }>;
export type PairingMessage = Message<
  'join-request' | 'join-challenge' | 'join-reveal' | 'join-confirm' | 'join-accept' | 'join-refused'
>;
export type MlsMessage = Message<'mls-welcome' | 'mls-heads' | 'mls-groupinfo-request' | 'mls-groupinfo'>;
export type StateMessage = Message<'events' | 'ack' | 'want' | 'sweep' | 'resent'>;

export type FrameDispatchDeps = {
  readonly crypto: Pick<CryptoPort, 'openMessages' | 'rememberAll'>;
  status(): MeshStatus;
  /**
   * `addressOf`: the keyring binding (or the ticket's) a frame from an endpoint must be sealed
   * for; `isPeer`: this machine delivers to it (keyring machines, and the inviter before the
   * keyring arrives); `peerAt`: the machine the keyring names there (none for strangers,
   * removed machines and anchors not yet in it).
   */
  readonly roster: Pick<MeshRoster, 'addressOf' | 'isPeer' | 'peerAt'>;
  /** Pairing messages: `from` is the sender's endpoint and the frame key it sealed with. */
  pairing(from: PeerAddress, message: PairingMessage): Promise<void>;
  mls(signer: string, message: MlsMessage): Promise<void>;
  state(endpoint: string, message: StateMessage): Promise<void>;
  count(type: string): void;
};

export class FrameDispatch {
  readonly #deps: FrameDispatchDeps;

  constructor(deps: FrameDispatchDeps) {
    this.#deps = deps;
  }

  /** Handles a batch of frames in order; durable once it resolves. */
  async frames(frames: readonly InboundFrame[]): Promise<void> {
    const deps = this.#deps;
    const opened = await deps.crypto.openMessages(
      frames.map((f) => ({ from: f.from, body: f.body, bound: deps.roster.addressOf(f.from)?.frame })),
    );
    let run: { from: string; message: Message<'events'> } | undefined;
    const flush = async (): Promise<void> => {
      const taken = run;
      run = undefined;
      if (taken) await this.message({ endpoint: taken.from, frame: '' }, taken.message);
    };
    for (const [i, result] of opened.entries()) {
      const from = frames[i]!.from;
      if (!result.ok) {
        deps.count(result.error.type);
        continue;
      }
      const message = result.value.message;
      if (message.t === 'events' && run?.from === from && continuesEvents(run.message, message)) {
        run.message = joinEvents(run.message, message);
        continue;
      }
      await flush();
      if (message.t === 'events') run = { from, message };
      else await this.message({ endpoint: from, frame: result.value.frame }, message);
    }
    await flush();
    await deps.crypto.rememberAll(opened.flatMap((r) => (r.ok ? [{ rid: r.value.rid, ts: r.value.ts }] : [])));
  }

  /** One opened message, to its handler; a message this machine cannot take yet is counted. */
  async message(from: PeerAddress, message: PeerMessage): Promise<void> {
    const deps = this.#deps;
    switch (message.t) {
      case 'join-challenge':
        if (deps.status() !== 'joining') return deps.count('UnexpectedPairingMessage');
        return deps.pairing(from, message);
      case 'join-request':
      case 'join-reveal':
      case 'join-confirm':
      case 'join-accept':
      case 'join-refused':
        return deps.pairing(from, message);
      case 'mls-welcome':
      case 'mls-heads':
      case 'mls-groupinfo-request':
      case 'mls-groupinfo': {
        if (deps.status() !== 'member') return deps.count('NotYetMember');
        const sender = deps.roster.peerAt(from.endpoint);
        if (!sender) return deps.count('UnknownEndpoint');
        return deps.mls(sender.signer, message);
      }
      case 'events':
      case 'ack':
      case 'want':
      case 'sweep':
      case 'resent':
        if (deps.status() !== 'member') return deps.count('NotYetMember');
        // Removed machines are not peers: their frames fail closed here, before any import.
        if (!deps.roster.isPeer(from.endpoint)) return deps.count('UnknownEndpoint');
        return deps.state(from.endpoint, message);
    }
  }
}
