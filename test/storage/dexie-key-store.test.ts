/**
 * The browser key store in every engine: a key type the engine's structured clone
 * cannot carry (WebKit and X25519) is kept as PKCS#8 bytes wrapped under the machine
 * key and comes back non-extractable and usable; a storage failure is an error that
 * says what failed, never swallowed into a half-made machine.
 */
import 'fake-indexeddb/auto';
import { Dexie } from 'dexie';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { CryptoService } from '../../src/runtime/crypto-service.js';
import { generateSigningIdentity } from '../../src/runtime/webcrypto.js';
import { retryingKeyGeneration } from '../../src/storage/key-wrap.js';
import { probeKeyKeeping, type Clone } from '../../src/storage/key-keeping.js';
import { DexieKeyStore, KeyDatabase, type IdentityMaker } from '../../src/storage/key-store.js';
import { testClock } from '../helpers/deterministic.js';

let serial = 0;
const freshDb = (): KeyDatabase => new KeyDatabase(`dexie-key-store-${++serial}`);

/** WebKit's clone as observed in WebKitGTK 2.50 and Safari: an X25519 CryptoKey does not deserialize. */
const webkitClone: Clone = <T>(value: T): T => {
  if (value instanceof CryptoKey && value.algorithm.name === 'X25519') {
    throw new DOMException('Unable to deserialize data.', 'DataCloneError');
  }
  return structuredClone(value);
};

const makeKeys: IdentityMaker = async (keeping) => {
  const ed = (): Promise<CryptoKeyPair> =>
    crypto.subtle.generateKey({ name: 'Ed25519' }, keeping.Ed25519 === 'wrapped', ['sign', 'verify']);
  const x = crypto.subtle.generateKey({ name: 'X25519' }, keeping.X25519 === 'wrapped', ['deriveBits']);
  return { signing: await ed(), endpoint: await ed(), frame: (await x) as CryptoKeyPair };
};

/** The shared secret `privateKey` derives with a fresh peer, checked against the peer's side. */
async function agrees(privateKey: CryptoKey, publicRaw: Uint8Array): Promise<boolean> {
  const peer = (await crypto.subtle.generateKey({ name: 'X25519' }, false, ['deriveBits'])) as CryptoKeyPair;
  const ours = await crypto.subtle.deriveBits({ name: 'X25519', public: peer.publicKey }, privateKey, 256);
  const pub = await crypto.subtle.importKey('raw', new Uint8Array(publicRaw), { name: 'X25519' }, true, []);
  const theirs = await crypto.subtle.deriveBits({ name: 'X25519', public: pub }, peer.privateKey, 256);
  return Buffer.from(ours).equals(Buffer.from(theirs));
}

afterEach(() => vi.restoreAllMocks());

describe('key keeping probe', () => {
  it('keeps every type as a key where the clone carries it, wraps only the type it cannot', async () => {
    expect(await probeKeyKeeping()).toEqual({ Ed25519: 'key', X25519: 'key' });
    expect(await probeKeyKeeping(webkitClone)).toEqual({ Ed25519: 'key', X25519: 'wrapped' });
  });

  it('refuses to run without a clonable AES-GCM key, saying why', async () => {
    const noAes: Clone = <T>(value: T): T => {
      if (value instanceof CryptoKey && value.algorithm.name === 'AES-GCM')
        throw new DOMException('no', 'DataCloneError');
      return structuredClone(value);
    };
    await expect(probeKeyKeeping(noAes)).rejects.toThrow(/cannot keep a non-extractable AES-GCM key/);
  });

  it('names the browser versions needed when WebCrypto lacks a key type', async () => {
    const generate = crypto.subtle.generateKey.bind(crypto.subtle);
    vi.spyOn(crypto.subtle, 'generateKey').mockImplementation(((algorithm: AlgorithmIdentifier, ...rest: never[]) =>
      (algorithm as Algorithm).name === 'X25519'
        ? Promise.reject(new DOMException('Unrecognized name.', 'NotSupportedError'))
        : (generate as (...a: unknown[]) => Promise<unknown>)(algorithm, ...rest)) as typeof crypto.subtle.generateKey);
    await expect(probeKeyKeeping()).rejects.toThrow(/no X25519 keys.*Safari 17.*Firefox 130.*NotSupportedError/);
  });
});

