/**
 * The crypto worker's service: the only code that touches private keys, the
 * group secret and domain keys (their one holder: the Parquet worker asks it
 * through `accessKeys`). Everything it hands back is public (ids,
 * signatures, ciphertext) or a typed error; secrets leave it only sealed inside
 * frames to a specific peer. Comlink exposes an instance of this class in
 * `workers/crypto.worker.ts`; unit tests drive it directly in Node.
 */
import { fromHex, toHex } from '../core/bytes.js';
import { admissionBody, admissionSigningPayload, encodeAdmission, inviteId } from '../core/admission.js';
import { encodeCbor } from '../core/cbor.js';
import {
  commitOpens,
  INVITATION_USED,
  shortAuthString,
  type InvitationState,
  type PairingParty,
} from '../core/pairing.js';
import { DomainKeyring } from '../core/domain-keys.js';
import { MAX_FRAME_AGE_MS, MAX_FRAME_SKEW_MS, MAX_REQUEST_AGE_MS, type FrameRejection } from '../core/frame.js';
import { blake3 } from '../core/hash.js';
import { fingerprint, shortFingerprint, topicOf } from '../core/identity.js';
import {
  decodePeerMessage,
  encodePeerMessage,
  isPairingMessage,
  type DomainItems,
  type PeerMessage,
  type PeerWireError,
} from '../core/peer-wire.js';
import type { Clock, Random } from '../core/ports.js';
import type { EnvelopeCrypto } from '../core/replica.js';
import { relayAuthPayload } from '../core/relay-wire.js';
import { err, ok, type Result } from '../core/result.js';
import type { DomainName } from '../core/schema.js';
import { decodeSealed, openSealed, type SealedEvent, type SealError, type SealLane } from '../core/seal.js';
import type { PrivacyClass } from '../core/sync-manifest.js';
import { encodeTicket } from '../core/ticket.js';
import { loadGenerations } from '../storage/domain-generations.js';
import {
  keyStoreOf,
  type IdentityRecord,
  type InvitationRecord,
  type KeyDatabase,
  type KeyStore,
} from '../storage/key-store.js';
import type { KeyKeeping } from '../storage/key-keeping.js';
import { keyringAccess, type AccessKeys } from './access-keys.js';
import {
  FrameChannel,
  generateFrameKey,
  type FrameKeyPair,
  type FrameTraffic,
  type SenderBinding,
} from './frame-channel.js';
import { unwrapSecret, wrapSecret } from '../storage/key-wrap.js';
import { generateSigningIdentity, webRandom, webSigner, webVerifier } from './webcrypto.js';
import { webEnvelopes } from './web-aead.js';
import { JoinCeremony, type JoinError, type JoinStart } from './join-ceremony.js';
import { GROUP_SECRET, RecoveryCrypto } from './crypto-recovery.js';

export type IdentityView = {
  readonly signer: string;
  readonly endpoint: string;
  /** The X25519 key peers seal frames to (hex). */
  readonly frame: string;
  readonly fingerprint: string;
  readonly topic: string | undefined;
  readonly member: boolean;
};

/** A peer as the main thread names it: endpoint id and bound frame key, both hex. */
export type PeerAddress = { readonly endpoint: string; readonly frame: string };

/**
 * An opened frame: the message, the frame key its sender proved it holds (hex),
 * and its request id and time, for `remember` once its effects are durable.
 */
export type OpenedMessage = {
  readonly message: InboundMessage;
  readonly frame: string;
  readonly rid: string;
  readonly ts: number;
};

export type OpenError = FrameRejection | PeerWireError | JoinError;

export type { JoinError, JoinStart } from './join-ceremony.js';

/** What an opened frame may hold: any peer message (keys travel only inside MLS bundles). */
export type InboundMessage = PeerMessage;

export const INVITATION_TTL_MS = 24 * 60 * 60 * 1000;
/** Request ids are kept as long as core/frame.ts would accept their frames. */
const REPLAY_RETAIN_MS = MAX_FRAME_AGE_MS + MAX_FRAME_SKEW_MS;
/**
 * Whether the relay should serve an invitation's holder: open ones, and closed ones for the
 * request window so a refusal reaches the joiner. A used one is not: its joiner is a member
 * now, and a relay that remembers which invitation an endpoint came in with would otherwise
 * go on serving that endpoint on it after a removal.
 */
const served = (i: InvitationRecord): boolean => i.closed !== INVITATION_USED;

