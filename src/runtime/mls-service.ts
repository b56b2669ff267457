/**
 * The MLS worker's service (`workers/mls.worker.ts`, comlink): this machine's
 * membership of every domain (core/mls/domain.ts) over the MlsProvider, kept at
 * rest and handed nothing but bytes and public views.
 *
 * It opens the same key store as the crypto worker (storage/key-store.ts):
 * CryptoKeys are structured-cloneable, so the machine's non-extractable signing
 * key signs leaf bindings and KEK packages here, and its non-extractable
 * wrapping key wraps what must be kept —
 *   `mls/<domain>`    the domain's snapshot: MLS group state (the leaf's private
 *                     keys), a pending join offer, generations, entitlements;
 *   `mls-standing`    the standing key package's private half (an admin adds this
 *                     machine to a new domain with its public half, published in
 *                     the CONTROL table `key_packages`); replaced once used;
 *   `domain/<D>/<g>`  each KEK generation, in the format the crypto worker loads
 *                     (it reloads when told; it seals and opens, this never does).
 *
 * Who may hold a leaf is the keyring's verdict, pushed in by the main thread
 * (`setKeyring`); a joiner that has no keyring yet accepts the leaves of the
 * Welcome its SAS-confirmed inviter sent (`trustLeaves`), whose key package an
 * anchor admin must still have signed. Every operation runs one at a time: MLS
 * states are values, and two interleaved changes would fork them.
 *
 * Only the tab holding the relay session drives this service (one per machine
 * at a time), so two tabs never advance one group.
 */
import { fromHex, isBytes, toHex } from '../core/bytes.js';
import { decodeCbor, encodeCbor, isRecord } from '../core/cbor.js';
import {
  DomainMember,
  offerToJoin,
  type DomainDeps,
  type DomainError,
  type DomainSnapshot,
  type Entitlement,
  type History,
  type JoinOffer,
  type SequencerUnavailable,
} from '../core/mls/domain.js';
import { leafAuthenticator } from '../core/mls/leaf-binding.js';
import type { Authenticate, MlsProvider } from '../core/mls/provider.js';
import type { SequencerRejection } from '../core/mls/sequencer.js';
import { err, ok, type Result } from '../core/result.js';
import { keyStoreOf, type KeyDatabase, type KeyStore } from '../storage/key-store.js';
import { storedGenerations, wrapGenerations } from '../storage/domain-generations.js';
import { TsMlsProvider } from './mls/ts-mls-provider.js';
import { unwrapSecret, wrapSecret } from '../storage/key-wrap.js';
import { webRandom, webSigner } from './webcrypto.js';

export type MlsKeyring = {
  /** Machines (signing keys, hex) that may hold a leaf: the keyring's live machines. */
  readonly admitted: readonly string[];
  /** Machines whose KEK packages are believed: anchors and admins. */
  readonly admins: readonly string[];
};

export type Sequence = (bundle: Uint8Array) => Promise<Result<unknown, SequencerRejection | SequencerUnavailable>>;

export type DomainView = {
  readonly domain: string;
  readonly group: string;
  readonly epoch: number | undefined;
  /** Member machines (signing keys, hex), from the group's leaf bindings. */
  readonly members: readonly string[];
  readonly generations: readonly number[];
  readonly entitlements: readonly Entitlement[];
  /** Generations minted by a rotation or a removal: older objects may be rewrapped under them. */
  readonly historyGens: readonly number[];
  readonly removed: boolean;
  readonly awaiting: boolean;
};

export type ReceiveOutcome = 'applied' | 'joined' | 'duplicate' | 'removed';

export type ServiceError =
  | DomainError
  | { readonly type: 'UnknownDomain'; readonly reason: string }
  | { readonly type: 'NothingToChange'; readonly reason: string };

const STATE_PREFIX = 'mls/';
const STANDING = 'mls-standing';
const MAX_SNAPSHOT = 8 * 1024 * 1024;
const OFFER_BYTES = 8192;
/** Attempts at one change when other admins' commits keep winning the epoch. */
const MAX_ATTEMPTS = 4;

export class MlsService {
  readonly #db: KeyStore;
  readonly #makeProvider: (authenticate: Authenticate) => Promise<MlsProvider>;
  #provider: MlsProvider | undefined;
  #deps: DomainDeps | undefined;
  #wrapping: CryptoKey | undefined;
  readonly #members = new Map<string, DomainMember>();
  /** Generations (`domain/gen`) the key store holds already. */
  readonly #stored = new Set<string>();
  #admitted = new Set<string>();
  #admins = new Set<string>();
  #trustLeaves = false;
  #sequence: Sequence | undefined;
  #standing: JoinOffer | undefined;
  #turn: Promise<unknown> = Promise.resolve();

