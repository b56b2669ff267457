/**
 * One machine's membership of one domain (DESIGN §4, §6; seed 003 "Domains",
 * "Adding a machine", "Revoking a machine", "Going offline, and coming back").
 *
 * A domain is an MLS group whose members are exactly the machines that may
 * decrypt its data. Its data keys are KEK generations (core/mls/kek.ts), kept
 * here and handed on in every membership change:
 *   - add, history `forward`: the joiner gets the current generation only;
 *   - add, history `full`: every generation, in the signed package;
 *   - add, history `fresh`: a new generation is minted (the joiner must not
 *     read what the current one wraps); everyone gets only the new one;
 *   - remove: MLS Remove + Commit, and a new generation minted, sealed in the
 *     new epoch, so only the remaining members can open it;
 *   - rotate: an empty Commit and a new generation minted, for every member.
 * Routine epochs (an add with `forward` or `full`) mint no generation — except a
 * `forward` add while the current generation carries rewrapped history (minted by
 * a rotation or removal, core/mls/entitlement.ts): the joiner gets a new one.
 * Every package carries the domain's entitlement table and the generations that
 * carry history, so every member (and every admin) knows them.
 *
 * Every change is one bundle (core/mls/bundle.ts) for the blind sequencer: the
 * staged MLS state and any minted generation are adopted only once it is
 * accepted; a loser is handed the winner, processes it (`receive`), and may
 * retry on the new epoch. Only an admin's signed package hands out keys; a
 * commit from a machine that is not an admin still moves the MLS group on, but
 * its keys are refused (`KekRefused`). Which machines store a domain's bytes is
 * tracked elsewhere (placement), never derived from this membership.
 */
import { bytesEqual, toHex } from '../bytes.js';
import type { Random, Signer } from '../ports.js';
import { err, ok, type Result } from '../result.js';
import { commitAuthenticatedData, decodeBundle, encodeBundle, isExternalCommit } from './bundle.js';
import { readFraming } from './framing.js';
import { openKekPackage, signKekPackage, type Generation } from './kek.js';
import { bindLeaf, readLeafBinding } from './leaf-binding.js';
import type { KeyPackagePair, MlsFailure, MlsProvider, SignatureKeyPair } from './provider.js';
import type { SequencerRejection } from './sequencer.js';
import { mintsOnAdd, type Entitlement, type History } from './entitlement.js';

export type { Entitlement, History } from './entitlement.js';

/** The sequencer could not be asked (no relay session): nothing was staged for good; try again later. */
export type SequencerUnavailable = { readonly type: 'SequencerUnavailable'; readonly reason: string };

export type DomainError =
  | MlsFailure
  | SequencerRejection
  | SequencerUnavailable
  | { readonly type: 'KekRefused'; readonly reason: string }
  | { readonly type: 'NotAMember'; readonly reason: string }
  | { readonly type: 'NotAdmin'; readonly reason: string };

export type DomainDeps = {
  readonly provider: MlsProvider;
  /** This machine's signing key (non-extractable in browsers); signs leaf bindings and KEK packages. */
  readonly machine: Signer;
  /** This machine's relay endpoint id: commits name it for the sequencer. */
  readonly endpoint: Uint8Array;
  readonly random: Random;
  readonly isAdmin: (machine: Uint8Array) => Promise<boolean>;
  /** Posts a bundle to the blind sequencer; resolves with its verdict. */
  readonly sequence: (bundle: Uint8Array) => Promise<Result<unknown, SequencerRejection | SequencerUnavailable>>;
};

/**
 * A machine's offer to join: its key package and the private half it keeps
 * until the Welcome, and the leaf's signature key and identity, which it keeps
 * after joining so it can resync that same leaf by external commit.
 */
export type JoinOffer = {
  readonly keyPackage: Uint8Array;
  readonly pair: KeyPackagePair;
  readonly key: SignatureKeyPair;
  readonly identity: Uint8Array;
};

/**
 * Everything a member holds for one domain, for keeping at rest: it includes
 * the leaf's private keys (in `state` or `offer`) and the generation keys, so
 * the caller stores it only encrypted (runtime/mls-service.ts wraps it under
 * the machine's non-extractable wrapping key).
 */
export type DomainSnapshot = {
  readonly domain: string;
  readonly groupId: Uint8Array;
  readonly state: Uint8Array | undefined;
  readonly offer: JoinOffer | undefined;
  readonly gens: readonly Generation[];
  readonly entitlements: readonly Entitlement[];
  /** Generations minted by a rotation or a removal: rewraps of older objects may be under them. */
  readonly historyGens?: readonly number[] | undefined;
  readonly removed: boolean;
};

