/**
 * The machine's protected key store (IndexedDB, opened only inside the workers). It
 * holds the non-extractable wrapping key as a CryptoKey (structured-cloned by IndexedDB,
 * never exportable); the signing, endpoint and frame keys as CryptoKeys too where this
 * engine can keep that key type, and otherwise as PKCS#8 bytes wrapped under the
 * wrapping key, re-imported non-extractable on read (key-keeping.ts); and every secret
 * that must be handed on later (group secret, domain key generations) as bytes wrapped
 * under the wrapping key.
 */
import { Dexie, type Table } from 'dexie';
import { STRICT } from './durability.js';
import { generateWrappingKey, type WrappedSecret } from './key-wrap.js';
import {
  probeKeyKeeping,
  unwrapPair,
  wrapPairReopenable,
  type Clone,
  type KeyKeeping,
  type PairAlgorithm,
  type WrappedPair,
} from './key-keeping.js';

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

export type SecretRecord = { readonly name: string } & WrappedSecret;

/** A frame request id this machine accepted, kept while a replay could still arrive in its time window. */
export type ReplayRecord = { readonly rid: string; readonly ts: number };

/** An invitation this machine issued and has not yet seen used. */
export type InvitationRecord = {
  readonly inv: string;
  readonly expiresAt: number;
  /**
   * Why the invitation no longer admits anyone (used, declined, failed), once it was closed. A
   * closed invitation is kept until it expires: the relay keeps serving the joiner that holds
   * it, so the answer reaches that joiner, and a later request with it is told why.
   */
  readonly closed?: string;
};

export class KeyDatabase extends Dexie {
  identity!: Table<StoredIdentity, 'self'>;
  secrets!: Table<SecretRecord, string>;
  invitations!: Table<InvitationRecord, string>;
  replay!: Table<ReplayRecord, string>;

  constructor(name = 'sov-keys') {
    super(name, STRICT);
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
  /**
   * Replaces the identity of a machine that belongs to no mesh yet (a fresh one restoring from
   * a recovery kit takes the kit's keys): `undefined`, and nothing changed, if the secret named
   * `unless` (the group secret) exists. Every other secret goes with the identity it was for.
   */
  replaceIdentity(make: IdentityMaker, now: number, unless: string): Promise<IdentityRecord | undefined>;
  secret(name: string): Promise<SecretRecord | undefined>;
  /** Every secret whose name starts with `prefix`. */
  secretsUnder(prefix: string): Promise<SecretRecord[]>;
  putSecrets(records: readonly SecretRecord[]): Promise<void>;
  deleteSecrets(names: readonly string[]): Promise<void>;
  invitation(inv: string): Promise<InvitationRecord | undefined>;
  putInvitation(record: InvitationRecord): Promise<void>;
  deleteInvitation(inv: string): Promise<void>;
  /** Invitations not expired at `now`, closed ones included. */
  openInvitations(now: number): Promise<InvitationRecord[]>;
  /** Replay records, oldest first, after dropping those older than `before`. */
  replays(before: number): Promise<ReplayRecord[]>;
  /** Keeps these replay records, all in one write (a batch of frames is remembered at once). */
  putReplays(records: readonly ReplayRecord[]): Promise<void>;
}

/**
 * Makes the key pairs of a new identity. A pair whose type `keeping` says is kept
 * `wrapped` is made extractable, only so the store can export and wrap it; the store
 * hands out non-extractable re-imports.
 */
export type IdentityMaker = (keeping: KeyKeeping) => Promise<{
  readonly signing: CryptoKeyPair;
  readonly endpoint: CryptoKeyPair;
  readonly frame: CryptoKeyPair;
}>;

const SELF = 'self';

/** A key pair as IndexedDB keeps it: the CryptoKeys themselves, or wrapped bytes (key-keeping.ts). */
type StoredPair = CryptoKeyPair | WrappedPair;

/** The identity row in IndexedDB. Rows written before wrapped pairs existed hold CryptoKeyPairs only. */
type StoredIdentity = {
  readonly id: 'self';
  readonly signing: StoredPair;
  readonly signingPublic: Uint8Array;
  readonly endpoint: StoredPair;
  readonly endpointPublic: Uint8Array;
  readonly frame?: StoredPair;
  readonly framePublic?: Uint8Array;
  readonly wrapping: CryptoKey;
  readonly createdAt: number;
};

const isWrapped = (pair: StoredPair): pair is WrappedPair => 'priv' in pair;

/** The browser's key store: KeyDatabase on IndexedDB, keys kept as this engine can keep them (key-keeping.ts). */
export class DexieKeyStore implements KeyStore {
  readonly db: KeyDatabase;
  readonly #clone: Clone;
  #keeping: Promise<KeyKeeping> | undefined;
  #identity: IdentityRecord | undefined;