  constructor(
    db: KeyDatabase | KeyStore,
    makeProvider: (authenticate: Authenticate) => Promise<MlsProvider> = TsMlsProvider.create,
  ) {
    this.#db = keyStoreOf(db);
    this.#makeProvider = makeProvider;
  }

  /** Loads the machine's keys (the crypto worker created them) and every kept domain. */
  init(): Promise<DomainView[]> {
    return this.#exclusive(async () => {
      const identity = await this.#db.identity();
      if (!identity) throw new Error('mls: the machine identity does not exist yet (crypto init first)');
      this.#wrapping = identity.wrapping;
      const authenticate = leafAuthenticator(async (m) => this.#trustLeaves || this.#admitted.has(toHex(m)));
      const provider = (this.#provider ??= await this.#makeProvider(authenticate));
      this.#deps = {
        provider,
        machine: webSigner({ keys: identity.signing, publicKey: identity.signingPublic }),
        endpoint: identity.endpointPublic,
        random: webRandom,
        isAdmin: async (m) => this.#admins.has(toHex(m)),
        sequence: (bundle) =>
          this.#sequence
            ? this.#sequence(bundle)
            : Promise.resolve(err({ type: 'SequencerUnavailable', reason: 'mls: no relay session' })),
      };
      this.#members.clear();
      for (const { domain, gen } of await storedGenerations(this.#db)) this.#stored.add(`${domain}/${gen}`);
      for (const record of await this.#db.secretsUnder(STATE_PREFIX)) {
        const snapshot = decodeSnapshot(await unwrapSecret(identity.wrapping, record.name, record));
        if (snapshot) this.#members.set(snapshot.domain, DomainMember.restore(this.#deps, snapshot));
      }
      const standing = await this.#db.secret(STANDING);
      this.#standing = standing
        ? decodeOffer(decodeCbor(await unwrapSecret(identity.wrapping, STANDING, standing), OFFER_BYTES))
        : undefined;
      return this.#views();
    });
  }

  setKeyring(keyring: MlsKeyring): void {
    this.#admitted = new Set(keyring.admitted);
    this.#admins = new Set(keyring.admins);
  }

  /** How bundles reach the blind sequencer (a comlink proxy to the relay session in the main thread). */
  setSequencer(sequence: Sequence | undefined): void {
    this.#sequence = sequence;
  }

  views(): Promise<DomainView[]> {
    return this.#exclusive(async () => this.#views());
  }

  /** Founds a domain (admins): a one-member group and generation 1. */
  found(domain: string, groupId: Uint8Array): Promise<Result<DomainView, ServiceError>> {
    return this.#exclusive(async () => {
      const known = this.#members.get(domain);
      if (known?.isMember) return ok(this.#view(known));
      const founded = await DomainMember.found(this.#need(), domain, groupId);
      if (!founded.ok) return founded;
      await this.#keep(founded.value);
      return ok(this.#view(founded.value));
    });
  }

  /** A key package for joining `domain` (the pairing exchange sends it); the same one until used. */
  offer(domain: string, groupId: Uint8Array): Promise<Result<Uint8Array, ServiceError>> {
    return this.#exclusive(async () => {
      const known = this.#members.get(domain);
      if (known?.isMember) return err({ type: 'NotAMember', reason: `mls: already a member of ${domain}` });
      const offer = known?.snapshot().offer;
      if (offer) return ok(offer.keyPackage);
      const fresh = await offerToJoin(this.#need());
      const member = DomainMember.awaiting(this.#need(), domain, groupId, fresh);
      await this.#keep(member);
      return ok(fresh.keyPackage);
    });
  }

  /** The standing key package admins add this machine to new domains with (made when none is kept). */
  standingKeyPackage(): Promise<Uint8Array> {
    return this.#exclusive(async () => {
      if (!this.#standing) {
        const offer = await offerToJoin(this.#need());
        const bytes = encodeOffer(offer);
        await this.#db.putSecrets([{ name: STANDING, ...(await wrapSecret(this.#wrap(), STANDING, bytes)) }]);
        this.#standing = offer;
      }
      return this.#standing.keyPackage;
    });
  }

  /**
   * Takes in a bundle the sequencer accepted for `domain`: a Welcome joins this
   * machine (with the domain's pending offer, else the standing key package),
   * a commit moves its group on, and the KEK package inside hands it keys.
   * `trustLeaves` only for the Welcome a SAS-confirmed inviter sent while this
   * machine has no keyring yet.
   */
  receive(
    domain: string,
    groupId: Uint8Array,
    bundle: Uint8Array,
    options: { readonly trustLeaves?: boolean } = {},
  ): Promise<Result<ReceiveOutcome, ServiceError>> {
    return this.#exclusive(async () => {
      const member = this.#members.get(domain);
      // A machine removed from a domain may be added again later, with a new leaf.
      if (member === undefined || member.removed) {
        const standing = this.#standing;
        if (!standing) return ok(member ? 'removed' : 'duplicate');
        const welcomeOnly = DomainMember.awaiting(this.#need(), domain, groupId, standing);
        const joined = await welcomeOnly.receive(bundle);
        if (!welcomeOnly.isMember) return member ? ok('removed') : joined.ok ? ok('duplicate') : joined;
        this.#standing = undefined;
        await this.#db.deleteSecrets([STANDING]);
        // Generations it held before its removal stay in the key store: they are its history.
        await this.#keep(welcomeOnly);
        return joined.ok ? ok('joined') : joined;
      }
      const awaiting = member.awaitingWelcome;
      this.#trustLeaves = awaiting && options.trustLeaves === true;
      let received: Awaited<ReturnType<DomainMember['receive']>>;
      try {
        received = await member.receive(bundle);
      } finally {
        this.#trustLeaves = false;
      }
      const joined = awaiting && member.isMember;
      await this.#keep(member);
      if (!received.ok) return received;
      return ok(joined ? 'joined' : received.value);
    });
  }