/**
 * A new identity's key pairs: Ed25519 signing and endpoint keys, the X25519 frame key;
 * extractable only where the key store keeps that type wrapped (storage/key-keeping.ts).
 */
async function makeIdentityKeys(
  keeping: KeyKeeping,
): Promise<{ signing: CryptoKeyPair; endpoint: CryptoKeyPair; frame: CryptoKeyPair }> {
  const wrapped = keeping.Ed25519 === 'wrapped';
  const signing = (await generateSigningIdentity(wrapped)).keys;
  const endpoint = (await generateSigningIdentity(wrapped)).keys;
  return { signing, endpoint, frame: (await generateFrameKey(keeping.X25519 === 'wrapped')).keys };
}

export class CryptoService {
  readonly #db: KeyStore;
  readonly #clock: Clock;
  readonly #verifier = webVerifier();
  readonly #domains = new DomainKeyring();
  /**
   * Envelopes sealed and opened with WebCrypto (native; the same bytes as the core's noble
   * AES-GCM), or with what the host gives (`sov node`: node:crypto, synchronous, a fifth of
   * WebCrypto's cost per envelope in Node).
   */
  readonly #envelopes: EnvelopeCrypto;
  /**
   * What the Parquet worker may ask of the domain keys (runtime/access-keys.ts): this worker is
   * their one holder; the answers are access records and object secrets, never a key.
   */
  readonly accessKeys: AccessKeys = keyringAccess(this.#domains, webRandom);
  #identity: IdentityRecord | undefined;
  #group: { secret: Uint8Array; topic: Uint8Array; channel: FrameChannel } | undefined;
  /** The joiner's side of pairing (join-ceremony.ts). */
  readonly #join = new JoinCeremony({
    member: () => this.view().member,
    party: () => this.#party(),
    topic: () => this.#group?.topic,
    joinGroup: async (secret) => {
      await this.#storeSecret(GROUP_SECRET, secret);
      await this.#setGroup(secret);
    },
    leaveGroup: async () => {
      await this.#db.deleteSecrets([GROUP_SECRET]);
      this.#group = undefined;
    },
    storeSecret: (name, secret) => this.#storeSecret(name, secret),
    loadSecret: (name) => this.#loadSecret(name),
    deleteSecrets: (names) => this.#db.deleteSecrets([...names]),
    seal: (endpoint, kid, message) => this.#seal(endpoint, kid, message),
  });
  /** Recovery kits, checkpoints and roots (crypto-recovery.ts). */
  readonly #recovery = new RecoveryCrypto({
    db: () => this.#db,
    clock: () => this.#clock,
    verifier: this.#verifier,
    domains: this.#domains,
    identity: () => this.#id(),
    group: () => this.#group,
    joinGroup: async (secret) => {
      await this.#storeSecret(GROUP_SECRET, secret);
      await this.#setGroup(secret);
    },
    setIdentity: (identity) => void (this.#identity = identity),
  });

  constructor(
    db: KeyDatabase | KeyStore,
    clock: Clock,
    envelopes: (keyring: DomainKeyring, random: Random) => EnvelopeCrypto = webEnvelopes,
  ) {
    this.#db = keyStoreOf(db);
    this.#clock = clock;
    this.#envelopes = envelopes(this.#domains, webRandom);
  }

  /** Loads this machine's identity, creating it on first launch, and unwraps held secrets. */
  async init(): Promise<IdentityView> {
    this.#identity = await this.#db.ensureIdentity(makeIdentityKeys, this.#clock.now());
    const group = await this.#loadSecret(GROUP_SECRET);
    if (group) await this.#setGroup(group);
    await this.#join.load();
    await this.reloadDomainKeys();
    return this.view();
  }

  /**
   * Loads every KEK generation in the key store. The MLS worker writes them
   * there (runtime/mls-service.ts) as they arrive through MLS; this worker only
   * seals and opens with them.
   */
  async reloadDomainKeys(): Promise<IdentityView> {
    await this.loadNewDomainKeys();
    return this.view();
  }

  /** Loads the generations the key store holds and this worker does not yet; returns how many. */
  async loadNewDomainKeys(): Promise<number> {
    const fresh = await loadGenerations(this.#db, this.#id().wrapping, (d, g) => this.#domains.get(d, g) !== undefined);
    for (const { domain, gen, key } of fresh) this.#domains.add(domain, gen, key);
    return fresh.length;
  }

  /**
   * The MLS group id of a domain in this mesh: a hash under the group secret,
   * so the relay, which reads group ids from the framing, cannot tell which
   * domain a group is (a created domain's name would otherwise show).
   */
  groupIdOf(domain: DomainName): Uint8Array {
    if (!this.#group) throw new Error('crypto: no group');
    return blake3(encodeCbor(['sov/1/mls-group', this.#group.secret, domain])).subarray(0, 16);
  }

  /** Every generation this machine holds (names only). */
  heldGenerations(): { domain: DomainName; gen: number }[] {
    return this.#domains.list().map(({ domain, gen }) => ({ domain, gen }));
  }

  /** Which domains this machine holds a key for, with their newest generation. */
  domainGenerations(): { domain: DomainName; gen: number }[] {
    const newest = new Map<DomainName, number>();
    for (const { domain, gen } of this.#domains.list()) newest.set(domain, Math.max(gen, newest.get(domain) ?? 0));
    return [...newest].map(([domain, gen]) => ({ domain, gen }));
  }

  view(): IdentityView {
    const id = this.#id();
    return {
      signer: toHex(id.signingPublic),
      endpoint: toHex(id.endpointPublic),
      frame: toHex(this.#frameKey().publicKey),
      fingerprint: shortFingerprint(id.signingPublic),
      topic: this.#group && toHex(this.#group.topic),
      member: this.#domains.list().length > 0,
    };
  }

  #id(): IdentityRecord {
    if (!this.#identity) throw new Error('crypto: init() first');
    return this.#identity;
  }

  #frameKey(): FrameKeyPair {
    const { frame, framePublic } = this.#id();
    if (!frame || !framePublic) throw new Error('crypto: identity has no frame key');
    return { keys: frame, publicKey: framePublic };
  }

  async #setGroup(secret: Uint8Array): Promise<void> {
    const topic = topicOf(secret);
    const channel = new FrameChannel({
      endpoint: this.#id().endpointPublic,
      frameKey: this.#frameKey(),
      topic,
      clock: this.#clock,
      random: webRandom,
    });
    const now = this.#clock.now();
    channel.replay.load(
      (await this.#db.replays(now - REPLAY_RETAIN_MS)).map((r) => [r.rid, r.ts] as const),
      now,
    );
    this.#group = { secret, topic, channel };
  }

  async #storeSecret(name: string, secret: Uint8Array): Promise<void> {
    await this.#db.putSecrets([{ name, ...(await wrapSecret(this.#id().wrapping, name, secret)) }]);
  }

  async #loadSecret(name: string): Promise<Uint8Array | undefined> {
    const record = await this.#db.secret(name);
    return record && this.#unwrap(name, record);
  }

  #unwrap(name: string, record: { iv: Uint8Array; ct: Uint8Array }): Promise<Uint8Array> {
    return unwrapSecret(this.#id().wrapping, name, record);
  }

  /**
   * Founds a new mesh: its group secret. The domains' MLS groups and their first
   * KEK generations are founded next, by the MLS worker.
   */
  async createMesh(): Promise<Result<IdentityView, { type: 'AlreadyInMesh' }>> {
    if (this.#group) return err({ type: 'AlreadyInMesh' });
    const secret = webRandom.bytes(32);
    await this.#storeSecret(GROUP_SECRET, secret);
    await this.#setGroup(secret);
    return ok(this.view());
  }

  /** Issues a pairing ticket for one joiner; the ticket itself is returned once and never stored. */
  async createInvitation(relay: string, relayKey: string, ttlMs = INVITATION_TTL_MS): Promise<string> {
    const rk = fromHex(relayKey);
    if (!rk || rk.length !== 32) throw new Error('crypto: the relay key is not pinned yet');
    if (!this.#group || !this.view().member) throw new Error('crypto: not in a mesh');
    const inv = webRandom.bytes(16);
    await this.#db.putInvitation({ inv: toHex(inv), expiresAt: this.#clock.now() + ttlMs });
    const id = this.#id();
    return encodeTicket({
      v: 2,
      secret: this.#group.secret,
      endpoint: id.endpointPublic,
      kid: this.#frameKey().publicKey,
      fp: fingerprint(id.signingPublic),
      relay,
      rk,
      inv,
    });
  }

  /** Joiner: takes a pasted ticket (join-ceremony.ts). */
  beginJoin(text: string): Promise<Result<JoinStart, JoinError>> {
    return this.#join.begin(text);
  }

  /** Joiner: forgets an unfinished join. Refused once keys arrived. */
  abandonJoin(): Promise<Result<true, { type: 'AlreadyInMesh' }>> {
    return this.#join.abandon();
  }

  /** Joiner: the join request for the inviter the pending ticket names. */
  joinRequest(name: string): Promise<Result<{ to: string; body: Uint8Array }, JoinError>> {
    return this.#join.request(name);
  }

  /** Joiner: reveals our nonce for the inviter's challenge; the string our human compares. */
  joinReveal(challenge: {
    inv: Uint8Array;
    signer: Uint8Array;
    nonce: Uint8Array;
  }): Promise<Result<{ sas: string; body: Uint8Array }, JoinError>> {
    return this.#join.reveal(challenge);
  }

  /** Joiner: our human's answer, with our MLS key packages when confirmed. */
  joinAnswer(confirmed: boolean, kps: DomainItems = []): Promise<Result<Uint8Array, JoinError>> {
    return this.#join.answer(confirmed, kps);
  }

  #party(): PairingParty {
    const id = this.#id();
    return { signer: id.signingPublic, endpoint: id.endpointPublic, frame: this.#frameKey().publicKey };
  }

  /** Inviter: whether an invitation is open (issued, not closed, not expired), or why not. */
  async invitationState(inv: Uint8Array): Promise<InvitationState> {
    const invitation = await this.#db.invitation(toHex(inv));
    if (!invitation) return { state: 'unknown' };
    if (invitation.expiresAt < this.#clock.now()) return { state: 'expired' };
    if (invitation.closed !== undefined) return { state: 'closed', reason: invitation.closed };
    return { state: 'open' };
  }

  /**
   * Inviter: closes an invitation (used, declined, or the ceremony went wrong). It is kept, closed,
   * for the pairing-request window (or less, if it expires sooner): the relay goes on serving its
   * joiner, which repeats its last step until answered, so the answer reaches it.
   */
  async closeInvitation(inv: Uint8Array, reason: string): Promise<void> {
    const invitation = await this.#db.invitation(toHex(inv));
    if (!invitation || invitation.closed !== undefined) return;
    const expiresAt = Math.min(invitation.expiresAt, this.#clock.now() + MAX_REQUEST_AGE_MS);
    await this.#db.putInvitation({ ...invitation, expiresAt, closed: reason });
  }

  /** Inviter: the string for a joiner whose revealed nonce opened its commitment; undefined if it did not. */
  pairingCode(p: {
    inv: Uint8Array;
    joiner: PairingParty;
    commit: Uint8Array;
    inviterNonce: Uint8Array;
    joinerNonce: Uint8Array;
  }): string | undefined {
    if (!this.#group || !commitOpens(p.commit, p.joiner, p.joinerNonce)) return undefined;
    const id = this.#id();
    const inviter = { signer: id.signingPublic, endpoint: id.endpointPublic, frame: this.#frameKey().publicKey };
    return shortAuthString({ ...p, topic: this.#group.topic, inviter });
  }

  /**
   * Inviter side: consumes the invitation and seals the accept — the bundles
   * that added the joiner to each domain's MLS group — to the joiner's endpoint
   * and frame key.
   */
  async admitJoin(
    request: { inv: Uint8Array; endpoint: Uint8Array; frame: string },
    anchors: readonly Uint8Array[],
    classes: readonly (readonly [string, PrivacyClass])[],
    welcomes: DomainItems,
  ): Promise<Result<Uint8Array, JoinError>> {
    const kid = fromHex(request.frame);
    if (!kid || kid.length !== 32) return err({ type: 'InvitationUnknown' });
    const inv = toHex(request.inv);
    const invitation = await this.#db.invitation(inv);
    if (!invitation || invitation.closed !== undefined) return err({ type: 'InvitationUnknown' });
    if (invitation.expiresAt < this.#clock.now()) return err({ type: 'InvitationExpired' });
    await this.closeInvitation(request.inv, INVITATION_USED);
    return ok(
      await this.#seal(request.endpoint, kid, {
        t: 'join-accept',
        inv: request.inv,
        signer: this.#id().signingPublic,
        anchors,
        welcomes,
        classes,
      }),
    );
  }

  /** Signs a relay challenge with the endpoint key; while joining, presents the ticket's invitation id. */
  async relayAuth(
    nonce: Uint8Array,
  ): Promise<{ topic: Uint8Array; endpoint: Uint8Array; sig: Uint8Array; invite?: Uint8Array }> {
    if (!this.#group) throw new Error('crypto: no group');
    const id = this.#id();
    const payload = relayAuthPayload(nonce, this.#group.topic, id.endpointPublic);
    const sig = await webSigner({ keys: id.endpoint, publicKey: id.endpointPublic }).sign(payload);
    const invite = this.#join.invite;
    return { topic: this.#group.topic, endpoint: id.endpointPublic, sig, ...(invite ? { invite } : {}) };
  }

  /**
   * Signs an admission list for the relay (core/admission.ts) naming `endpoints`
   * and `admins`, plus every invitation of ours still open, under our signing key.
   */
  async signAdmission(
    admins: readonly string[],
    endpoints: readonly string[],
    version: number,
    stewards?: readonly string[],
  ): Promise<Uint8Array> {
    if (!this.#group) throw new Error('crypto: no group');
    const id = this.#id();
    const now = this.#clock.now();
    const open = (await this.#db.openInvitations(now)).filter(served);
    const keys = (hexes: readonly string[]) =>
      [...new Set(hexes)].flatMap((h) => {
        const k = fromHex(h);
        return k && k.length === 32 ? [k] : [];
      });
    const body = admissionBody({
      v: 1,
      topic: this.#group.topic,
      version,
      signer: id.signingPublic,
      admins: keys(admins),
      endpoints: keys(endpoints),
      invites: open.map((i) => ({ id: inviteId(fromHex(i.inv)!), by: id.endpointPublic, exp: i.expiresAt })),
      ...(stewards ? { stewards: keys(stewards) } : {}),
    });
    return encodeAdmission(body, await this.sign(admissionSigningPayload(body)));
  }

  #seal(endpoint: Uint8Array, kid: Uint8Array, message: PeerMessage): Promise<Uint8Array> {
    if (!this.#group) throw new Error('crypto: no group');
    return this.#group.channel.seal({ endpoint, kid }, encodePeerMessage(message));
  }

  /** What this machine's frames carried and what padding made of it, since it started (`npm run bench -- metadata`). */
  frameTraffic(): FrameTraffic {
    return this.#group?.channel.sent ?? { frames: 0, messageBytes: 0, paddedBytes: 0 };
  }

  /** Seals a delivery message (events, ack, refusal) to one peer. */
  sealMessage(to: PeerAddress, message: Exclude<PeerMessage, { t: 'join-accept' }>): Promise<Uint8Array> {
    const endpoint = fromHex(to.endpoint);
    const kid = fromHex(to.frame);
    if (!endpoint || endpoint.length !== 32 || !kid || kid.length !== 32) throw new Error('crypto: bad peer address');
    return this.#seal(endpoint, kid, message);
  }

  /**
   * Opens a frame the relay delivered from `from`, whose bound frame key (from
   * the keyring, hex) is `bound` when the sender is a known machine. Frames from
   * unknown endpoints are opened only while this machine has an invitation out
   * or a join under way, and then only pairing messages pass. A join-accept
   * ends the pending join here; its MLS bundles go on to the MLS worker.
   */
  async openMessage(
    from: string,
    body: Uint8Array,
    bound: string | undefined,
  ): Promise<Result<OpenedMessage, OpenError>> {
    const sender = fromHex(from);
    if (!this.#group || !sender || sender.length !== 32) return err({ type: 'UnknownEndpoint' });
    const unbound = bound === undefined;
    const binding = await this.#bindingOf(sender, bound);
    const opened = await this.#group.channel.open(body, sender, () => binding);
    if (!opened.ok) return opened;
    const { header } = opened.value;
    const message = decodePeerMessage(opened.value.message);
    if (!message.ok) return message;
    const m = message.value;
    if (unbound && !isPairingMessage(m)) return err({ type: 'UnknownEndpoint' });
    const age = this.#clock.now() - header.ts;
    if (isPairingMessage(m) && age > MAX_REQUEST_AGE_MS) return err({ type: 'StaleRequest', ageMs: age });
    const frame = toHex(header.kid);
    const seen = { frame, rid: toHex(header.rid), ts: header.ts };
    if (m.t !== 'join-accept') return ok({ message: m, ...seen });
    const accepted = await this.#join.accept(sender, m);
    return accepted.ok ? ok({ message: accepted.value, ...seen }) : accepted;
  }

  /**
   * Keeps a frame's request id across restarts, once what the frame did is
   * durable. Until then only this session's memory refuses a replay of it, so
   * a frame whose handling a closed page cut short is taken when the relay (or
   * the inbox) delivers it again — at-least-once delivery, idempotent apply.
   */
  async remember(rid: string, ts: number): Promise<void> {
    await this.#db.putReplays([{ rid, ts }]);
  }

  /** Opens frames in order: a batch the relay delivered together, in one call from the UI thread. */
  async openMessages(
    frames: readonly { readonly from: string; readonly body: Uint8Array; readonly bound: string | undefined }[],
  ): Promise<Result<OpenedMessage, OpenError>[]> {
    const opened: Result<OpenedMessage, OpenError>[] = [];
    for (const f of frames) opened.push(await this.openMessage(f.from, f.body, f.bound));
    return opened;
  }

  /** Records the request ids of frames whose effects are durable (`remember`, for a batch). */
  async rememberAll(seen: readonly { readonly rid: string; readonly ts: number }[]): Promise<void> {
    await this.#db.putReplays(seen.map((s) => ({ rid: s.rid, ts: s.ts })));
  }

  /** Who may have sent a frame from `sender`: its keyring binding, the inviter named by our ticket, or a joiner. */
  async #bindingOf(sender: Uint8Array, bound: string | undefined): Promise<SenderBinding> {
    const kid = bound === undefined ? undefined : fromHex(bound);
    if (kid && kid.length === 32) return { kid };
    const inviter = this.#join.inviterKey(sender);
    if (inviter) return { kid: inviter };
    // While any invitation of ours is served (closed ones too, so their joiners hear why), a
    // joiner's frame may be opened: only join requests and answers are accepted from it.
    const now = this.#clock.now();
    const open = (await this.#db.openInvitations(now)).filter(served).length;
    return open > 0 ? 'unbound' : undefined;
  }

  async sign(message: Uint8Array): Promise<Uint8Array> {
    const id = this.#id();
    return webSigner({ keys: id.signing, publicKey: id.signingPublic }).sign(message);
  }

  verify(publicKey: Uint8Array, message: Uint8Array, signature: Uint8Array): Promise<boolean> {
    return this.#verifier.verify(publicKey, message, signature);
  }

  blake3(data: Uint8Array): Uint8Array {
    return blake3(data);
  }

  sealEvent(domain: DomainName, signedEvent: Uint8Array, lane?: SealLane, gen?: number): Promise<SealedEvent> {
    return this.#envelopes.seal(domain, signedEvent, lane, gen);
  }

  /** The newest generation of a domain this machine holds (what a write's chain is named by). */
  domainGeneration(domain: DomainName): Promise<number | undefined> {
    return this.#envelopes.generation(domain);
  }

  /**
   * Tries every key this machine holds — each generation of each domain — on
   * each envelope, whatever domain it names: the check that holding sealed
   * rows of a domain is not reading them. `NoKeyOpens` is the expected answer
   * for a domain this machine is not a member of.
   */
  tryEveryKey(
    envelopes: readonly Uint8Array[],
  ): Result<
    { readonly opened: number; readonly keys: number },
    { readonly type: 'NoKeyOpens'; readonly envelopes: number; readonly keys: number }
  > {
    const keys = this.#domains.list();
    let opened = 0;
    for (const bytes of envelopes) {
      const sealed = decodeSealed(bytes);
      if (!sealed.ok) continue;
      if (keys.some((k) => openSealed(sealed.value, () => k.key).ok)) opened++;
    }
    if (opened === 0) return err({ type: 'NoKeyOpens', envelopes: envelopes.length, keys: keys.length });
    return ok({ opened, keys: keys.length });
  }

  openEvent(sealed: SealedEvent): Promise<Result<Uint8Array, SealError>> {
    return this.#envelopes.open(sealed);
  }

  // ---- recovery (crypto-recovery.ts) ------------------------------------------------------
  readonly makeKit: RecoveryCrypto['makeKit'] = (meta) => this.#recovery.makeKit(meta);
  readonly importKit: RecoveryCrypto['importKit'] = (file, code) => this.#recovery.importKit(file, code);
  readonly sealCheckpoint: RecoveryCrypto['sealCheckpoint'] = (e, r) => this.#recovery.sealCheckpoint(e, r);
  readonly chooseRoot: RecoveryCrypto['chooseRoot'] = (roots, aside) => this.#recovery.chooseRoot(roots, aside);
  readonly adoptKeys: RecoveryCrypto['adoptKeys'] = (id) => this.#recovery.adoptKeys(id);
  readonly openCheckpoint: RecoveryCrypto['openCheckpoint'] = (id, b) => this.#recovery.openCheckpoint(id, b);
}
