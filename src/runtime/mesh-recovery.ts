/**
 * Disaster recovery on a machine (seed 003 "Recovery"; core/recovery for the formats).
 *
 * An admin makes a recovery kit: a machine drawn for the kit is enrolled in the keyring
 * (`keyring.recovery`, so the relay admits it and nobody delivers to it), and the kit — group
 * secret, relay, anchors, key history, the kit machine's keys — is sealed under a fresh
 * recovery code, shown once. From then on admins write checkpoints: every public-lane
 * envelope with the key history, in the blind store, named by a signed recovery root that
 * carries the checkpoint's secret to each live kit. One is written at once, then at most
 * hourly while the log grows.
 *
 * A fresh machine given the kit and its code becomes the kit's machine (`recovering`), lists
 * the roots on the relay, opens the newest its kit opens, fetches and opens the checkpoint,
 * takes its envelopes in as from a peer, and then checks the three things recovery needs:
 * the catalog (the checkpoint, from a root an admin signed), the key history (every catalog
 * object and every envelope opens with a generation held) and the ciphertext (every catalog
 * object is on the relay or here). Only with all three is it a member; otherwise it stays
 * `recovering` and says which is missing, and can try again (an archive may come back).
 */
import type { Result } from '../core/result.js';
import { err, ok } from '../core/result.js';
import type { ColumnValue } from '../core/schema.js';
import type { WriteError, WriteOutcome } from '../core/replica.js';
import type { CryptoPort, StatePort } from './ports.js';
import type { MeshMetaKeeper } from './mesh-meta.js';
import type { MeshRoster } from './mesh-roster.js';
import type { MeshObjects } from './mesh-objects.js';
import type { ChosenRoot } from './crypto-recovery.js';
import { noRootReason, type CheckpointMark, type MissingPart, type RecoveryStatus } from './recovery-status.js';

export type { CheckpointMark, MissingPart, RecoveryStatus } from './recovery-status.js';

/** A kit as the admin's screen shows it: the file to save, the code to write down (once). */
export type KitExport = { readonly file: Uint8Array; readonly code: string; readonly signer: string };

export type RecoveryError = { readonly type: string; readonly reason: string };

/** Checkpoints are written at most this often while the log grows (and at once after a new kit). */
export const CHECKPOINT_EVERY_MS = 3600_000;

export type RecoveryWiring = {
  readonly crypto: Pick<
    CryptoPort,
    'makeKit' | 'importKit' | 'sealCheckpoint' | 'chooseRoot' | 'openCheckpoint' | 'adoptKeys' | 'heldGenerations'
  >;
  readonly state: Pick<StatePort, 'checkpointEntries' | 'restore' | 'unopened' | 'reopen'>;
  readonly meta: MeshMetaKeeper;
  readonly roster: Pick<MeshRoster, 'isAdmin' | 'recoveryKits' | 'refresh'>;
  objects(): MeshObjects | undefined;
  logEnd(): Promise<number>;
  write(table: string, row: string, cols: Record<string, ColumnValue>): Promise<Result<WriteOutcome, WriteError>>;
  pushAdmission(): Promise<void>;
  /** The machine restored: start it as a member (relay session, delivery). */
  becameMember(): Promise<void>;
  changed(): void;
  now(): number;
};

const incomplete = (missing: MissingPart[], checkedAt: number): RecoveryStatus => ({
  state: 'incomplete',
  missing,
  checkedAt,
});

const reasonOf = (e: { readonly type: string; readonly reason?: string; readonly detail?: string }) =>
  e.reason ?? e.detail ?? e.type;

export class MeshRecovery {
  readonly #w: RecoveryWiring;
  #checkpointing: Promise<unknown> | undefined;
  #restoring: Promise<RecoveryStatus> | undefined;

  constructor(wiring: RecoveryWiring) {
    this.#w = wiring;
  }

  // ---- an admin's side -------------------------------------------------------------------