  /** A GroupInfo of a domain's current epoch, for a member that must rejoin (only members can make one). */
  groupInfo(domain: string): Promise<Result<Uint8Array, ServiceError>> {
    return this.#exclusive(async () => {
      const member = this.#members.get(domain);
      const state = member?.isMember ? member.snapshot().state : undefined;
      if (!state) return err({ type: 'UnknownDomain', reason: `mls: not a member of ${domain}` });
      return this.#need().provider.groupInfo(state);
    });
  }

  /** Rejoins a domain whose accepted commits this machine cannot use, by external commit (DomainMember.resync). */
  resync(domain: string, groupInfo: Uint8Array): Promise<Result<Uint8Array, ServiceError>> {
    return this.#exclusive(async () => {
      const member = this.#members.get(domain);
      if (!member?.isMember) return err({ type: 'UnknownDomain', reason: `mls: not a member of ${domain}` });
      const done = await member.resync(groupInfo);
      await this.#keep(member);
      return done;
    });
  }

  /**
   * Admins: adds machines (their key packages) with a history policy, removes
   * machines (signing keys, hex), or rotates (a new generation for every member),
   * as one sequenced bundle. When another
   * admin's commit won the epoch, that winner is processed and the change is
   * made again on the new epoch. Resolves with the accepted bundle.
   */
  change(
    domain: string,
    change: {
      readonly add?: readonly Uint8Array[];
      readonly history?: History;
      readonly remove?: readonly string[];
      readonly rotate?: boolean;
    },
  ): Promise<Result<Uint8Array, ServiceError>> {
    return this.#exclusive(async () => {
      const member = this.#members.get(domain);
      if (!member?.isMember) return err({ type: 'UnknownDomain', reason: `mls: not a member of ${domain}` });
      const remove = (change.remove ?? []).map((h) => fromHex(h)).filter((k): k is Uint8Array => k?.length === 32);
      for (let attempt = 1; ; attempt++) {
        const stillIn = new Set(member.members());
        const removing = remove.filter((k) => stillIn.has(toHex(k)));
        if (!change.add?.length && removing.length === 0 && !change.rotate) {
          return err({ type: 'NothingToChange', reason: `mls: no one to add to or remove from ${domain}` });
        }
        const made = await member.change({
          ...(change.add ? { add: change.add } : {}),
          ...(change.history ? { history: change.history } : {}),
          ...(change.rotate ? { rotate: true } : {}),
          remove: removing,
        });
        if (made.ok || made.error.type !== 'EpochTaken' || attempt >= MAX_ATTEMPTS) {
          await this.#keep(member);
          return made;
        }
        const taken = await member.receive(made.error.winner.bundle);
        await this.#keep(member);
        if (!taken.ok) return taken;
        if (taken.value === 'removed') return err({ type: 'NotAMember', reason: `mls: removed from ${domain}` });
      }
    });
  }

  #need(): DomainDeps {
    if (!this.#deps) throw new Error('mls: init() first');
    return this.#deps;
  }

  #wrap(): CryptoKey {
    if (!this.#wrapping) throw new Error('mls: init() first');
    return this.#wrapping;
  }

  /** Keeps a member's snapshot and any generation not yet in the key store, all wrapped. */
  async #keep(member: DomainMember): Promise<void> {
    this.#members.set(member.domain, member);
    const snapshot = member.snapshot();
    const name = `${STATE_PREFIX}${member.domain}`;
    const generations = snapshot.gens.map((g) => ({ domain: member.domain, gen: g.gen, key: g.key }));
    const fresh = await wrapGenerations(this.#wrap(), generations, (d, g) => this.#stored.has(`${d}/${g}`));
    await this.#db.putSecrets([
      { name, ...(await wrapSecret(this.#wrap(), name, encodeSnapshot(snapshot))) },
      ...fresh,
    ]);
    for (const { domain, gen } of generations) this.#stored.add(`${domain}/${gen}`);
  }

  #views(): DomainView[] {
    return [...this.#members.values()].map((m) => this.#view(m)).sort((a, b) => a.domain.localeCompare(b.domain));
  }

  #view(m: DomainMember): DomainView {
    const epoch = m.epoch;
    return {
      domain: m.domain,
      group: toHex(m.groupId),
      epoch: epoch === undefined ? undefined : Number(epoch),
      members: m.members(),
      generations: m.generations().map((g) => g.gen),
      entitlements: m.entitlements(),
      historyGens: m.historyGens(),
      removed: m.removed,
      awaiting: m.awaitingWelcome,
    };
  }

  #exclusive<T>(run: () => Promise<T>): Promise<T> {
    const next = this.#turn.then(run, run);
    this.#turn = next.catch(() => undefined);
    return next;
  }
}

