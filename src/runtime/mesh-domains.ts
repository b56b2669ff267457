/**
 * This machine's domains, as the main thread drives them (DESIGN §4, §6; seed
 * 003 "Domains", "Adding a machine", "Revoking a machine", "Going offline, and
 * coming back", "Coordination"): between the MLS worker (group state, KEK
 * generations), the crypto worker (which seals and opens with those
 * generations once told to reload) and the relay's blind sequencer.
 *
 *   - founding: CONTROL and GENERAL are one-member groups of the founder;
 *   - joining: the joiner's key packages ride in its pairing confirmation; the
 *     inviter adds it to both groups with full history, and the accepted
 *     bundles travel back in the join-accept;
 *   - created domains: an admin founds the group and adds the machines it
 *     picked by their standing key packages (CONTROL `key_packages`), sending
 *     each its bundle in an `mls-welcome` frame (store-and-forward, so an
 *     offline machine gets it later);
 *   - every other member learns a change from the relay's `accepted` push, or
 *     from the commit log when it comes back (`catchUp`, run whenever the
 *     session becomes ready and before this machine publishes);
 *   - a keyring removal is reconciled by every admin into an MLS Remove in each
 *     group holding the machine, which mints the generation it cannot open;
 *   - receipts are kept, their heads gossiped to peers, and two receipts for
 *     one epoch are reported as the relay's misbehaviour.
 */
import { bytesEqual, fromBase64Url, fromHex, toBase64Url } from '../core/bytes.js';
import { MAX_COMMIT_PAGE } from '../core/relay-wire.js';
import type { SequencerUnavailable } from '../core/mls/domain.js';
import { ReceiptLog } from '../core/mls/receipt-log.js';
import type { Misbehaviour } from '../core/mls/receipt.js';
import type { BrokenChain } from '../core/mls/receipt-log.js';
import type { SequencerRejection } from '../core/mls/sequencer.js';
import type { DomainItems, PeerMessage } from '../core/peer-wire.js';
import { err, ok, type Result } from '../core/result.js';
import { DOMAINS, type DomainName } from '../core/schema.js';
import type { DomainView, ReceiveOutcome, ServiceError } from './mls-service.js';
import { RelaySequencerPort, type SequencerMessage } from './sequencer-port.js';
import type { MachineStore } from './machine-store.js';

const RECEIPTS_KEY = 'mls-receipts';

/** The MLS worker as the main thread sees it (a comlink Remote, or the service itself in tests). */
export type MlsPort = {
  views(): Promise<DomainView[]>;
  found(domain: string, groupId: Uint8Array): Promise<Result<DomainView, ServiceError>>;
  offer(domain: string, groupId: Uint8Array): Promise<Result<Uint8Array, ServiceError>>;
  standingKeyPackage(): Promise<Uint8Array>;
  receive(
    domain: string,
    groupId: Uint8Array,
    bundle: Uint8Array,
    options?: { readonly trustLeaves?: boolean },
  ): Promise<Result<ReceiveOutcome, ServiceError>>;
  groupInfo(domain: string): Promise<Result<Uint8Array, ServiceError>>;
  resync(domain: string, groupInfo: Uint8Array): Promise<Result<Uint8Array, ServiceError>>;
  change(
    domain: string,
    change: {
      readonly add?: readonly Uint8Array[];
      readonly history?: 'forward' | 'full' | 'fresh';
      readonly remove?: readonly string[];
      readonly rotate?: boolean;
    },
  ): Promise<Result<Uint8Array, ServiceError>>;
};

export type DomainsDeps = {
  readonly mls: MlsPort;
  readonly groupIdOf: (domain: DomainName) => Promise<Uint8Array>;
  /** Every domain of the mesh, those this machine reads or not (schema.ts `meshDomainNames`). */
  readonly domainNames: () => Promise<readonly DomainName[]>;
  /** Tells the crypto worker to load generations the MLS worker stored. */
  readonly reloadKeys: () => Promise<void>;
  /** Sends a sealed peer message (mls-welcome, mls-heads) to a machine by signer; false if it has no address. */
  readonly sendTo: (signer: string, message: DomainMessage) => Promise<boolean>;
  /** Signers of the other live machines of the mesh. */
  readonly peers: () => readonly string[];
  /** Standing key packages (CONTROL `key_packages`) and the receipts kept (the replica's meta store). */
  readonly store: Pick<MachineStore, 'row' | 'getMeta' | 'setMeta'>;
  readonly notice: (kind: 'info' | 'warning', text: string) => void;
  readonly count: (type: string) => void;
  /** Something changed that the UI shows (views, generations, proofs). */
  readonly changed: () => void;
};

