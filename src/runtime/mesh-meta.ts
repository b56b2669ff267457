/**
 * What a machine keeps about its own membership, outside every table: whether it is
 * joining or a member, its relay and the relay's pinned key, the admins it trusts before
 * any control record says so, and its local privacy choices. One record, read at start,
 * written through `MeshMetaKeeper.save` (which tells whoever depends on it).
 */
import type { LocalClassChoices, PrivacyClass } from '../core/sync-manifest.js';
import type { MachineStore } from './machine-store.js';
import type { PeerAddress } from './crypto-service.js';
import type { CheckpointMark, RecoveryStatus } from './recovery-status.js';

export type MeshMeta = {
  /** `recovering`: restoring from a recovery kit until the three components are there (mesh-recovery.ts). */
  readonly status: 'joining' | 'member' | 'recovering';
  readonly relay: string;
  readonly name: string;
  /** Signers this machine trusts as admins without a control record: the founder and its inviter. */
  readonly anchors: readonly string[];
  /** The inviter's endpoint and frame key, known from the ticket before the keyring arrives. */
  readonly anchorPeers?: readonly PeerAddress[];
  /** The relay's Ed25519 key (hex) this machine pinned: from the ticket, or a founder's first contact. */
  readonly relayKey?: string;
  /** The version of the last admission list this machine pushed (admins). */
  readonly admissionVersion?: number;
  /** Privacy classes this machine narrowed for itself (never replicated; sync-manifest.ts). */
  readonly narrowing?: Readonly<Record<string, PrivacyClass>>;
  /** A restore from a recovery kit: how it went (mesh-recovery.ts). */
  readonly recovery?: RecoveryStatus;
  /** The last checkpoint this machine (an admin) wrote. */
  readonly checkpoint?: CheckpointMark;
  /** The manifest the admitting admin sent with the keys, followed until the signed records arrive. */
  readonly provisionalClasses?: Readonly<Record<string, PrivacyClass>>;
};

const META_KEY = 'mesh';

export class MeshMetaKeeper {
  readonly #store: Pick<MachineStore, 'getMeta' | 'setMeta' | 'deleteMeta'>;
  readonly #saved: () => Promise<void>;
  #meta: MeshMeta | undefined;

  /** `saved` runs after every save: the state plane is configured from this record. */
  constructor(store: Pick<MachineStore, 'getMeta' | 'setMeta' | 'deleteMeta'>, saved: () => Promise<void>) {
    this.#store = store;
    this.#saved = saved;
  }

  /** Undefined until this machine founded or joined a mesh. */
  get value(): MeshMeta | undefined {
    return this.#meta;
  }

  get status(): 'new' | MeshMeta['status'] {
    return this.#meta?.status ?? 'new';
  }

  get anchors(): readonly string[] {
    return this.#meta?.anchors ?? [];
  }

  get anchorPeers(): readonly PeerAddress[] {
    return this.#meta?.anchorPeers ?? [];
  }

  /** The privacy choices this machine made for itself, and the provisional manifest it follows. */
  get classChoices(): LocalClassChoices {
    return {
      narrowing: new Map(Object.entries(this.#meta?.narrowing ?? {})),
      provisional: new Map(Object.entries(this.#meta?.provisionalClasses ?? {})),
    };
  }

  /** Reads the record again (at start, and when another tab changed it). */
  async load(): Promise<MeshMeta | undefined> {
    this.#meta = await this.#store.getMeta<MeshMeta>(META_KEY);
    return this.#meta;
  }

  async save(meta: MeshMeta): Promise<void> {
    this.#meta = meta;
    await this.#store.setMeta(META_KEY, meta);
    await this.#saved();
  }

  /** Forgets the mesh: the machine is new again (an abandoned join). */
  async forget(): Promise<void> {
    this.#meta = undefined;
    await this.#store.deleteMeta(META_KEY);
  }
}
