/**
 * How a machine comes into a mesh. The first one founds it and becomes its first admin.
 * Every other one pairs, both sides in this file: an admin issues a ticket and answers the
 * machines that present it (pairing-inviter.ts); a new machine starts from a pasted ticket,
 * shows the code to compare, and becomes a member when the admin's acceptance arrives with
 * its Welcomes (pairing-joiner.ts). Members may vouch for a joiner they checked in person,
 * so an admin can admit it without comparing codes itself. This file wires the ceremonies
 * to the machine: the mesh record, the keyring, the domains' MLS groups and the relay's
 * admission list.
 */
import { toHex } from '../core/bytes.js';
import { err, type Result } from '../core/result.js';
import type { WriteError, WriteOutcome } from '../core/replica.js';
import type { ColumnValue } from '../core/schema.js';
import type { RowState } from '../core/merge.js';
import type { DomainItems } from '../core/peer-wire.js';
import type { PrivacyClass } from '../core/sync-manifest.js';
import type { CryptoPort } from './ports.js';
import type { IdentityView, JoinError, PeerAddress } from './crypto-service.js';
import type { PairingMessage } from './frame-dispatch.js';
import { InviterCeremony, type InviterPort, type PairingView } from './pairing-inviter.js';
import { JoinerCeremony, type JoinView } from './pairing-joiner.js';
import type { MeshDomains, DomainsError } from './mesh-domains.js';
import type { MeshMetaKeeper } from './mesh-meta.js';
import type { MeshRoster } from './mesh-roster.js';
import type { NodeFeed } from './node-feed.js';
import { vouchesView, vouchThreshold } from './views.js';
import { errorName } from '../storage/key-wrap.js';

const RELAY_KEY_WAIT_MS = 10_000;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export type PairingWiring = {
  readonly crypto: CryptoPort;
  readonly meta: MeshMetaKeeper;
  readonly roster: MeshRoster;
  readonly domains: Pick<MeshDomains, 'addJoiner' | 'joinOffers' | 'joinFrom' | 'found' | 'standingKeyPackage'>;
  readonly feed: Pick<NodeFeed, 'notice' | 'count' | 'publish' | 'publishSoon'>;
  identity(): IdentityView;
  /** Sets this machine's identity (it founded a mesh), or reads it again from the key holder. */
  reloadIdentity(identity?: IdentityView): Promise<void>;
  rows(table: string): Promise<RowState[]>;
  /** A local write through the replica, then offered to peers (mesh-node.ts `#local`). */
  write(table: string, row: string, cols: Record<string, ColumnValue>): Promise<Result<WriteOutcome, WriteError>>;
  sendTo(endpoint: string, body: Uint8Array): void;
  online(): boolean;
  /** The mesh's privacy classes, sent to a joiner to follow until the signed records arrive. */
  classes(): Promise<readonly (readonly [string, PrivacyClass])[]>;
  pushAdmission(joining?: string): Promise<void>;
  recordMachine: InviterPort['recordMachine'];
  /** Re-reads the keyring and reconfigures delivery (mesh-roster.ts). */
  refreshPeers(): Promise<void>;
  offerAll(): Promise<void>;
  /** Tells the other tabs of this browser that something changed. */
  announce(): void;
  startRelay(): Promise<void>;
  /** This machine just became a member: catch up on groups and start delivery. */
  becameMember(): Promise<void>;
  /** Every tab of this browser reloads (an abandoned join leaves no session behind). */
  reloadAll(): void;
};

export class MeshPairing {
  readonly #w: PairingWiring;
  readonly #inviter: InviterCeremony;
  readonly #joiner: JoinerCeremony;

