/**
 * The crypto worker's part of recovery (core/recovery): it is the one holder of the group
 * secret and the domain keys, so it makes recovery kits, seals checkpoints with the key
 * history and signs their roots, and — on a machine restoring from a kit — takes the kit's
 * identity and keys, opens roots with the kit's frame key and opens the checkpoint a root
 * names. A checkpoint's secret never leaves this worker; the envelopes it carries do (they
 * are sealed). CryptoService exposes these methods; nothing here logs a key.
 */
import { fromHex, toHex } from '../core/bytes.js';
import type { DomainKeyring } from '../core/domain-keys.js';
import { blake3 } from '../core/hash.js';
import type { Clock, Verifier } from '../core/ports.js';
import {
  makeRoot,
  openCheckpoint,
  openRoot,
  sealCheckpoint,
  type CheckpointError,
} from '../core/recovery/checkpoint.js';
import { newRecoveryCode } from '../core/recovery/code.js';
import { openKit, sealKit, type KitError, type KitGeneration, type RecoveryKit } from '../core/recovery/kit.js';
import { err, ok, type Result } from '../core/result.js';
import { wrapGenerations } from '../storage/domain-generations.js';
import type { IdentityRecord, KeyStore } from '../storage/key-store.js';
import { drawKitMachine, hpkeRootKeys, kitIdentity } from './recovery-keys.js';
import { noRootReason } from './recovery-status.js';
import { webRandom, webSigner } from './webcrypto.js';

/** A kit as its admin hands it on: the sealed file, the code (shown once), and the machine it enrols. */
export type MadeKit = {
  readonly file: Uint8Array;
  readonly code: string;
  readonly machine: { readonly signer: string; readonly endpoint: string; readonly frame: string };
};

/** What a restoring machine learned from its kit. */
export type ImportedKit = {
  readonly relay: string;
  readonly relayKey: string;
  readonly anchors: readonly string[];
  readonly root: string | undefined;
  readonly generations: number;
  readonly madeAt: number;
};

/** A sealed checkpoint and its signed root, ready for the blind store. */
export type SealedRecovery = {
  readonly checkpoint: Uint8Array;
  readonly checkpointId: string;
  readonly root: Uint8Array;
  readonly rootId: string;
};

/** The root a restoring machine chose: the newest one for its kit among those offered. */
export type ChosenRoot = {
  /** Its place among the roots `chooseRoot` was given. */
  readonly index: number;
  readonly checkpointId: string;
  readonly by: string;
  readonly at: number;
  readonly entries: number;
  readonly bytes: number;
};

export type RecoveryKeyError =
  | KitError
  | CheckpointError
  | { readonly type: 'AlreadyInMesh' }
  | {
      readonly type: 'NoRoot';
      readonly reason: string;
      /** How many roots were refused, by the refusal's type. */
      readonly refused?: Readonly<Record<string, number>>;
    };

/** The key store's name of the group secret (crypto-service.ts). */
export const GROUP_SECRET = 'group';

export type RecoveryCryptoDeps = {
  db(): KeyStore;
  clock(): Clock;
  readonly verifier: Verifier;
  readonly domains: DomainKeyring;
  identity(): IdentityRecord;
  group(): { readonly secret: Uint8Array; readonly topic: Uint8Array } | undefined;
  /** Stores and takes up a group secret (a restored machine's). */
  joinGroup(secret: Uint8Array): Promise<void>;
  /** Takes up an identity the key store now holds. */
  setIdentity(identity: IdentityRecord): void;
};

export class RecoveryCrypto {
  readonly #d: RecoveryCryptoDeps;
  /** The secret of the checkpoint the chosen root names, kept here until it is opened. */
  #chosen: { readonly id: string; readonly secret: Uint8Array } | undefined;
  /** The key history of the checkpoint opened last, kept apart until its root's signer proves an admin. */
  #opened: { readonly id: string; readonly gens: readonly KitGeneration[] } | undefined;