  /**
   * Makes a recovery kit (admins): enrols its machine in the keyring, lets the relay admit it,
   * and writes a checkpoint for it at once. The code is shown once and kept nowhere.
   */
  async makeKit(): Promise<Result<KitExport, RecoveryError>> {
    const { meta, roster, crypto } = this.#w;
    const m = meta.value;
    if (m?.status !== 'member' || !roster.isAdmin()) {
      return err({ type: 'NotAdmin', reason: 'only an admin makes recovery kits' });
    }
    if (!m.relayKey) return err({ type: 'NotReady', reason: 'connect to the relay once first' });
    const made = await crypto.makeKit({
      relay: m.relay,
      relayKey: m.relayKey,
      anchors: m.anchors,
      ...(m.checkpoint ? { root: m.checkpoint.rootId } : {}),
    });
    if (!made.ok) return err({ type: made.error.type, reason: made.error.reason });
    const { signer, endpoint, frame } = made.value.machine;
    const name = `recovery kit ${new Date(this.#w.now()).toISOString().slice(0, 10)}`;
    const written = await this.#w.write('keyring', signer, { endpoint, frame, name, recovery: true });
    if (!written.ok) return err({ type: written.error.type, reason: reasonOf(written.error) });
    await roster.refresh();
    await this.#w.pushAdmission();
    const checkpoint = await this.checkpoint();
    if (!checkpoint.ok) return checkpoint;
    return ok({ file: made.value.file, code: made.value.code, signer });
  }