  constructor(wiring: PairingWiring) {
    this.#w = wiring;
    const w = wiring;
    const common = {
      crypto: w.crypto,
      sendTo: (endpoint: string, body: Uint8Array) => w.sendTo(endpoint, body),
      // Shown as they happen: a ceremony waiting on the relay may publish nothing else for long.
      notice: (kind: 'info' | 'warning', text: string) => {
        w.feed.notice(kind, text);
        w.feed.publishSoon();
      },
      count: (type: string) => {
        w.feed.count(type);
        w.feed.publishSoon();
      },
      changed: () => w.feed.publish(),
    };
    this.#inviter = new InviterCeremony({
      ...common,
      self: () => w.identity().signer,
      isAdmin: () => w.meta.value !== undefined && w.roster.isAdmin(),
      anchors: () => w.meta.anchors,
      classes: () => w.classes(),
      vouchers: () => this.vouchers(),
      vouchThreshold: () => this.vouchThreshold(),
      names: () => w.roster.names(),
      pushAdmission: (joining) => w.pushAdmission(joining),
      syncKeyring: (extra) => w.roster.syncKeyring(extra),
      addJoiner: async (kps) => {
        const added = await w.domains.addJoiner(kps);
        return added.ok ? added : err({ type: added.error.type, text: domainErrorText(added.error) });
      },
      recordMachine: (signer, cols) => w.recordMachine(signer, cols),
      joined: async () => {
        w.announce();
        await w.refreshPeers();
        await w.offerAll();
      },
      now: () => Date.now(),
      random: (n) => globalThis.crypto.getRandomValues(new Uint8Array(n)),
    });
    this.#joiner = new JoinerCeremony({
      ...common,
      joinOffers: () => w.domains.joinOffers(),
      inviter: () => (w.meta.value?.status === 'joining' ? w.meta.anchorPeers[0] : undefined),
      name: () => w.meta.value?.name ?? '',
      online: () => w.online(),
      abandon: () => this.cancelJoin(),
    });
  }

  /** Founds a mesh on this machine, which becomes its first admin. */
  async found(name: string, relay: string): Promise<void> {
    const w = this.#w;
    const created = await during('create the mesh secret', () => w.crypto.createMesh());
    if (!created.ok) throw new Error('mesh: this machine already belongs to a mesh');
    await w.reloadIdentity(created.value);
    const { signer: self, endpoint, frame } = created.value;
    await during('save the mesh', async () => {
      await w.meta.save({ status: 'member', relay, name, anchors: [self], anchorPeers: [] });
      await w.roster.syncKeyring();
    });
    const founded = await during('found the domains', () => retryingEngineFailures(() => w.domains.found()));
    if (!founded.ok) throw new Error(`mesh: could not found the domains (${founded.error.type})`);
    const kp = await during('make a standing key package', () => w.domains.standingKeyPackage());
    for (const [table, row, cols] of [
      ['keyring', self, { endpoint, frame, name }],
      ['roles', self, { role: 'admin' }],
      // The founder classifies the product's data tables; everything unregistered stays local.
      ['sync_manifest', 'device_profiles', { class: 'public' }],
      ['sync_manifest', 'field_notes', { class: 'public' }],
      ['sync_manifest', 'object_catalog', { class: 'public' }],
      ['sync_manifest', 'object_access', { class: 'public' }],
      ['key_packages', `${self}:mls`, { kp }],
    ] as const) {
      const written = await during(`record ${table}`, () => w.write(table, row, cols));
      if (!written.ok) throw new Error(`mesh: could not record this machine (${written.error.type})`);
    }
    w.announce();
    await during('start the relay session', () => w.startRelay());
  }

  /**
   * Vouches for a machine that asks to join, by the fingerprint its own screen shows (the
   * human checked it in person): a signed control record that lets an admin admit it once
   * enough members vouched.
   */
  vouch(fingerprint: string): Promise<Result<WriteOutcome, WriteError>> {
    const fp = fingerprint.trim().toLowerCase();
    if (!/^[0-9a-f]{4}(-[0-9a-f]{4}){3}$/.test(fp)) {
      return Promise.resolve(err({ type: 'InvalidEdit', reason: 'not a fingerprint (xxxx-xxxx-xxxx-xxxx)' }));
    }
    return this.#w.write('vouches', `${this.#w.identity().signer}:${fp}`, { candidate: fp, note: '' });
  }

  /** Admins: how many members' vouches let an admin admit a machine (k, per mesh; default 2). */
  setVouchThreshold(k: number): Promise<Result<WriteOutcome, WriteError>> {
    if (!Number.isSafeInteger(k) || k < 1 || k > 16) {
      return Promise.resolve(
        err({ type: 'InvalidEdit', reason: 'vouches needed must be a whole number from 1 to 16' }),
      );
    }
    return this.#w.write('settings', 'vouch_k', { value: k });
  }

  /** Fingerprint → signers of live machines that vouched for it. */
  async vouchers(): Promise<Map<string, string[]>> {
    return vouchesView(await this.#w.rows('vouches'), this.#w.roster.machines);
  }

  async vouchThreshold(): Promise<number> {
    return vouchThreshold(await this.#w.rows('settings'));
  }

  /** The ceremonies this admin is running, as the Machines page shows them. */
  views(vouchers: ReadonlyMap<string, readonly string[]>): PairingView[] {
    return this.#inviter.views(vouchers);
  }

  get joinView(): JoinView {
    return this.#joiner.view;
  }

  /**
   * Issues a pairing ticket (admins only), once the relay's key is pinned, and pushes an
   * admission list naming the new invitation so the relay will serve the joiner (and let it
   * write to this machine only).
   */
  async invite(): Promise<string> {
    const { meta, roster, crypto } = this.#w;
    if (!meta.value || !roster.isAdmin()) throw new Error('mesh: only an admin can invite');
    // A founder pins the relay's key on first contact, moments after creating the mesh.
    for (let waited = 0; !meta.value.relayKey && waited < RELAY_KEY_WAIT_MS; waited += 100) await sleep(100);
    if (!meta.value.relayKey) throw new Error('mesh: connect to the relay once before inviting');
    const ticket = await crypto.createInvitation(meta.value.relay, meta.value.relayKey);
    await this.#w.pushAdmission();
    return ticket;
  }

  /** Starts joining with a pasted ticket; completes when the inviter's answer arrives. */
  async join(ticket: string, name: string): Promise<Result<unknown, JoinError>> {
    const started = await this.#w.crypto.beginJoin(ticket);
    if (!started.ok) return started;
    const { relay, relayKey, inviter, inviterFrame } = started.value;
    const anchorPeers = [{ endpoint: inviter, frame: inviterFrame }];
    await this.#w.meta.save({ status: 'joining', relay, relayKey, name, anchors: [], anchorPeers });
    await this.#w.reloadIdentity();
    this.#w.announce();
    await this.#w.startRelay();
    return started;
  }

  /**
   * Gives up a join that has not completed (wrong or expired ticket, inviter gone): forgets
   * the group secret and the pending ticket. Every tab of this browser reloads, so no relay
   * session for the abandoned group survives.
   */
  async cancelJoin(): Promise<void> {
    if (this.#w.meta.value?.status !== 'joining') return;
    await this.#w.crypto.abandonJoin();
    await this.#w.meta.forget();
    this.#w.reloadAll();
  }

  /** Inviter: the human compared the codes and confirmed (or declined), or admits by vouches. */
  answer(inv: string, confirmed: boolean, by: 'code' | 'vouches'): Promise<void> {
    return this.#inviter.answer(inv, confirmed, by);
  }

  /** Joiner: the human compared the code with the inviting machine's and confirmed (or declined). */
  answerJoin(confirmed: boolean): Promise<void> {
    return this.#joiner.answer(confirmed);
  }

  /** The relay session is ready while joining: (re)send the request. */
  resume(): Promise<void> {
    return this.#joiner.start();
  }

  stop(): void {
    this.#joiner.stop();
  }

  /** A pairing message from `from` (frame-dispatch.ts has checked this machine may take it). */
  async message(from: PeerAddress, message: PairingMessage): Promise<void> {
    switch (message.t) {
      case 'join-request':
        return this.#inviter.request(from, message);
      case 'join-challenge':
        return this.#joiner.challenged(message);
      case 'join-reveal':
        return this.#inviter.revealed(from, message);
      case 'join-confirm':
        return this.#inviter.joinerConfirmed(from, message);
      case 'join-accept':
        return this.#accepted(
          from,
          toHex(message.signer),
          message.anchors.map(toHex),
          Object.fromEntries(message.classes),
          message.welcomes,
        );
      case 'join-refused':
        if (this.#w.meta.value?.status === 'joining') return this.#joiner.refused(from.endpoint, message.reason);
        await this.#inviter.joinerDeclined(from, message.inv, message.reason);
    }
  }

  /** Joiner: the admin accepted; its Welcomes make this machine a member of the built-in domains. */
  async #accepted(
    from: PeerAddress,
    inviter: string,
    inviterAnchors: readonly string[],
    provisionalClasses: Record<string, PrivacyClass>,
    welcomes: DomainItems,
  ): Promise<void> {
    const w = this.#w;
    const meta = w.meta.value;
    if (meta?.status !== 'joining') return;
    const anchors = [...new Set([...inviterAnchors, inviter])];
    // Until the keyring arrives (over CONTROL, which this opens), the anchors are the admins.
    await w.meta.save({ ...meta, anchors });
    await w.roster.syncKeyring();
    const joined = await w.domains.joinFrom(welcomes);
    if (!joined.ok) return w.feed.notice('warning', `join: ${joined.error.type}: ${domainErrorText(joined.error)}`);
    await w.meta.save({ ...meta, status: 'member', anchors, anchorPeers: [from], provisionalClasses });
    w.announce();
    w.feed.notice('info', 'joined the mesh');
    await w.refreshPeers();
    // Not awaited: this runs inside the frame queue, and catching up waits on the relay.
    void w.becameMember();
  }
}

export function domainErrorText(e: DomainsError): string {
  return 'reason' in e ? e.reason : e.type;
}

/** Times a step that failed with the engine's `OperationError` is tried in all. */
const ENGINE_ATTEMPTS = 3;

/**
 * Runs an idempotent step again when the engine's WebCrypto failed it with `OperationError`:
 * WebKitGTK fails about one key operation in 128–256 for no reason of ours (CI saw it while
 * founding the domains; storage/key-wrap.ts `retryingKeyGeneration` retries the draws it knows of).
 * Founding a domain already founded is a no-op
 * (mls-service.ts `found`), so trying again finishes what the failed attempt began. Any
 * other error, or the same one every time, is thrown as it is.
 */
async function retryingEngineFailures<T>(step: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await step();
    } catch (e) {
      if (attempt >= ENGINE_ATTEMPTS || errorName(e) !== 'OperationError') throw e;
    }
  }
}

/**
 * Runs one step of a longer action; an exception it throws says which step and what kind
 * of error (the engine's DOMException messages alone, such as WebKit's "The operation
 * failed for an operation-specific reason", do not say where they came from).
 */
async function during<T>(doing: string, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (e) {
    const message = e instanceof Error ? e.message : String(e);
    throw new Error(`mesh: could not ${doing}: ${errorName(e)}: ${message}`, { cause: e });
  }
}