export async function offerToJoin(deps: Pick<DomainDeps, 'provider' | 'machine'>): Promise<JoinOffer> {
  const key = await deps.provider.signatureKey();
  const identity = await bindLeaf(deps.machine, key.publicKey);
  const pair = await deps.provider.keyPackage(identity, key);
  return { keyPackage: pair.publicPackage, pair, key, identity };
}

export class DomainMember {
  readonly domain: string;
  readonly groupId: Uint8Array;
  readonly #deps: DomainDeps;
  #state: Uint8Array | undefined;
  #offer: JoinOffer | undefined;
  readonly #gens = new Map<number, Uint8Array>();
  readonly #entitlements = new Map<string, Entitlement>();
  readonly #historyGens = new Set<number>();
  #removed = false;

  private constructor(deps: DomainDeps, domain: string, groupId: Uint8Array) {
    this.#deps = deps;
    this.domain = domain;
    this.groupId = groupId;
  }

  /** Founds a domain: a one-member group at epoch 0 and generation 1. */
  static async found(
    deps: DomainDeps,
    domain: string,
    groupId: Uint8Array,
  ): Promise<Result<DomainMember, DomainError>> {
    if (!(await deps.isAdmin(deps.machine.publicKey)))
      return err({ type: 'NotAdmin', reason: 'domain: only an admin founds a domain' });
    const member = new DomainMember(deps, domain, groupId);
    const offer = await offerToJoin(deps);
    const state = await deps.provider.createGroup(groupId, offer.pair);
    if (!state.ok) return state;
    member.#state = state.value;
    member.#offer = offer;
    member.#gens.set(1, deps.random.bytes(32));
    member.#entitlements.set(toHex(deps.machine.publicKey), {
      machine: toHex(deps.machine.publicKey),
      history: 'full',
      fromGen: 1,
    });
    return ok(member);
  }

  /** A machine waiting to be added: it joins from the Welcome of the bundle that adds it. */
  static awaiting(deps: DomainDeps, domain: string, groupId: Uint8Array, offer: JoinOffer): DomainMember {
    const member = new DomainMember(deps, domain, groupId);
    member.#offer = offer;
    return member;
  }

  /** A member as it was kept (`snapshot`). */
  static restore(deps: DomainDeps, snapshot: DomainSnapshot): DomainMember {
    const member = new DomainMember(deps, snapshot.domain, snapshot.groupId);
    member.#state = snapshot.state;
    member.#offer = snapshot.offer;
    for (const g of snapshot.gens) member.#gens.set(g.gen, g.key);
    for (const e of snapshot.entitlements) member.#entitlements.set(e.machine, e);
    for (const g of snapshot.historyGens ?? []) member.#historyGens.add(g);
    member.#removed = snapshot.removed;
    return member;
  }

  snapshot(): DomainSnapshot {
    return {
      domain: this.domain,
      groupId: this.groupId,
      state: this.#state,
      offer: this.#offer,
      gens: this.generations(),
      entitlements: this.entitlements(),
      historyGens: this.historyGens(),
      removed: this.#removed,
    };
  }

  /** Waiting for a Welcome: an offer is out and no group state yet. */
  get awaitingWelcome(): boolean {
    return this.#state === undefined && this.#offer !== undefined;
  }

  get isMember(): boolean {
    return this.#state !== undefined && !this.#removed;
  }

  get removed(): boolean {
    return this.#removed;
  }

  get epoch(): bigint | undefined {
    const s = this.#state && this.#deps.provider.summary(this.#state);
    return s?.ok ? s.value.epoch : undefined;
  }

  /** The machines (signing keys, hex) in the group, from their leaf bindings. */
  members(): string[] {
    return this.#state ? this.#membersOf(this.#state) : [];
  }

  #membersOf(state: Uint8Array): string[] {
    const s = this.#deps.provider.summary(state);
    if (!s.ok) return [];
    return s.value.members.flatMap((id) => {
      const binding = readLeafBinding(id);
      return binding ? [toHex(binding.machine)] : [];
    });
  }

  generations(): Generation[] {
    return [...this.#gens].map(([gen, key]) => ({ gen, key })).sort((a, b) => a.gen - b.gen);
  }

  current(): Generation | undefined {
    return this.generations().at(-1);
  }

  entitlements(): Entitlement[] {
    return [...this.#entitlements.values()];
  }

  /** Generations minted by a rotation or a removal, ascending. */
  historyGens(): number[] {
    return [...this.#historyGens].sort((a, b) => a - b);
  }

  /**
   * Adds machines (by their key packages) with one history policy, removes
   * machines (signing keys), or rotates (`rotate`: a new generation for every
   * member, nobody added or removed), as one sequenced bundle; resolves with the
   * bundle the sequencer accepted (its Welcome is what the added machines need).
   */
  async change(change: {
    readonly add?: readonly Uint8Array[];
    readonly history?: History;
    readonly remove?: readonly Uint8Array[];
    readonly rotate?: boolean;
  }): Promise<Result<Uint8Array, DomainError>> {
    const { provider, machine, random } = this.#deps;
    const state = this.#state;
    if (!state || this.#removed) return err({ type: 'NotAMember', reason: 'domain: not a member of this group' });
    if (!(await this.#deps.isAdmin(machine.publicKey)))
      return err({ type: 'NotAdmin', reason: 'domain: only an admin changes membership' });
    const add = change.add ?? [];
    const history = change.history ?? 'forward';
    const removeIds = this.#identitiesOf(state, change.remove ?? []);
    if (!removeIds.ok) return removeIds;
    const staged = await provider.commit(state, {
      add,
      remove: removeIds.value,
      authenticatedData: commitAuthenticatedData(this.#deps.endpoint),
    });
    if (!staged.ok) return staged;
    const current = this.current();
    if (!current) throw new Error('domain: a member without a generation');
    const carriesHistory = removeIds.value.length > 0 || change.rotate === true;
    const mint = carriesHistory || (add.length > 0 && mintsOnAdd(history, current.gen, this.#historyGens));
    const minted = mint ? { gen: current.gen + 1, key: random.bytes(32) } : undefined;
    const gens = minted ? [minted] : history === 'full' ? this.generations() : [current];
    const summary = provider.summary(staged.value.state);
    if (!summary.ok) return summary;
    const after = this.#tablesAfter(
      staged.value.state,
      add.length > 0 ? { history, fromGen: gens[0]!.gen } : undefined,
    );
    const historyGens = minted && carriesHistory ? [...this.historyGens(), minted.gen] : this.historyGens();
    const pkg = await signKekPackage(
      {
        domain: this.domain,
        group: this.groupId,
        epoch: Number(summary.value.epoch),
        gens,
        entitlements: after,
        historyGens,
      },
      machine,
    );
    const sealed = await provider.encrypt(staged.value.state, pkg);
    if (!sealed.ok) return sealed;
    const bundle = encodeBundle({
      commit: staged.value.commit,
      welcome: staged.value.welcome,
      kek: sealed.value.message,
    });
    const verdict = await this.#deps.sequence(bundle);
    if (!verdict.ok) return verdict;
    // Accepted: only now does this machine move to the new epoch.
    this.#state = sealed.value.state;
    if (minted) this.#gens.set(minted.gen, minted.key);
    this.#adoptTables(after, historyGens);
    return ok(bundle);
  }

  #identitiesOf(state: Uint8Array, machines: readonly Uint8Array[]): Result<Uint8Array[], DomainError> {
    const s = this.#deps.provider.summary(state);
    if (!s.ok) return s;
    const out: Uint8Array[] = [];
    for (const m of machines) {
      const id = s.value.members.find((identity) => {
        const b = readLeafBinding(identity);
        return b !== undefined && bytesEqual(b.machine, m);
      });
      if (!id) return err({ type: 'NotAMember', reason: `domain: ${toHex(m).slice(0, 8)} is not in the group` });
      out.push(id);
    }
    return ok(out);
  }

  /**
   * The entitlement table once `state` is the group's: its members as this machine knows them,
   * and the machines this commit adds with `added`. Members that left are dropped; a member
   * this machine has no entry for keeps none (it is entitled to nothing older, fail closed).
   */
  #tablesAfter(
    state: Uint8Array,
    added: { readonly history: History; readonly fromGen: number } | undefined,
  ): Entitlement[] {
    const before = new Set(this.members());
    return this.#membersOf(state).flatMap((machine) => {
      const known = this.#entitlements.get(machine);
      if (known) return [known];
      return added && !before.has(machine) ? [{ machine, ...added }] : [];
    });
  }

  #adoptTables(entitlements: readonly Entitlement[], historyGens: readonly number[]): void {
    this.#entitlements.clear();
    for (const e of entitlements) this.#entitlements.set(e.machine, e);
    for (const g of historyGens) this.#historyGens.add(g);
  }

  /**
   * Takes in a bundle the sequencer accepted (pushed by the relay, fetched on
   * catch-up, or handed to a loser): joins from its Welcome if this machine was
   * waiting to be added, else processes its commit; then opens its KEK package.
   * A bundle of an epoch already behind this machine is a no-op.
   */
  async receive(bytes: Uint8Array): Promise<Result<'applied' | 'duplicate' | 'removed', DomainError>> {
    const { provider } = this.#deps;
    const bundle = decodeBundle(bytes);
    if (!bundle.ok) return err({ type: 'MlsRejected', reason: bundle.error.reason });
    const framing = readFraming(bundle.value.commit);
    if (!framing.ok || !('epoch' in framing.value) || !bytesEqual(framing.value.groupId, this.groupId)) {
      return err({ type: 'MlsRejected', reason: 'domain: not a commit of this group' });
    }
    let state: Uint8Array;
    if (this.#state === undefined) {
      if (!this.#offer || !bundle.value.welcome) return ok('duplicate');
      const joined = await provider.join(bundle.value.welcome, this.#offer.pair);
      if (!joined.ok) return ok('duplicate'); // a Welcome for others
      state = joined.value;
    } else {
      if (this.#removed) return ok('removed');
      const epoch = this.epoch ?? 0n;
      if (framing.value.epoch < epoch) return ok('duplicate');
      const processed = await provider.process(this.#state, bundle.value.commit);
      if (!processed.ok) return processed;
      // An external commit may only bring a member's own leaf back (a resync): one that
      // brings in anyone else would let a machine that holds a GroupInfo read the domain.
      if (isExternalCommit(framing.value) && !this.#sameMembers(this.#state, processed.value.state)) {
        return err({
          type: 'MlsRejected',
          reason: 'domain: an external commit may only rejoin a member already in the group',
        });
      }
      state = processed.value.state;
      if (!(await this.#stillIn(state))) {
        this.#removed = true;
        this.#state = state;
        return ok('removed');
      }
    }
    this.#state = state;
    if (!bundle.value.kek) return ok('applied');
    const opened = await provider.process(state, bundle.value.kek);
    if (!opened.ok || opened.value.kind !== 'application') {
      return err({ type: 'KekRefused', reason: 'domain: the key message does not open in the new epoch' });
    }
    this.#state = opened.value.state;
    return this.#takeKeys(opened.value.message);
  }

  /**
   * Recovery for a member that cannot use an accepted commit (its state is
   * behind or damaged): rejoins from a current member's GroupInfo by external
   * commit, replacing its own leaf (same signature key), through the sequencer.
   * No key travels this way: generations come only in admins' KEK packages.
   */
  async resync(groupInfo: Uint8Array): Promise<Result<Uint8Array, DomainError>> {
    const { provider } = this.#deps;
    const leaf = this.#offer;
    if (!leaf || this.#removed) return err({ type: 'NotAMember', reason: 'domain: no leaf of ours to resync' });
    const own = await provider.keyPackage(leaf.identity, leaf.key);
    const staged = await provider.rejoin(groupInfo, own, commitAuthenticatedData(this.#deps.endpoint));
    if (!staged.ok) return staged;
    const summary = provider.summary(staged.value.state);
    if (!summary.ok || !bytesEqual(summary.value.groupId, this.groupId)) {
      return err({ type: 'MlsRejected', reason: 'domain: the GroupInfo is for another group' });
    }
    const bundle = encodeBundle({ commit: staged.value.commit, welcome: undefined, kek: undefined });
    const verdict = await this.#deps.sequence(bundle);
    if (!verdict.ok) return verdict;
    this.#state = staged.value.state;
    this.#offer = { ...leaf, pair: own, keyPackage: own.publicPackage };
    return ok(bundle);
  }

  /** Whether every member of `after` was a member (by identity) in `before`. */
  #sameMembers(before: Uint8Array, after: Uint8Array): boolean {
    const { provider } = this.#deps;
    const [was, now] = [provider.summary(before), provider.summary(after)];
    if (!was.ok || !now.ok) return false;
    const known = new Set(was.value.members.map(toHex));
    return now.value.members.every((id) => known.has(toHex(id)));
  }

  async #stillIn(state: Uint8Array): Promise<boolean> {
    const s = this.#deps.provider.summary(state);
    return s.ok && s.value.members.some((id) => bytesEqual(id, s.value.self));
  }

  async #takeKeys(pkgBytes: Uint8Array): Promise<Result<'applied', DomainError>> {
    const epoch = this.epoch;
    if (epoch === undefined) return err({ type: 'KekRefused', reason: 'domain: no state' });
    const pkg = openKekPackage(pkgBytes, { domain: this.domain, group: this.groupId, epoch: Number(epoch) });
    if (!pkg.ok) return err({ type: 'KekRefused', reason: pkg.error.reason });
    if (!(await this.#deps.isAdmin(pkg.value.by))) {
      return err({ type: 'KekRefused', reason: 'domain: the key package is not signed by an admin' });
    }
    for (const g of pkg.value.gens) if (!this.#gens.has(g.gen)) this.#gens.set(g.gen, g.key);
    if (pkg.value.entitlements) this.#adoptTables(pkg.value.entitlements, pkg.value.historyGens ?? []);
    return ok('applied');
  }
}
