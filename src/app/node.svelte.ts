/**
 * UI state for this machine: owns the crypto worker and the MeshNode, and
 * mirrors the node's snapshots into runes for the components. Components call
 * its methods; they never reach the worker or the database themselves.
 */
import { wrap } from 'comlink';
import type { CryptoService } from '../runtime/crypto-service.js';
import type { MlsService } from '../runtime/mls-service.js';
import { defaultRelayUrl, MeshNode, type NodeSnapshot } from '../runtime/mesh-node.js';
import type { Result } from '../core/result.js';
import type { ColumnValue } from '../core/schema.js';
import type { PrivacyClass } from '../core/sync-manifest.js';

export class NodeStore {
  snapshot = $state<NodeSnapshot | undefined>(undefined);
  error = $state('');
  persisted = $state<boolean | undefined>(undefined);
  #node: MeshNode | undefined;

  async start(): Promise<void> {
    if (!isSecureContext) {
      this.error = 'This page needs a secure context (https:// or http://127.0.0.1) for its keys and offline mode.';
      return;
    }
    try {
      // eslint-disable-next-line svelte/prefer-svelte-reactivity -- Vite's worker URL idiom, not state
      const worker = new Worker(new URL('../../workers/crypto.worker.ts', import.meta.url), {
        type: 'module',
        name: 'crypto',
      });
      // eslint-disable-next-line svelte/prefer-svelte-reactivity -- Vite's worker URL idiom, not state
      const mlsWorker = new Worker(new URL('../../workers/mls.worker.ts', import.meta.url), {
        type: 'module',
        name: 'mls',
      });
      this.#node = await MeshNode.open(wrap<CryptoService>(worker), wrap<MlsService>(mlsWorker));
      this.#node.subscribe((s) => (this.snapshot = s));
      this.persisted = 'storage' in navigator ? await navigator.storage.persist().catch(() => false) : false;
    } catch (e) {
      this.error = `Could not start this machine: ${(e as Error).message}`;
    }
  }

  #require(): MeshNode {
    if (!this.#node) throw new Error('node not started');
    return this.#node;
  }

  async createMesh(name: string): Promise<void> {
    await this.#guard(() => this.#require().createMesh(name, defaultRelayUrl(location)));
  }

  async join(ticket: string, name: string): Promise<void> {
    await this.#guard(async () => {
      const joined = await this.#require().join(ticket, name);
      if (!joined.ok) throw new Error(describe(joined.error));
    });
  }

  async cancelJoin(): Promise<void> {
    await this.#guard(() => this.#require().cancelJoin());
  }

  async invite(): Promise<string> {
    let ticket = '';
    await this.#guard(async () => void (ticket = await this.#require().invite()));
    return ticket;
  }

  async answerPairing(inv: string, confirmed: boolean, by: 'code' | 'vouches' = 'code'): Promise<void> {
    await this.#guard(() => this.#require().answerPairing(inv, confirmed, by));
  }

  setVouchThreshold(k: number): Promise<boolean> {
    return this.#write(() => this.#require().setVouchThreshold(k));
  }

  vouch(fingerprint: string): Promise<boolean> {
    return this.#write(() => this.#require().vouch(fingerprint));
  }

  async answerJoin(confirmed: boolean): Promise<void> {
    await this.#guard(() => this.#require().answerJoin(confirmed));
  }

  saveProfile(row: string, cols: Record<string, ColumnValue>): Promise<boolean> {
    return this.#write(() => this.#require().editProfile(row, cols));
  }

  deleteProfile(row: string): Promise<boolean> {
    return this.#write(() => this.#require().deleteProfile(row));
  }

  removeMachine(signer: string): Promise<boolean> {
    return this.#write(() => this.#require().removeMachine(signer));
  }

  setTrusted(signer: string, trusted: boolean): Promise<boolean> {
    return this.#write(() => this.#require().setTrusted(signer, trusted));
  }

  setTableClass(table: string, privacy: PrivacyClass): Promise<boolean> {
    return this.#write(() => this.#require().setTableClass(table, privacy));
  }

  async narrowTable(table: string, privacy: PrivacyClass | undefined): Promise<void> {
    await this.#guard(() => this.#require().narrowTable(table, privacy));
  }

  createDomain(name: string, purpose: string, readers: readonly string[]): Promise<boolean> {
    return this.#write(() => this.#require().createDomain(name, purpose, readers));
  }

  addDomainReader(domain: string, signer: string, history: 'forward' | 'full' | 'fresh'): Promise<boolean> {
    return this.#write(() => this.#require().addDomainReader(domain, signer, history));
  }

  removeFromDomain(domain: string, signer: string): Promise<boolean> {
    return this.#write(() => this.#require().removeFromDomain(domain, signer));
  }

  writeNote(domain: string, title: string, text: string): Promise<boolean> {
    return this.#write(() => this.#require().writeNote(domain, title, text));
  }

  deleteNote(row: string): Promise<boolean> {
    return this.#write(() => this.#require().deleteNote(row));
  }

  /** Sealed rows held but unreadable here, by domain, and the result of trying every key on them. */
  async unreadable(): Promise<string> {
    let text = '';
    await this.#guard(async () => {
      const { byDomain, attempt } = await this.#require().unreadable();
      const held = Object.entries(byDomain)
        .map(([d, n]) => `${n} of ${d}`)
        .join(', ');
      text = attempt.ok
        ? `${attempt.value.opened} opened with one of ${attempt.value.keys} keys (${held || 'none held'})`
        : `${attempt.error.type}: none of ${attempt.error.keys} keys opens any of ${attempt.error.envelopes} sealed rows held (${held || 'none held'})`;
    });
    return text;
  }

  async #write(action: () => Promise<Result<unknown, { type: string; reason?: string }>>): Promise<boolean> {
    let done = false;
    await this.#guard(async () => {
      const result = await action();
      if (!result.ok) throw new Error(describe(result.error));
      done = true;
    });
    return done;
  }

  async #guard(action: () => Promise<void>): Promise<void> {
    this.error = '';
    try {
      await action();
    } catch (e) {
      this.error = (e as Error).message;
    }
  }
}

function describe(error: { type: string; reason?: string }): string {
  return error.reason ? `${error.type}: ${error.reason}` : error.type;
}