function encodeOffer(o: JoinOffer): Uint8Array {
  const { keyPackage, pair, key, identity } = o;
  return encodeCbor([keyPackage, pair.publicPackage, pair.privatePackage, key.publicKey, key.secretKey, identity]);
}

function decodeOffer(decoded: Result<unknown, unknown>): JoinOffer | undefined {
  if (!decoded.ok || !Array.isArray(decoded.value) || decoded.value.length !== 6) return undefined;
  const parts = decoded.value as unknown[];
  if (!parts.every((p) => isBytes(p))) return undefined;
  const [keyPackage, publicPackage, privatePackage, publicKey, secretKey, identity] = parts;
  return {
    keyPackage: keyPackage!,
    pair: { publicPackage: publicPackage!, privatePackage: privatePackage! },
    key: { publicKey: publicKey!, secretKey: secretKey! },
    identity: identity!,
  };
}

function encodeSnapshot(s: DomainSnapshot): Uint8Array {
  return encodeCbor({
    v: 1,
    domain: s.domain,
    group: s.groupId,
    state: s.state ?? null,
    offer: s.offer ? encodeOffer(s.offer) : null,
    gens: s.gens.map((g) => [g.gen, g.key]),
    ent: s.entitlements.map((e) => [e.machine, e.history, e.fromGen]),
    hist: s.historyGens ?? [],
    removed: s.removed,
  });
}

/** A kept snapshot (authenticated by its wrapping, so only its shape is checked). */
function decodeSnapshot(bytes: Uint8Array): DomainSnapshot | undefined {
  const decoded = decodeCbor(bytes, MAX_SNAPSHOT);
  if (!decoded.ok || !isRecord(decoded.value) || decoded.value['v'] !== 1) return undefined;
  const { domain, group, state, offer, gens, ent, hist, removed } = decoded.value;
  if (typeof domain !== 'string' || !isBytes(group) || typeof removed !== 'boolean') return undefined;
  if (!Array.isArray(gens) || !Array.isArray(ent)) return undefined;
  return {
    domain,
    groupId: group,
    state: isBytes(state) ? state : undefined,
    offer: isBytes(offer) ? decodeOffer(decodeCbor(offer, OFFER_BYTES)) : undefined,
    gens: (gens as [number, Uint8Array][]).map(([gen, key]) => ({ gen, key })),
    entitlements: (ent as [string, History, number][]).map(([machine, history, fromGen]) => ({
      machine,
      history,
      fromGen,
    })),
    // Kept before rotations existed: none.
    historyGens: Array.isArray(hist) ? (hist as number[]) : [],
    removed,
  };
}
