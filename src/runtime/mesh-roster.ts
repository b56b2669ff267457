/**
 * Who this machine deals with, read from the keyring and roles tables: the machines of the
 * mesh, the peers it delivers to, who is trusted and who is an admin, the address (endpoint
 * and bound frame key) a frame from a peer must come from, and the lists it hands the MLS
 * worker (who may hold a leaf) and the relay (who is admitted).
 */
import type { MachineStore } from './machine-store.js';
import type { PeerAddress } from './crypto-service.js';
import { machinesView, type Machine } from './views.js';

export type RosterDeps = {
  readonly store: Pick<MachineStore, 'rows'>;
  self(): { readonly signer: string; readonly endpoint: string };
  /** Signers trusted as admins without a control record: the founder and this machine's inviter. */
  anchors(): readonly string[];
  /** The inviter's address, known from the ticket before the keyring arrives. */
  anchorPeers(): readonly PeerAddress[];
  setKeyring(keyring: { readonly admitted: string[]; readonly admins: string[] }): Promise<void>;
};

/** What an admin has the relay enforce: who may connect, who are admins, who may sequence commits. */
export type AdmissionLists = {
  readonly admins: string[];
  readonly endpoints: string[];
  readonly stewards: string[];
};

export class MeshRoster {
  readonly #deps: RosterDeps;
  #machines: Machine[] = [];
  #peers: readonly string[] = [];
  /** Endpoints of trusted machines as last seen; undefined until the keyring was first read. */
  #trusted: Set<string> | undefined;

  constructor(deps: RosterDeps) {
    this.#deps = deps;
  }

  get machines(): readonly Machine[] {
    return this.#machines;
  }

  /** Endpoints this machine delivers to: live keyring machines and its inviter, never itself. */
  get peers(): readonly string[] {
    return this.#peers;
  }

  /**
   * Re-reads the keyring. True when a machine became trusted since the last read (this one
   * among them, perhaps): each machine then asks its peers again for what it may hold now.
   */
  async refresh(): Promise<boolean> {
    const { store } = this.#deps;
    this.#machines = machinesView(await store.rows('keyring'), await store.rows('roles'));
    const trusted = new Set(this.trustedEndpoints());
    const before = this.#trusted;
    this.#trusted = trusted;
    const endpoints = new Set(this.#deps.anchorPeers().map((p) => p.endpoint));
    for (const machine of this.#machines) {
      // A recovery kit's machine sleeps in a drawer: frames for it would only fill its mailbox.
      if (machine.removed || machine.recovery) endpoints.delete(machine.endpoint);
      else endpoints.add(machine.endpoint);
    }
    endpoints.delete(this.#deps.self().endpoint);
    endpoints.delete('');
    this.#peers = [...endpoints];
    return before !== undefined && [...trusted].some((e) => !before.has(e));
  }

  live(): Machine[] {
    return this.#machines.filter((m) => !m.removed);
  }

  /** Live machines other than this one, by signer. */
  others(): string[] {
    const self = this.#deps.self().signer;
    return this.live()
      .filter((m) => m.signer !== self)
      .map((m) => m.signer);
  }

  removedSigners(): Set<string> {
    return new Set(this.#machines.filter((m) => m.removed).map((m) => m.signer));
  }

  /** The frame keys of the live recovery kits: each recovery root carries an access record for each. */
  recoveryKits(): string[] {
    return this.live()
      .filter((m) => m.recovery && m.frame !== '')
      .map((m) => m.frame);
  }

  trustedEndpoints(): string[] {
    return this.live()
      .filter((m) => m.trusted)
      .map((m) => m.endpoint);
  }

  names(): Map<string, string> {
    return new Map(this.#machines.map((m) => [m.signer, m.name]));
  }

  /** The live machine at `endpoint`, if it is one of this machine's peers. */
  peerAt(endpoint: string): Machine | undefined {
    if (!this.#peers.includes(endpoint)) return undefined;
    return this.#machines.find((m) => m.endpoint === endpoint && !m.removed);
  }

  isPeer(endpoint: string): boolean {
    return this.#peers.includes(endpoint);
  }

  isLive(signer: string): boolean {
    return this.#machines.some((m) => m.signer === signer && !m.removed);
  }

  isRemoved(signer: string): boolean {
    return this.#machines.some((m) => m.signer === signer && m.removed);
  }

  isAdmin(signer = this.#deps.self().signer): boolean {
    return (
      this.#deps.anchors().includes(signer) || this.#machines.some((m) => m.signer === signer && m.role === 'admin')
    );
  }

  /** The endpoint and bound frame key of a peer: from the keyring, else from the ticket we joined with. */
  addressOf(endpoint: string): PeerAddress | undefined {
    const machine = this.#machines.find((m) => m.endpoint === endpoint && !m.removed && m.frame !== '');
    if (machine) return { endpoint, frame: machine.frame };
    if (this.#machines.some((m) => m.endpoint === endpoint && m.removed)) return undefined;
    return this.#deps.anchorPeers().find((p) => p.endpoint === endpoint);
  }

  /**
   * Tells the MLS worker who may hold a leaf (live keyring machines, anchors, this machine,
   * and `extra` about to be added) and whose KEK packages count (anchors and admins).
   */
  async syncKeyring(extra: readonly string[] = []): Promise<void> {
    const live = this.live();
    const anchors = this.#deps.anchors();
    const removed = this.removedSigners();
    const self = this.#deps.self().signer;
    const admitted = [...new Set([...live.map((m) => m.signer), ...anchors, self, ...extra])];
    await this.#deps.setKeyring({
      admitted: admitted.filter((s) => !removed.has(s)),
      admins: [...anchors, ...live.filter((m) => m.role === 'admin').map((m) => m.signer)],
    });
  }

  /**
   * The lists of an admission record: every live machine (and `joining`, a machine being
   * admitted now), the admins, and the admins' machines, the only ones that may post
   * membership changes to the sequencer (members may still resync).
   */
  admission(joining?: string): AdmissionLists {
    const live = this.live();
    const self = this.#deps.self().endpoint;
    const admins = [...this.#deps.anchors(), ...live.filter((m) => m.role === 'admin').map((m) => m.signer)];
    const adminSet = new Set(admins);
    return {
      admins,
      endpoints: [self, ...live.map((m) => m.endpoint), ...(joining ? [joining] : [])],
      stewards: [self, ...live.filter((m) => adminSet.has(m.signer)).map((m) => m.endpoint)],
    };
  }
}
