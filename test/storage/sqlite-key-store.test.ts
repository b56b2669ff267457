/**
 * The Node key store: keys survive a restart, private keys are never extractable once
 * kept, the machine key file is the root (0600, refused when others may read it, and
 * a different file opens nothing), and the crypto and MLS services run on it
 * unchanged — a founded mesh comes back with the same signer, topic and generations.
 */
import { chmodSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ok } from '../../src/core/result.js';
import { DOMAINS } from '../../src/core/schema.js';
import { CryptoService } from '../../src/runtime/crypto-service.js';
import { MlsService } from '../../src/runtime/mls-service.js';
import { webSigner, webVerifier } from '../../src/runtime/webcrypto.js';
import { MACHINE_KEY_FILE, SqliteKeyStore } from '../../src/storage/sqlite-key-store.js';
import { testClock } from '../helpers/deterministic.js';

describe('SQLite key store', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'sov-key-store-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('keeps one identity across restarts, its private keys non-extractable', async () => {
    const clock = testClock();
    const first = await SqliteKeyStore.open(dir);
    const crypto1 = new CryptoService(first, clock);
    const view = await crypto1.init();
    expect(statSync(join(dir, MACHINE_KEY_FILE)).mode & 0o777).toBe(0o600);
    first.close();

    const again = await SqliteKeyStore.open(dir);
    const crypto2 = new CryptoService(again, clock);
    expect(await crypto2.init()).toEqual(view);
    const identity = (await again.identity())!;
    for (const pair of [identity.signing, identity.endpoint, identity.frame!]) {
      expect(pair.privateKey.extractable).toBe(false);
      await expect(globalThis.crypto.subtle.exportKey('pkcs8', pair.privateKey)).rejects.toThrow();
    }
    const message = new TextEncoder().encode('signed after a restart');
    const signature = await crypto2.sign(message);
    expect(await webVerifier().verify(identity.signingPublic, message, signature)).toBe(true);
    const endpoint = webSigner({ keys: identity.endpoint, publicKey: identity.endpointPublic });
    expect(await webVerifier().verify(identity.endpointPublic, message, await endpoint.sign(message))).toBe(true);
    again.close();
  });

  it('brings a founded mesh back: topic, group secret and every generation', async () => {
    const clock = testClock();
    const store = await SqliteKeyStore.open(dir);
    const crypto = new CryptoService(store, clock);
    await crypto.init();
    expect((await crypto.createMesh()).ok).toBe(true);
    const mls = new MlsService(store);
    await mls.init();
    mls.setKeyring({ admitted: [crypto.view().signer], admins: [crypto.view().signer] });
    mls.setSequencer(async () => ok(undefined));
    for (const d of DOMAINS) expect((await mls.found(d, crypto.groupIdOf(d))).ok).toBe(true);
    await crypto.reloadDomainKeys();
    const before = { view: crypto.view(), gens: crypto.domainGenerations(), views: await mls.views() };
    expect(before.view.member).toBe(true);
    store.close();

    const reopened = await SqliteKeyStore.open(dir);
    const crypto2 = new CryptoService(reopened, clock);
    expect(await crypto2.init()).toEqual(before.view);
    expect(crypto2.domainGenerations()).toEqual(before.gens);
    const mls2 = new MlsService(reopened);
    expect((await mls2.init()).map((v) => [v.domain, v.epoch, v.generations])).toEqual(
      before.views.map((v) => [v.domain, v.epoch, v.generations]),
    );
    // Secrets, invitations and replay records are kept too.
    expect(await crypto2.createInvitation('ws://127.0.0.1:1/ws', 'ab'.repeat(32))).toMatch(/^sov1\./);
    expect(await reopened.openInvitations(clock.now())).toHaveLength(1);
    await reopened.putReplays([{ rid: 'r1', ts: 10 }]);
    await reopened.putReplays([
      { rid: 'r2', ts: 20 },
      { rid: 'r3', ts: 30 },
    ]);
    expect(await reopened.replays(15)).toEqual([
      { rid: 'r2', ts: 20 },
      { rid: 'r3', ts: 30 },
    ]);
    reopened.close();
  });

  it('keeps why an invitation was closed, and opens a store made before invitations could be closed', async () => {
    // A store of the earlier schema: invitations without the closed column.
    await SqliteKeyStore.open(dir).then((s) => s.close());
    const raw = new Database(join(dir, 'keys.sqlite'));
    raw.exec('DROP TABLE invitations; CREATE TABLE invitations (inv TEXT PRIMARY KEY, expires_at INTEGER NOT NULL)');
    raw.prepare('INSERT INTO invitations VALUES (?, ?)').run('aa', 5);
    raw.close();
    const store = await SqliteKeyStore.open(dir);
    expect(await store.invitation('aa')).toEqual({ inv: 'aa', expiresAt: 5 });
    await store.putInvitation({ inv: 'aa', expiresAt: 4, closed: 'declined' });
    store.close();
    const again = await SqliteKeyStore.open(dir);
    expect(await again.openInvitations(4)).toEqual([{ inv: 'aa', expiresAt: 4, closed: 'declined' }]);
    expect(await again.openInvitations(5)).toEqual([]);
    again.close();
  });

  it('opens nothing under another machine key, and refuses a key file others may read', async () => {
    const store = await SqliteKeyStore.open(dir);
    await new CryptoService(store, testClock()).init();
    store.close();
    chmodSync(join(dir, MACHINE_KEY_FILE), 0o644);
    await expect(SqliteKeyStore.open(dir)).rejects.toThrow(/readable by other users/);
    writeFileSync(join(dir, MACHINE_KEY_FILE), new Uint8Array(32).fill(7), { mode: 0o600 });
    chmodSync(join(dir, MACHINE_KEY_FILE), 0o600);
    const other = await SqliteKeyStore.open(dir);
    await expect(other.identity()).rejects.toThrow(/does not open under this machine key/);
    other.close();
  });
});