  /** `clone` is the engine's structured clone; tests pass one that refuses a key type, as WebKit's does. */
  constructor(db: KeyDatabase = new KeyDatabase(), clone: Clone = structuredClone) {
    this.db = db;
    this.#clone = clone;
  }

  /** How this engine keeps each key type, probed once per store. */
  keeping(): Promise<KeyKeeping> {
    return (this.#keeping ??= probeKeyKeeping(this.#clone));
  }

  async identity(): Promise<IdentityRecord | undefined> {
    if (this.#identity) return this.#identity;
    const stored = await storeCall('read this machine’s identity', () => this.db.identity.get(SELF));
    if (stored === undefined) return undefined;
    const record = await openIdentity(stored);
    if (record.frame) this.#identity = record;
    return record;
  }

  async ensureIdentity(make: IdentityMaker, now: number): Promise<IdentityRecord> {
    const existing = await this.identity();
    if (existing?.frame && existing.framePublic) return existing;
    const wrapping = existing?.wrapping ?? (await generateWrappingKey());
    const keys = await keptKeys(make, await this.keeping(), wrapping);
    const frame = { frame: keys.frame, framePublic: keys.framePublic };
    if (existing) {
      // An identity made before frames used HPKE gets its frame key now (kept if another tab added one first).
      await storeCall('add a frame key to this machine’s identity', () =>
        this.db.transaction('rw', this.db.identity, async () => {
          const current = await this.db.identity.get(SELF);
          if (current && !current.frame) await this.db.identity.put({ ...current, ...frame });
        }),
      );
      return this.#readBack();
    }
    const record: StoredIdentity = {
      id: SELF,
      ...keys,
      wrapping,
      createdAt: now,
    };
    try {
      await this.db.identity.add(record);
    } catch (e) {
      // add() refuses to overwrite: if another tab won the race, its identity is the one in force.
      if ((e as Error).name !== 'ConstraintError') throw storeError('save this machine’s identity', e);
    }
    return this.#readBack();
  }

  async replaceIdentity(make: IdentityMaker, now: number, unless: string): Promise<IdentityRecord | undefined> {
    const existing = await this.identity();
    const wrapping = existing?.wrapping ?? (await generateWrappingKey());
    const keys = await keptKeys(make, await this.keeping(), wrapping);
    const replaced = await storeCall('replace this machine’s identity', () =>
      this.db.transaction('rw', this.db.identity, this.db.secrets, async () => {
        if ((await this.db.secrets.get(unless)) !== undefined) return false;
        await this.db.secrets.clear();
        await this.db.identity.put({ id: SELF, ...keys, wrapping, createdAt: now });
        return true;
      }),
    );
    return replaced ? this.#readBack() : undefined;
  }

  /**
   * The identity as a fresh read gives it: an engine that stores a record it cannot
   * read back (WebKit with an X25519 CryptoKey) is caught here, not at the next start.
   */
  async #readBack(): Promise<IdentityRecord> {
    this.#identity = undefined;
    const record = await this.identity();
    if (!record?.frame) {
      throw new Error(
        'key store: this machine’s identity was saved but does not read back from this browser’s storage',
      );
    }
    return record;
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

  async putReplays(records: readonly ReplayRecord[]): Promise<void> {
    if (records.length > 0) await this.db.replay.bulkPut([...records]);
  }
}

/** Services accept either a KeyStore or (browsers, tests) a KeyDatabase to wrap. */
export function keyStoreOf(keys: KeyStore | KeyDatabase): KeyStore {
  return keys instanceof KeyDatabase ? new DexieKeyStore(keys) : keys;
}

type KeptKeys = Pick<StoredIdentity, 'signing' | 'signingPublic' | 'endpoint' | 'endpointPublic'> & {
  readonly frame: StoredPair;
  readonly framePublic: Uint8Array;
};

/** How many identities are drawn before giving up on one whose wrapped keys open again. */
const IDENTITY_DRAWS = 8;

/**
 * A new identity's key pairs as they will be stored: kept as keys, or wrapped under
 * `wrapping` where `keeping` says so. A wrapped pair must open again before it is kept:
 * WebKitGTK refuses to import a PKCS#8 key whose seed starts with a zero byte (1 in 256
 * keys), so such an identity is drawn afresh rather than stored unopenable.
 */
async function keptKeys(make: IdentityMaker, keeping: KeyKeeping, wrapping: CryptoKey): Promise<KeptKeys> {
  const raw = async (key: CryptoKey) => new Uint8Array(await crypto.subtle.exportKey('raw', key));
  for (let draw = 1; ; draw++) {
    const keys = await make(keeping);
    const keep = async (label: string, algorithm: PairAlgorithm, pair: CryptoKeyPair) =>
      keeping[algorithm] === 'key' ? pair : wrapPairReopenable(wrapping, label, algorithm, pair);
    const [signing, endpoint, frame] = await Promise.all([
      keep('signing', 'Ed25519', keys.signing),
      keep('endpoint', 'Ed25519', keys.endpoint),
      keep('frame', 'X25519', keys.frame),
    ]);
    if (signing && endpoint && frame) {
      return {
        signing,
        signingPublic: await raw(keys.signing.publicKey),
        endpoint,
        endpointPublic: await raw(keys.endpoint.publicKey),
        frame,
        framePublic: await raw(keys.frame.publicKey),
      };
    }
    if (draw >= IDENTITY_DRAWS) throw new Error('key store: this browser cannot re-import the keys it wraps');
  }
}

/** The identity row opened for use: wrapped pairs unwrapped and imported non-extractable. */
async function openIdentity(stored: StoredIdentity | null): Promise<IdentityRecord> {
  // WebKit reads a row holding a CryptoKey it cannot deserialize as null, not as an error.
  if (stored === null || typeof stored !== 'object' || !(stored.wrapping instanceof CryptoKey)) {
    throw new Error('key store: this machine’s identity is stored but this browser cannot read it back');
  }
  const open = async (label: string, algorithm: PairAlgorithm, pair: StoredPair): Promise<CryptoKeyPair> => {
    if (!isWrapped(pair)) return pair;
    try {
      return await unwrapPair(stored.wrapping, label, algorithm, pair);
    } catch (e) {
      throw storeError(`open this machine’s ${label} key`, e);
    }
  };
  return {
    id: SELF,
    signing: await open('signing', 'Ed25519', stored.signing),
    signingPublic: stored.signingPublic,
    endpoint: await open('endpoint', 'Ed25519', stored.endpoint),
    endpointPublic: stored.endpointPublic,
    ...(stored.frame && stored.framePublic
      ? { frame: await open('frame', 'X25519', stored.frame), framePublic: stored.framePublic }
      : {}),
    wrapping: stored.wrapping,
    createdAt: stored.createdAt,
  };
}

/** A storage failure as an error that says what was being done and why it failed (never swallowed). */
function storeError(doing: string, e: unknown): Error {
  const { name, message } = e instanceof Error ? e : { name: 'Error', message: String(e) };
  return new Error(`key store: could not ${doing}: ${name}${message ? `: ${message}` : ''}`, { cause: e });
}

async function storeCall<T>(doing: string, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (e) {
    throw storeError(doing, e);
  }
}