  constructor(deps: RecoveryCryptoDeps) {
    this.#d = deps;
  }

  #generations() {
    return this.#d.domains.list().map(({ domain, gen, key }) => ({ domain, gen, key }));
  }

  /**
   * A new recovery kit: a machine drawn for it, the group secret, the relay, the anchors and
   * every generation held here, sealed under a fresh recovery code. The caller enrols the
   * machine in the keyring (keyring.recovery) and shows the code once.
   */
  async makeKit(meta: {
    readonly relay: string;
    readonly relayKey: string;
    readonly anchors: readonly string[];
    readonly root?: string;
  }): Promise<Result<MadeKit, { readonly type: 'NotReady'; readonly reason: string }>> {
    const group = this.#d.group();
    const relayKey = fromHex(meta.relayKey);
    if (!group || !relayKey) return err({ type: 'NotReady', reason: 'no mesh, or the relay is not pinned yet' });
    const machine = await drawKitMachine();
    const kit: RecoveryKit = {
      group: group.secret,
      relay: meta.relay,
      relayKey,
      anchors: meta.anchors.flatMap((a) => fromHex(a) ?? []),
      at: this.#d.clock().now(),
      machine,
      gens: this.#generations(),
      root: meta.root === undefined ? undefined : fromHex(meta.root),
    };
    const code = newRecoveryCode(webRandom);
    const file = await sealKit(kit, code.bytes, webRandom);
    code.bytes.fill(0);
    machine.signing.fill(0);
    machine.endpoint.fill(0);
    machine.frame.fill(0);
    return ok({
      file,
      code: code.text,
      machine: {
        signer: toHex(machine.signingPub),
        endpoint: toHex(machine.endpointPub),
        frame: toHex(machine.framePub),
      },
    });
  }

  /**
   * Takes a kit into a fresh machine: its identity becomes the kit machine's, and it keeps
   * the group secret and the key history, wrapped under its machine key. Refused on a
   * machine that already belongs to a mesh; nothing is kept unless the code opens the kit.
   */
  async importKit(file: Uint8Array, code: string): Promise<Result<ImportedKit, RecoveryKeyError>> {
    if (this.#d.group()) return err({ type: 'AlreadyInMesh' });
    const opened = await openKit(file, code);
    if (!opened.ok) return opened;
    const kit = opened.value;
    const identity = await this.#d.db().replaceIdentity(kitIdentity(kit.machine), this.#d.clock().now(), GROUP_SECRET);
    if (!identity) return err({ type: 'AlreadyInMesh' });
    this.#d.setIdentity(identity);
    await this.#d.db().putSecrets(await wrapGenerations(identity.wrapping, kit.gens, () => false));
    for (const g of kit.gens) this.#d.domains.add(g.domain, g.gen, g.key);
    await this.#d.joinGroup(kit.group);
    return ok({
      relay: kit.relay,
      relayKey: toHex(kit.relayKey),
      anchors: kit.anchors.map(toHex),
      root: kit.root && toHex(kit.root),
      generations: kit.gens.length,
      madeAt: kit.at,
    });
  }

  /**
   * Seals a checkpoint of `entries` (public-lane envelopes) with the key history held here,
   * and signs its root for the kits whose frame keys are `recipients`.
   */
  async sealCheckpoint(
    entries: readonly Uint8Array[],
    recipients: readonly string[],
  ): Promise<Result<SealedRecovery, RecoveryKeyError>> {
    const group = this.#d.group();
    if (!group) return err({ type: 'NoRoot', reason: 'no mesh' });
    const id = this.#d.identity();
    const at = this.#d.clock().now();
    const sealed = sealCheckpoint(
      { topic: group.topic, at, by: id.signingPublic, gens: this.#generations(), entries },
      webRandom,
    );
    if (!sealed.ok) return sealed;
    const root = await makeRoot(
      {
        topic: group.topic,
        checkpoint: sealed.value.id,
        bytes: sealed.value.bytes.length,
        entries: entries.length,
        at,
        by: id.signingPublic,
      },
      sealed.value.secret,
      recipients.flatMap((r) => fromHex(r) ?? []),
      hpkeRootKeys(),
      webSigner({ keys: id.signing, publicKey: id.signingPublic }),
    );
    sealed.value.secret.fill(0);
    if (!root.ok) return root;
    return ok({
      checkpoint: sealed.value.bytes,
      checkpointId: toHex(sealed.value.id),
      root: root.value,
      rootId: toHex(blake3(root.value)),
    });
  }

  /**
   * Of the roots found in the blind store, the newest (then the largest) this machine's kit
   * opens; the checkpoint secret it carries stays here. `NoRoot` says why none would do. Called
   * page by page (mesh-recovery.ts), with the best root so far first among the next page's.
   */
  async chooseRoot(
    roots: readonly Uint8Array[],
    setAside: readonly string[] = [],
  ): Promise<Result<ChosenRoot, RecoveryKeyError>> {
    const group = this.#d.group();
    const id = this.#d.identity();
    if (!group || !id.frame || !id.framePublic) return err({ type: 'NoRoot', reason: 'no mesh on this machine' });
    const keys = hpkeRootKeys({ keys: id.frame, publicKey: id.framePublic });
    const context = { topic: group.topic, kid: id.framePublic };
    let best: { root: ChosenRoot; secret: Uint8Array } | undefined;
    const refused = new Map<string, number>();
    for (const [index, bytes] of roots.entries()) {
      const opened = await openRoot(bytes, context, keys, this.#d.verifier);
      if (!opened.ok) {
        refused.set(opened.error.type, (refused.get(opened.error.type) ?? 0) + 1);
        continue;
      }
      const { root, secret } = opened.value;
      if (setAside.includes(toHex(root.checkpoint))) continue;
      const chosen = {
        index,
        checkpointId: toHex(root.checkpoint),
        by: toHex(root.by),
        at: root.at,
        entries: root.entries,
        bytes: root.bytes,
      };
      if (!best || root.at > best.root.at || (root.at === best.root.at && root.entries > best.root.entries)) {
        best = { root: chosen, secret };
      }
    }
    if (!best) return err({ type: 'NoRoot', ...noRootReason(roots.length, Object.fromEntries(refused)) });
    this.#chosen = { id: best.root.checkpointId, secret: best.secret };
    return ok(best.root);
  }

  /**
   * Opens the checkpoint the chosen root names (its bytes already verified against its id)
   * and returns its envelopes for the replica. Its key history is kept apart (`adoptKeys`):
   * any member could sign a root, and only an admin's checkpoint may add keys.
   */
  async openCheckpoint(
    id: string,
    bytes: Uint8Array,
  ): Promise<Result<{ readonly entries: Uint8Array[]; readonly generations: number }, RecoveryKeyError>> {
    const group = this.#d.group();
    if (!group || this.#chosen?.id !== id) return err({ type: 'NoRoot', reason: 'no root names this checkpoint' });
    const opened = openCheckpoint(bytes, this.#chosen.secret, group.topic);
    if (!opened.ok) return opened;
    this.#opened = { id, gens: opened.value.gens };
    return ok({ entries: [...opened.value.entries], generations: opened.value.gens.length });
  }

  /** Keeps the generations of checkpoint `id` that this machine lacks (its root's signer is an admin); how many. */
  async adoptKeys(id: string): Promise<number> {
    if (this.#opened?.id !== id) return 0;
    const fresh = this.#opened.gens.filter((g) => this.#d.domains.get(g.domain, g.gen) === undefined);
    const wrapping = this.#d.identity().wrapping;
    await this.#d.db().putSecrets(await wrapGenerations(wrapping, fresh, () => false));
    for (const g of fresh) this.#d.domains.add(g.domain, g.gen, g.key);
    this.#opened = undefined;
    return fresh.length;
  }
}