type DomainMessage =
  | { t: 'mls-welcome'; domain: DomainName; bundle: Uint8Array }
  | { t: 'mls-heads'; receipts: Uint8Array[] }
  | { t: 'mls-groupinfo-request'; domain: DomainName }
  | { t: 'mls-groupinfo'; domain: DomainName; info: Uint8Array };

export type DomainsError =
  | ServiceError
  | SequencerUnavailable
  | { readonly type: 'NoKeyPackage'; readonly reason: string }
  /** A domain that cannot be created: bad or taken name, not an admin, no relay session. */
  | { readonly type: 'InvalidDomain'; readonly reason: string };

/** Failures on one epoch's accepted commit after which a member resyncs by external commit. */
const STUCK_AFTER = 3;

/** How long a commit waits for the sequencer's verdict before it counts as unavailable. */
const SEQUENCE_TIMEOUT_MS = 20_000;

export class MeshDomains {
  readonly #deps: DomainsDeps;
  #views: DomainView[] = [];
  #port: RelaySequencerPort | undefined;
  #log: ReceiptLog | undefined;
  #catchUp: Promise<void> | undefined;
  /** Per domain: the epoch whose accepted commit keeps failing here, and how often it did. */
  readonly #failing = new Map<DomainName, { epoch: number; count: number }>();

  constructor(deps: DomainsDeps) {
    this.#deps = deps;
  }

  get views(): readonly DomainView[] {
    return this.#views;
  }

  misbehaviour(): readonly (Misbehaviour | BrokenChain)[] {
    return this.#log?.misbehaviour() ?? [];
  }

  async refresh(): Promise<void> {
    this.#views = await this.#deps.mls.views();
  }

  /** The relay session became ready: commits go through it, receipts are checked under `relayKey`. */
  async attach(send: ConstructorParameters<typeof RelaySequencerPort>[0], relayKey: Uint8Array): Promise<void> {
    this.#port?.abandon('a new relay session');
    if (!this.#log) {
      const log = new ReceiptLog(relayKey);
      for (const r of (await this.#deps.store.getMeta<Uint8Array[]>(RECEIPTS_KEY)) ?? []) log.observe(r);
      this.#log = log;
    }
    this.#port = new RelaySequencerPort(
      send,
      this.#log,
      (bundle, receipt) => void this.#received(receipt.body.group, bundle),
    );
  }

  /** The relay refused a sequencer request (`not-a-member`): nothing waiting will be answered. */
  refused(reason: string): void {
    this.#port?.abandon(reason);
  }

  detach(): void {
    this.#port?.abandon('the relay session ended');
    this.#port = undefined;
  }

  onSequencer(message: SequencerMessage): void {
    this.#port?.receive(message);
  }

  /** The MLS worker's way to the sequencer. */
  async sequence(bundle: Uint8Array): Promise<Result<unknown, SequencerRejection | SequencerUnavailable>> {
    const port = this.#port;
    if (!port) return err({ type: 'SequencerUnavailable', reason: 'no relay session' });
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<Result<never, SequencerUnavailable>>((resolve) => {
      timer = setTimeout(
        () => resolve(err({ type: 'SequencerUnavailable', reason: 'the sequencer did not answer' })),
        SEQUENCE_TIMEOUT_MS,
      );
    });
    const verdict = await Promise.race([port.submit(bundle), timeout]);
    clearTimeout(timer);
    await this.#saveReceipts();
    return verdict;
  }

  /** Founder: CONTROL and GENERAL as one-member groups, generation 1 each. */
  async found(): Promise<Result<void, DomainsError>> {
    for (const domain of DOMAINS) {
      const founded = await this.#deps.mls.found(domain, await this.#deps.groupIdOf(domain));
      if (!founded.ok) return founded;
    }
    return this.#settled(ok(undefined));
  }

  /** Joiner: key packages for the built-in domains, sent in the pairing confirmation. */
  async joinOffers(): Promise<Result<DomainItems, DomainsError>> {
    const items: [DomainName, Uint8Array][] = [];
    for (const domain of DOMAINS) {
      const offer = await this.#deps.mls.offer(domain, await this.#deps.groupIdOf(domain));
      if (!offer.ok) return offer;
      items.push([domain, offer.value]);
    }
    return ok(items);
  }

  /** Inviter: adds a joiner to the built-in domains with full history; the bundles go in the accept. */
  async addJoiner(kps: DomainItems): Promise<Result<DomainItems, DomainsError>> {
    const welcomes: [DomainName, Uint8Array][] = [];
    for (const domain of DOMAINS) {
      const kp = kps.find(([d]) => d === domain)?.[1];
      if (!kp) return err({ type: 'NoKeyPackage', reason: `the joiner sent no key package for ${domain}` });
      const bundle = await this.#deps.mls.change(domain, { add: [kp], history: 'full' });
      if (!bundle.ok) return this.#settled(bundle);
      welcomes.push([domain, bundle.value]);
    }
    return this.#settled(ok(welcomes));
  }

  /** Joiner: the inviter's bundles; every built-in domain must be joined for the join to count. */
  async joinFrom(welcomes: DomainItems): Promise<Result<void, DomainsError>> {
    for (const domain of DOMAINS) {
      const bundle = welcomes.find(([d]) => d === domain)?.[1];
      if (!bundle) return err({ type: 'NoKeyPackage', reason: `the accept holds no bundle for ${domain}` });
      const joined = await this.#deps.mls.receive(domain, await this.#deps.groupIdOf(domain), bundle, {
        trustLeaves: true,
      });
      if (!joined.ok) return this.#settled(joined);
    }
    await this.#settled(ok(undefined));
    // 'duplicate' is also what a Welcome that did not open for us gives: membership is the test.
    const missing = DOMAINS.filter((d) => !this.#views.some((v) => v.domain === d && !v.awaiting && !v.removed));
    if (missing.length > 0) {
      return err({ type: 'MlsRejected', reason: `mls: the Welcome for ${missing.join(', ')} did not open here` });
    }
    return ok(undefined);
  }