  /** Writes a checkpoint and its root now (admins, with at least one live kit). */
  checkpoint(): Promise<Result<CheckpointMark, RecoveryError>> {
    const run = (this.#checkpointing ?? Promise.resolve()).then(() => this.#checkpoint());
    this.#checkpointing = run.catch(() => undefined);
    return run;
  }

  /** The periodic checkpoint: when kits exist, the log grew, and the last is an hour old. */
  async maybeCheckpoint(): Promise<void> {
    const { meta, roster } = this.#w;
    if (meta.value?.status !== 'member' || !roster.isAdmin() || roster.recoveryKits().length === 0) return;
    const last = meta.value.checkpoint;
    if (last && this.#w.now() - last.at < CHECKPOINT_EVERY_MS) return;
    if (last && last.kits === roster.recoveryKits().length && (await this.#w.logEnd()) === last.logEnd) return;
    await this.checkpoint();
  }

  async #checkpoint(): Promise<Result<CheckpointMark, RecoveryError>> {
    const { meta, roster, crypto, state } = this.#w;
    const objects = this.#w.objects();
    const kits = roster.recoveryKits();
    if (!roster.isAdmin()) return err({ type: 'NotAdmin', reason: 'only an admin writes checkpoints' });
    if (kits.length === 0) return err({ type: 'NoKit', reason: 'no recovery kit: make one first' });
    if (!objects) return err({ type: 'NotReady', reason: 'this page runs no Parquet worker' });
    const logEnd = await this.#w.logEnd();
    const entries = await state.checkpointEntries();
    const sealed = await crypto.sealCheckpoint(entries, kits);
    if (!sealed.ok) return err({ type: sealed.error.type, reason: reasonOf(sealed.error) });
    const stored = await objects.putRecovery('checkpoints', sealed.value.checkpoint);
    if (!stored.ok) return err({ type: stored.error.type, reason: reasonOf(stored.error) });
    const rooted = await objects.putRecovery('roots', sealed.value.root);
    if (!rooted.ok) return err({ type: rooted.error.type, reason: reasonOf(rooted.error) });
    const mark: CheckpointMark = {
      at: this.#w.now(),
      rootId: sealed.value.rootId,
      checkpointId: sealed.value.checkpointId,
      entries: entries.length,
      bytes: sealed.value.checkpoint.length,
      kits: kits.length,
      logEnd,
    };
    const current = meta.value;
    if (current) await meta.save({ ...current, checkpoint: mark });
    this.#w.changed();
    return ok(mark);
  }

  // ---- a restoring machine's side ------------------------------------------------------------

  /**
   * Takes a kit into this fresh machine (crypto-recovery.ts `importKit`): it becomes the kit's
   * machine, `recovering`. The caller reloads so every worker takes up the new identity.
   */
  async importKit(file: Uint8Array, code: string): Promise<Result<void, RecoveryError>> {
    const { meta, crypto } = this.#w;
    if (meta.value) return err({ type: 'AlreadyInMesh', reason: 'this machine already belongs to a mesh' });
    const imported = await crypto.importKit(file, code);
    if (!imported.ok) return err({ type: imported.error.type, reason: kitErrorText(imported.error) });
    const { relay, relayKey, anchors } = imported.value;
    await meta.save({
      status: 'recovering',
      relay,
      relayKey,
      name: 'recovered machine',
      anchors,
      anchorPeers: [],
      recovery: { state: 'restoring', step: 'kit opened' },
    });
    return ok(undefined);
  }

  /** Runs (or joins) the restore: the three components, then membership if all are there. */
  restore(): Promise<RecoveryStatus> {
    return (this.#restoring ??= this.#restore().finally(() => (this.#restoring = undefined)));
  }

  async #restore(): Promise<RecoveryStatus> {
    const status = await this.#assess();
    const current = this.#w.meta.value;
    if (current?.status !== 'recovering') return status;
    if (status.state === 'restored') {
      await this.#w.meta.save({ ...current, status: 'member', recovery: status });
      await this.#w.becameMember();
    } else {
      await this.#w.meta.save({ ...current, recovery: status });
    }
    this.#w.changed();
    return status;
  }

  async #step(step: string): Promise<void> {
    const current = this.#w.meta.value;
    if (current) await this.#w.meta.save({ ...current, recovery: { state: 'restoring', step } });
    this.#w.changed();
  }

  async #assess(): Promise<RecoveryStatus> {
    const { crypto, state } = this.#w;
    const objects = this.#w.objects();
    if (!objects)
      return incomplete([{ part: 'checkpoint', reason: 'this page runs no Parquet worker' }], this.#w.now());
    const restored = await this.#restoreCheckpoint(objects);
    if (!restored.ok) return incomplete([{ part: 'checkpoint', reason: restored.error }], this.#w.now());
    await this.#step('checking keys and ciphertext of every object');
    const missing: MissingPart[] = [];
    const held = new Set((await crypto.heldGenerations()).map((g) => `${g.domain}.${g.gen}`));
    const catalog = await objects.catalogObjects();
    const unopenable = catalog.filter((o) => !o.gens.some((g) => held.has(`${o.domain}.${g}`)));
    const opaque = Object.entries(await state.unopened());
    if (unopenable.length > 0 || opaque.length > 0) {
      const gens = new Set([...unopenable.map((o) => `${o.domain}.${Math.min(...o.gens)}`), ...opaque.map(([g]) => g)]);
      missing.push({
        part: 'key-history',
        reason:
          `${unopenable.length} object(s) and ${opaque.reduce((n, [, c]) => n + c, 0)} record(s) need key ` +
          `generations neither the kit nor the checkpoint holds: ${[...gens].slice(0, 8).join(', ')}`,
      });
    }
    const absent = await objects.missingObjects(catalog.map((o) => ({ id: o.id, domain: o.domain })));
    if (!absent.ok) {
      return incomplete(
        [
          {
            part: 'ciphertext',
            reason: `the relay did not answer: ${reasonOf(absent.error)}`,
            objects: catalog.length,
            of: catalog.length,
          },
        ],
        this.#w.now(),
      );
    }
    if (absent.value.length > 0) {
      missing.push({
        part: 'ciphertext',
        reason: `${absent.value.length} of ${catalog.length} objects are on no store this machine reaches (is the archive online?)`,
        objects: absent.value.length,
        of: catalog.length,
      });
    }
    if (missing.length > 0) return incomplete(missing, this.#w.now());
    const { at, by, applied } = restored.value;
    return { state: 'restored', checkpointAt: at, by, entries: applied, objects: catalog.length };
  }

  /**
   * The newest checkpoint this kit opens whose root an admin signed, taken in: its envelopes
   * through the replica (which learns the keyring from them), then — only once the root's
   * signer proves an admin of it — its key history, and the envelopes that history opens. A
   * root signed by anyone else (any member can sign one) is set aside and the next tried.
   */
  async #restoreCheckpoint(objects: MeshObjects): Promise<Result<{ at: number; by: string; applied: number }, string>> {
    const { crypto, state, roster } = this.#w;
    await this.#step('looking for recovery roots on the relay');
    const setAside: string[] = [];
    for (;;) {
      const chosen = await this.#chooseRoot(objects, setAside);
      if (!chosen.ok) {
        const aside =
          setAside.length > 0 ? `; ${setAside.length} root(s) signed by machines that are not admins set aside` : '';
        return err(`${chosen.error}${aside}`);
      }
      const { checkpointId, at, by } = chosen.value;
      const when = new Date(at).toISOString();
      await this.#step(`fetching the checkpoint of ${when}`);
      const bytes = await objects.recoveryCheckpoint(checkpointId);
      if (!bytes.ok)
        return err(`the root of ${when} names checkpoint ${checkpointId.slice(0, 12)}…, which the relay does not hold`);
      const opened = await crypto.openCheckpoint(checkpointId, bytes.value);
      if (!opened.ok) return err(`the checkpoint of ${when} does not open: ${reasonOf(opened.error)}`);
      await this.#step(`restoring ${opened.value.entries.length} records`);
      const log = await state.restore(opened.value.entries);
      await roster.refresh();
      if (!roster.isAdmin(by)) {
        setAside.push(checkpointId);
        continue;
      }
      if ((await crypto.adoptKeys(checkpointId)) > 0) await state.reopen();
      return ok({ at, by, applied: log.applied });
    }
  }

  /**
   * The best root of all the relay holds, read a page at a time: each page is judged together
   * with the best root so far, so the last judgement (which leaves its secret in the crypto
   * worker) is of the best of all, and only a page of roots is ever held.
   */
  async #chooseRoot(objects: MeshObjects, setAside: readonly string[]): Promise<Result<ChosenRoot, string>> {
    let best: { bytes: Uint8Array; root: ChosenRoot } | undefined;
    let count = 0;
    const refused: Record<string, number> = {};
    let after: string | undefined;
    do {
      const page = await objects.recoveryRoots(after);
      if (!page.ok) return err(`the relay did not answer: ${reasonOf(page.error)}`);
      count += page.value.listed;
      after = page.value.next;
      const judged = best ? [best.bytes, ...page.value.roots] : page.value.roots;
      if (judged.length === 0) continue;
      const chosen = await this.#w.crypto.chooseRoot(judged, setAside);
      if (chosen.ok) best = { bytes: judged[chosen.value.index]!, root: chosen.value };
      else if (chosen.error.type !== 'NoRoot' || !chosen.error.refused) return err(reasonOf(chosen.error));
      else for (const [type, n] of Object.entries(chosen.error.refused)) refused[type] = (refused[type] ?? 0) + n;
      if (page.value.listed > page.value.roots.length) {
        refused['unreadable'] = (refused['unreadable'] ?? 0) + page.value.listed - page.value.roots.length;
      }
    } while (after !== undefined);
    return best ? ok(best.root) : err(noRootReason(count, refused).reason);
  }
}

function kitErrorText(e: { readonly type: string; readonly reason?: string }): string {
  switch (e.type) {
    case 'WrongCode':
      return 'the recovery code does not open this kit';
    case 'MistypedCode':
      return `the recovery code is mistyped: ${e.reason ?? ''}`;
    case 'KitUnreadable':
      return `this file is not a recovery kit (${e.reason ?? ''})`;
    case 'AlreadyInMesh':
      return 'this machine already belongs to a mesh';
    default:
      return e.reason ?? e.type;
  }
}