describe('key generation on engines that fail a draw', () => {
  it('draws again when the engine fails a key generation with OperationError (WebKitGTK)', async () => {
    const generate = crypto.subtle.generateKey.bind(crypto.subtle);
    let failures = 0;
    vi.spyOn(crypto.subtle, 'generateKey').mockImplementation(((...args: unknown[]) => {
      if (failures < 2) {
        failures++;
        return Promise.reject(
          new DOMException('The operation failed for an operation-specific reason', 'OperationError'),
        );
      }
      return (generate as (...a: unknown[]) => Promise<unknown>)(...args);
    }) as typeof crypto.subtle.generateKey);
    const { keys } = await generateSigningIdentity();
    expect(failures).toBe(2);
    expect(keys.privateKey.algorithm.name).toBe('Ed25519');
  });

  it('gives up after eight failed draws, with the engine’s error', async () => {
    vi.spyOn(crypto.subtle, 'generateKey').mockRejectedValue(new DOMException('always', 'OperationError'));
    await expect(
      retryingKeyGeneration(() => crypto.subtle.generateKey({ name: 'Ed25519' }, false, ['sign'])),
    ).rejects.toThrow('always');
    expect(crypto.subtle.generateKey).toHaveBeenCalledTimes(8);
  });
});

describe('DexieKeyStore', () => {
  it('replaces the identity of a machine in no mesh (a kit restore), dropping its other secrets', async () => {
    const db = freshDb();
    const store = new DexieKeyStore(db);
    const first = await store.ensureIdentity(makeKeys, 1);
    await store.putSecrets([{ name: 'mls/standing', iv: new Uint8Array(12), ct: new Uint8Array(4) }]);
    const replaced = await store.replaceIdentity(makeKeys, 2, 'group');
    expect(replaced && Buffer.from(replaced.signingPublic).equals(Buffer.from(first.signingPublic))).toBe(false);
    expect(replaced!.signing.privateKey.extractable).toBe(false);
    expect(await store.secret('mls/standing')).toBeUndefined();
    expect((await new DexieKeyStore(db).identity())!.signingPublic).toEqual(replaced!.signingPublic);

    await store.putSecrets([{ name: 'group', iv: new Uint8Array(12), ct: new Uint8Array(4) }]);
    expect(await store.replaceIdentity(makeKeys, 3, 'group')).toBeUndefined();
    expect((await new DexieKeyStore(db).identity())!.signingPublic).toEqual(replaced!.signingPublic);
  });

  it('keeps CryptoKeys as they are where the engine can clone them', async () => {
    const db = freshDb();
    const identity = await new DexieKeyStore(db).ensureIdentity(makeKeys, 1);
    const row = (await db.identity.get('self'))!;
    expect(row.frame).toHaveProperty('privateKey');
    expect(identity.frame!.privateKey.extractable).toBe(false);
    expect(identity.signing.privateKey.extractable).toBe(false);
  });

  it('wraps a key type the engine cannot clone; it comes back non-extractable and usable, also after a restart', async () => {
    const db = freshDb();
    const made = await new DexieKeyStore(db, webkitClone).ensureIdentity(makeKeys, 1);

    // At rest: wrapped bytes for the frame key, no X25519 CryptoKey anywhere in the row.
    const row = (await db.identity.get('self'))!;
    expect(row.frame).not.toHaveProperty('privateKey');
    expect(row.frame).toMatchObject({ pub: made.framePublic });
    expect((row.frame as { priv: { iv: Uint8Array } }).priv.iv).toHaveLength(12);
    expect(() => webkitClone(row)).not.toThrow();
    // The signing keys the engine can clone stay CryptoKeys.
    expect(row.signing).toHaveProperty('privateKey');

    const reopened = await new DexieKeyStore(db, webkitClone).identity();
    for (const identity of [made, reopened!]) {
      expect(identity.frame!.privateKey.extractable).toBe(false);
      expect(identity.frame!.privateKey.algorithm.name).toBe('X25519');
      expect(await agrees(identity.frame!.privateKey, identity.framePublic!)).toBe(true);
    }
    await expect(crypto.subtle.exportKey('pkcs8', reopened!.frame!.privateKey)).rejects.toThrow();
  });

  it('runs a whole machine (identity, mesh, group secret) on wrapped keys', async () => {
    const db = freshDb();
    const service = new CryptoService(new DexieKeyStore(db, webkitClone), testClock());
    await service.init();
    expect((await service.createMesh()).ok).toBe(true);
    const again = new CryptoService(new DexieKeyStore(db, webkitClone), testClock());
    const view = await again.init();
    expect(view.topic).toBe(service.view().topic);
    expect(view.frame).toBe(service.view().frame);
  });

  it('reports a failed save with its cause instead of swallowing it', async () => {
    const db = freshDb();
    vi.spyOn(db.identity, 'add').mockRejectedValue(
      new Dexie.DataError('Failed to execute add: key path did not yield a value'),
    );
    await expect(new DexieKeyStore(db).ensureIdentity(makeKeys, 1)).rejects.toThrow(
      /key store: could not save this machine’s identity: DataError: Failed to execute add/,
    );
  });

  it('reports an identity that was saved but reads back empty (as WebKit reads an uncloneable key)', async () => {
    const db = freshDb();
    vi.spyOn(db.identity, 'get').mockResolvedValue(null);
    await expect(new DexieKeyStore(db).ensureIdentity(makeKeys, 1)).rejects.toThrow(
      /key store: this machine’s identity is stored but this browser cannot read it back/,
    );
  });

  it('reports a failed read with its cause', async () => {
    const db = freshDb();
    vi.spyOn(db.identity, 'get').mockRejectedValue(new Dexie.DatabaseClosedError('closed by the browser'));
    await expect(new DexieKeyStore(db).identity()).rejects.toThrow(
      /key store: could not read this machine’s identity: DatabaseClosedError/,
    );
  });

  it('draws another identity when a wrapped key does not import again (WebKitGTK: a seed that starts with a zero byte)', async () => {
    const db = freshDb();
    const importKey = crypto.subtle.importKey.bind(crypto.subtle);
    let refused = 0;
    vi.spyOn(crypto.subtle, 'importKey').mockImplementation(((format: string, ...rest: unknown[]) => {
      if (format === 'pkcs8' && refused === 0) {
        refused++;
        return Promise.reject(
          new DOMException('Data provided to an operation does not meet requirements', 'DataError'),
        );
      }
      return (importKey as (...a: unknown[]) => Promise<CryptoKey>)(format, ...rest);
    }) as typeof crypto.subtle.importKey);
    let draws = 0;
    const counted: IdentityMaker = (keeping) => {
      draws++;
      return makeKeys(keeping);
    };
    const identity = await new DexieKeyStore(db, webkitClone).ensureIdentity(counted, 1);
    expect(refused).toBe(1);
    expect(draws).toBe(2);
    expect(await agrees(identity.frame!.privateKey, identity.framePublic!)).toBe(true);
  });

  it('when two contexts race, both use the identity that was kept', async () => {
    const db = freshDb();
    const [a, b] = await Promise.all([
      new DexieKeyStore(db, webkitClone).ensureIdentity(makeKeys, 1),
      new DexieKeyStore(db, webkitClone).ensureIdentity(makeKeys, 2),
    ]);
    expect(a.signingPublic).toEqual(b.signingPublic);
    expect(a.framePublic).toEqual(b.framePublic);
  });
});