  /** A bundle that added this machine to a domain later (its standing key package). */
  async welcomed(domain: DomainName, bundle: Uint8Array): Promise<void> {
    const received = await this.#deps.mls.receive(domain, await this.#deps.groupIdOf(domain), bundle);
    if (!received.ok) this.#deps.count(`mls:${received.error.type}`);
    else if (received.value === 'joined') this.#deps.notice('info', `this machine can now read domain ${domain}`);
    await this.#settled(ok(undefined));
  }

  /**
   * Admin: founds a data domain and adds the machines picked to read it (by
   * their standing key packages), forward only: a new domain has no history.
   */
  async create(domain: DomainName, members: readonly string[]): Promise<Result<void, DomainsError>> {
    const founded = await this.#deps.mls.found(domain, await this.#deps.groupIdOf(domain));
    if (!founded.ok) return founded;
    await this.#settled(ok(undefined));
    return members.length > 0 ? this.add(domain, members, 'forward') : ok(undefined);
  }

  /** An MLS message from a peer machine (frame-dispatch.ts); true when it was a Welcome. */
  async message(from: string, message: Extract<PeerMessage, { t: DomainMessage['t'] }>): Promise<boolean> {
    switch (message.t) {
      case 'mls-heads':
        await this.heads(message.receipts);
        return false;
      case 'mls-groupinfo-request':
        await this.groupInfoRequested(from, message.domain);
        return false;
      case 'mls-groupinfo':
        await this.groupInfoArrived(message.domain, message.info);
        return false;
      case 'mls-welcome':
        await this.welcomed(message.domain, message.bundle);
        return true;
    }
  }

