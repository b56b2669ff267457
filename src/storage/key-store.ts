/**
 * The machine's protected key store (IndexedDB, opened only inside the crypto
 * and MLS workers). It holds the non-extractable signing, endpoint and wrapping keys as
 * CryptoKey objects (structured-cloned by IndexedDB, never exportable), and every
 * secret that must be handed on later (group secret, domain key generations) as
 * bytes wrapped under the wrapping key.
 */
import { Dexie, type Table } from 'dexie';
import { generateWrappingKey, type WrappedSecret } from '../runtime/webcrypto.js';

export type IdentityRecord = {
  readonly id: 'self';
  readonly signing: CryptoKeyPair;
  readonly signingPublic: Uint8Array;
  readonly endpoint: CryptoKeyPair;
  readonly endpointPublic: Uint8Array;
  /** X25519 frame key (runtime/frame-channel.ts); added to identities made before frames used HPKE. */
  readonly frame?: CryptoKeyPair;
  readonly framePublic?: Uint8Array;
  readonly wrapping: CryptoKey;
  readonly createdAt: number;
};

/** The key-store name of one KEK generation of a domain (written by the MLS worker, read by the crypto worker). */
export const domainSecretName = (domain: string, gen: number): string => `domain/${domain}/${gen}`;

export type SecretRecord = { readonly name: string } & WrappedSecret;

/** A frame request id this machine accepted, kept while a replay could still arrive in its time window. */
export type ReplayRecord = { readonly rid: string; readonly ts: number };

/** An invitation this machine issued and has not yet seen used. */
export type InvitationRecord = { readonly inv: string; readonly expiresAt: number };

export class KeyDatabase extends Dexie {
  identity!: Table<IdentityRecord, 'self'>;
  secrets!: Table<SecretRecord, string>;
  invitations!: Table<InvitationRecord, string>;
  replay!: Table<ReplayRecord, string>;

  constructor(name = 'sov-keys') {
    super(name);
    this.version(1).stores({ identity: 'id', secrets: 'name', invitations: 'inv' });
    this.version(2).stores({ replay: 'rid, ts' });
  }
}

/**
 * What the crypto, MLS and Parquet workers need of a key store, so a machine that runs
 * in Node keeps its keys in SQLite (sqlite-key-store.ts) and a browser in IndexedDB.
 * The store makes the identity itself: only it knows how its keys can be kept (a browser
 * keeps non-extractable CryptoKeys as they are; Node cannot store a CryptoKey at all).
 */
export interface KeyStore {
  identity(): Promise<IdentityRecord | undefined>;
  /** This machine's identity, made on first use; if two contexts race, both get the one that was kept. */
  ensureIdentity(make: IdentityMaker, now: number): Promise<IdentityRecord>;
  secret(name: string): Promise<SecretRecord | undefined>;
  /** Every secret whose name starts with `prefix`. */
  secretsUnder(prefix: string): Promise<SecretRecord[]>;
  putSecrets(records: readonly SecretRecord[]): Promise<void>;
  deleteSecrets(names: readonly string[]): Promise<void>;
  invitation(inv: string): Promise<InvitationRecord | undefined>;
  putInvitation(record: InvitationRecord): Promise<void>;
  deleteInvitation(inv: string): Promise<void>;
  /** Invitations not expired at `now`. */
  openInvitations(now: number): Promise<InvitationRecord[]>;
  /** Replay records, oldest first, after dropping those older than `before`. */
  replays(before: number): Promise<ReplayRecord[]>;
  putReplay(record: ReplayRecord): Promise<void>;
}

/** Makes the key pairs of a new identity; `extractable` only where the store must wrap them to keep them. */
export type IdentityMaker = (extractable: boolean) => Promise<{
  readonly signing: CryptoKeyPair;
  readonly endpoint: CryptoKeyPair;
  readonly frame: CryptoKeyPair;
}>;

const SELF = 'self';

/** The browser's key store: KeyDatabase on IndexedDB, CryptoKeys kept non-extractable as they are. */
export class DexieKeyStore implements KeyStore {
  readonly db: KeyDatabase;

  constructor(db: KeyDatabase = new KeyDatabase()) {
    this.db = db;
  }

  identity(): Promise<IdentityRecord | undefined> {
    return this.db.identity.get(SELF);
  }

  async ensureIdentity(make: IdentityMaker, now: number): Promise<IdentityRecord> {
    const existing = await this.identity();
    if (existing?.frame && existing.framePublic) return existing;
    const keys = await make(false);
    const raw = async (key: CryptoKey) => new Uint8Array(await crypto.subtle.exportKey('raw', key));
    const frame = { frame: keys.frame, framePublic: await raw(keys.frame.publicKey) };
    if (existing) {
      // An identity made before frames used HPKE gets its frame key now (kept if another tab added one first).
      await this.db.transaction('rw', this.db.identity, async () => {
        const current = await this.db.identity.get(SELF);
        if (current && !current.frame) await this.db.identity.put({ ...current, ...frame });
      });
      return (await this.identity())!;
    }
    const record: IdentityRecord = {
      id: SELF,
      signing: keys.signing,
      signingPublic: await raw(keys.signing.publicKey),
      endpoint: keys.endpoint,
      endpointPublic: await raw(keys.endpoint.publicKey),
      ...frame,
      wrapping: await generateWrappingKey(),
      createdAt: now,
    };
    // add() refuses to overwrite: if another tab won the race, use its identity.
    try {
      await this.db.identity.add(record);
      return record;
    } catch {
      return (await this.identity())!;
    }
  }

  secret(name: string): Promise<SecretRecord | undefined> {
    return this.db.secrets.get(name);
  }

  secretsUnder(prefix: string): Promise<SecretRecord[]> {
    return this.db.secrets.where('name').startsWith(prefix).toArray();
  }

  async putSecrets(records: readonly SecretRecord[]): Promise<void> {
    await this.db.secrets.bulkPut([...records]);
  }

  deleteSecrets(names: readonly string[]): Promise<void> {
    return this.db.secrets.bulkDelete([...names]);
  }

  invitation(inv: string): Promise<InvitationRecord | undefined> {
    return this.db.invitations.get(inv);
  }

  async putInvitation(record: InvitationRecord): Promise<void> {
    await this.db.invitations.put(record);
  }

  deleteInvitation(inv: string): Promise<void> {
    return this.db.invitations.delete(inv);
  }

  openInvitations(now: number): Promise<InvitationRecord[]> {
    return this.db.invitations.filter((i) => i.expiresAt >= now).toArray();
  }

  async replays(before: number): Promise<ReplayRecord[]> {
    await this.db.replay.where('ts').below(before).delete();
    return this.db.replay.orderBy('ts').toArray();
  }

  async putReplay(record: ReplayRecord): Promise<void> {
    await this.db.replay.put(record);
  }
}

/** Services accept either a KeyStore or (browsers, tests) a KeyDatabase to wrap. */
export function keyStoreOf(keys: KeyStore | KeyDatabase): KeyStore {
  return keys instanceof KeyDatabase ? new DexieKeyStore(keys) : keys;
}