  /** Admin: adds machines to a domain (history per policy) and sends each its Welcome. */
  async add(
    domain: DomainName,
    signers: readonly string[],
    history: 'forward' | 'full' | 'fresh',
  ): Promise<Result<void, DomainsError>> {
    const kps: Uint8Array[] = [];
    for (const signer of signers) {
      const kp = fromBase64Url(await this.#standingOf(signer));
      if (!kp) return err({ type: 'NoKeyPackage', reason: `${signer.slice(0, 8)} has published no key package yet` });
      kps.push(kp);
    }
    const bundle = await this.#deps.mls.change(domain, { add: kps, history });
    if (!bundle.ok) return this.#settled(bundle);
    for (const signer of signers) {
      if (!(await this.#deps.sendTo(signer, { t: 'mls-welcome', domain, bundle: bundle.value }))) {
        this.#deps.count('NoFrameKey');
      }
    }
    return this.#settled(ok(undefined));
  }

  /** Admin: removes machines from one domain; a new generation they cannot open is minted. */
  async remove(domain: DomainName, signers: readonly string[]): Promise<Result<void, DomainsError>> {
    const made = await this.#deps.mls.change(domain, { remove: signers });
    return this.#settled(made.ok ? ok(undefined) : made);
  }

  /**
   * Admin: a new generation for every reader of the domain, nobody added or removed; the
   * domain's objects are then rewrapped under it (rewrap-job.ts) and its rows sealed with it.
   */
  async rotate(domain: DomainName): Promise<Result<void, DomainsError>> {
    const made = await this.#deps.mls.change(domain, { rotate: true });
    return this.#settled(made.ok ? ok(undefined) : made);
  }

  /**
   * Admin: every machine the keyring removed leaves every group this machine
   * shares with it. Idempotent; a concurrent admin's removal simply wins.
   */
  async reconcileRemovals(removed: ReadonlySet<string>): Promise<void> {
    for (const view of this.#views) {
      if (view.removed || view.awaiting) continue;
      const targets = view.members.filter((m) => removed.has(m));
      if (targets.length === 0) continue;
      const made = await this.#deps.mls.change(view.domain, { remove: targets });
      if (!made.ok && made.error.type !== 'NothingToChange') {
        this.#deps.notice('warning', `could not remove a machine from ${view.domain} yet: ${made.error.type}`);
      }
    }
    await this.#settled(ok(undefined));
  }

  /**
   * Coming back: fetches each group's accepted commits from its epoch on and
   * applies them in order, so this machine holds the current generation before
   * it publishes. Routine epochs change no generation and cost one round trip.
   */
  catchUp(): Promise<void> {
    this.#catchUp ??= this.#catchUpAll().finally(() => (this.#catchUp = undefined));
    return this.#catchUp;
  }

  async #catchUpAll(): Promise<void> {
    const views = await this.#deps.mls.views();
    const ours = new Set<string>();
    for (const view of views) {
      if (view.removed || view.awaiting || view.epoch === undefined) continue;
      ours.add(view.domain);
      const group = fromHex(view.group)!;
      for (let epoch = view.epoch; ;) {
        const port = this.#port;
        if (!port) return;
        const items = await port.log(group, epoch);
        let moved = false;
        for (const item of items) {
          const received = await this.#deps.mls.receive(view.domain, group, item.bundle);
          if (!received.ok) {
            this.#deps.count(`mls:${received.error.type}`);
            await this.#failed(view.domain, epoch);
            break;
          }
          this.#failing.delete(view.domain);
          moved = true;
          epoch = item.receipt.body.epoch + 1;
        }
        if (!moved || items.length < MAX_COMMIT_PAGE) break;
      }
    }
    await this.#watchOthers(ours);
    await this.#saveReceipts();
    await this.#settled(ok(undefined));
  }

  /**
   * The mesh's other groups, fetched as a member fetches its own (issue 26): from the epoch
   * after the newest receipt seen, a page at a time, at the same moments. The relay sees every
   * machine ask for every group's commits, so which machines a domain leaves out does not show
   * in the traffic (accepted commits are pushed to every live machine already). The receipts
   * are checked and kept like our own groups' — any machine catches a relay that signs two
   * commits for one epoch of any group — and the bundles, not ours to process, are dropped.
   */
  async #watchOthers(ours: ReadonlySet<string>): Promise<void> {
    for (const domain of await this.#deps.domainNames()) {
      if (ours.has(domain)) continue;
      const group = await this.#deps.groupIdOf(domain);
      for (;;) {
        const port = this.#port;
        const from = (this.#log?.head(group)?.body.epoch ?? -1) + 1;
        if (!port) return;
        const items = await port.log(group, from);
        const next = (this.#log?.head(group)?.body.epoch ?? -1) + 1;
        if (items.length < MAX_COMMIT_PAGE || next <= from) break;
      }
    }
  }

  /** A pushed bundle the sequencer accepted for a group of ours. */
  async #received(group: Uint8Array, bundle: Uint8Array): Promise<void> {
    const view = this.#views.find((v) => bytesEqual(fromHex(v.group)!, group));
    await this.#saveReceipts();
    if (!view) return;
    const received = await this.#deps.mls.receive(view.domain, group, bundle);
    if (!received.ok) {
      // Most often a commit adding a machine whose keyring record has not reached us yet:
      // the commit log has it, and catchUp runs again once control records arrive.
      this.#deps.count(`mls:${received.error.type}`);
      if (view.epoch !== undefined) await this.#failed(view.domain, view.epoch);
    } else if (received.value === 'removed') {
      this.#deps.notice('warning', `this machine was removed from domain ${view.domain}`);
    }
    await this.#settled(ok(undefined));
  }

  /**
   * An accepted commit of `domain` at `epoch` did not process here. Once the
   * same epoch failed STUCK_AFTER times (pushes, catch-ups), the commit is
   * unusable for this machine: it asks its peers for a GroupInfo to resync.
   */
  async #failed(domain: DomainName, epoch: number): Promise<void> {
    const known = this.#failing.get(domain);
    const count = known?.epoch === epoch ? known.count + 1 : 1;
    this.#failing.set(domain, { epoch, count });
    if (count < STUCK_AFTER) return;
    for (const peer of this.#deps.peers()) await this.#deps.sendTo(peer, { t: 'mls-groupinfo-request', domain });
  }

  /** A machine asks for a GroupInfo: answered only when it is in our view of the group. */
  async groupInfoRequested(from: string, domain: DomainName): Promise<void> {
    const view = this.#views.find((v) => v.domain === domain);
    if (!view || view.removed || view.awaiting || !view.members.includes(from))
      return this.#deps.count('mls:GroupInfoRefused');
    const info = await this.#deps.mls.groupInfo(domain);
    if (info.ok) await this.#deps.sendTo(from, { t: 'mls-groupinfo', domain, info: info.value });
  }

  /** A GroupInfo arrived: if this machine is stuck in that domain, it rejoins its own leaf by external commit. */
  async groupInfoArrived(domain: DomainName, info: Uint8Array): Promise<void> {
    if ((this.#failing.get(domain)?.count ?? 0) < STUCK_AFTER) return;
    const rejoined = await this.#deps.mls.resync(domain, info);
    if (rejoined.ok) {
      this.#failing.delete(domain);
      this.#deps.notice('info', `resynced domain ${domain} by external commit`);
    } else this.#deps.count(`mls:resync:${rejoined.error.type}`);
    await this.#settled(ok(undefined));
  }

  /** Domains where this machine is stuck on an accepted commit it cannot use. */
  stuck(): DomainName[] {
    return [...this.#failing].filter(([, f]) => f.count >= STUCK_AFTER).map(([d]) => d);
  }

  /** Publishes this machine's standing key package when the one on record is not it. */
  async standingKeyPackage(): Promise<string> {
    return toBase64Url(await this.#deps.mls.standingKeyPackage());
  }

  /** Gossip: our newest receipt per group, to one peer. */
  async gossip(signer: string): Promise<void> {
    const receipts = (this.#log?.heads() ?? []).map((r) => r.bytes);
    if (receipts.length > 0) await this.#deps.sendTo(signer, { t: 'mls-heads', receipts });
  }

  /** A peer's receipt heads: each is checked against every receipt kept here. */
  async heads(receipts: readonly Uint8Array[]): Promise<void> {
    const log = this.#log;
    if (!log) return;
    for (const r of receipts) {
      const verdict = log.observe(r);
      if (
        !verdict.ok &&
        (verdict.error.type === 'ConflictingReceipts' || verdict.error.type === 'BrokenReceiptChain')
      ) {
        this.#deps.notice('warning', 'the relay signed two different commits for one epoch: proof kept');
      } else if (!verdict.ok) this.#deps.count(`receipt:${verdict.error.type}`);
    }
    await this.#saveReceipts();
    this.#deps.changed();
  }

  async #saveReceipts(): Promise<void> {
    if (this.#log) await this.#deps.store.setMeta(RECEIPTS_KEY, this.#log.all());
  }

  /** The standing key package a machine published (CONTROL `key_packages`, base64url), or ''. */
  async #standingOf(signer: string): Promise<string> {
    const value = (await this.#deps.store.row('key_packages', `${signer}:mls`))?.cells['kp']?.value;
    return typeof value === 'string' ? value : '';
  }

  /** After any MLS step: new generations to the crypto worker, fresh views to the UI. */
  async #settled<T extends Result<unknown, unknown>>(result: T): Promise<T> {
    // Views first: new keys start an object cycle (mesh-objects.ts), whose rewrap reads them.
    await this.refresh();
    await this.#deps.reloadKeys();
    this.#deps.changed();
    return result;
  }
}
