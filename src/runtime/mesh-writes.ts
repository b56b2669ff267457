/**
 * What a human changes through this machine: profiles, notes, privacy classes, trust,
 * placement, signed releases, and removing a machine. Each is one signed local write
 * (state-service.ts), and every local write — these and those the other parts make (pairing,
 * domains, recovery, objects) — goes through `local`, which tells the screen, the other tabs
 * and the peers. MeshNode wires it (mesh-node.ts) and offers it to the UI as `writes`.
 */
import type { WriteError, WriteOutcome } from '../core/replica.js';
import { err, type Result } from '../core/result.js';
import { domainOf, type ColumnValue, type DomainName } from '../core/schema.js';
import type { Resurrection } from '../core/store.js';
import { isClassifiable, isPrivacyClass, type PrivacyClass } from '../core/sync-manifest.js';
import { RELEASES_TABLE } from './code-check.js';
import type { SessionPort } from './machine-env.js';
import type { MeshMetaKeeper } from './mesh-meta.js';
import { PLACEMENT_TABLE } from './mesh-objects.js';
import type { NodeFeed } from './node-feed.js';
import type { StatePort } from './ports.js';

export type Written = Promise<Result<WriteOutcome, WriteError>>;

export type WritesDeps = {
  readonly state: Pick<StatePort, 'write' | 'delete' | 'remove' | 'askAgain' | 'offerSoon'>;
  readonly feed: Pick<NodeFeed, 'rowsChanged' | 'publish' | 'publishSoon' | 'notice'>;
  readonly tabs: Pick<SessionPort, 'announceChange'>;
  readonly meta: Pick<MeshMetaKeeper, 'value' | 'save'>;
  /** Whether this machine is a member, and reads `domain`. */
  readonly member: () => boolean;
  readonly reads: (domain: DomainName) => boolean;
  /** Whether `signer` is a machine of the mesh, not removed. */
  readonly isLive: (signer: string) => boolean;
  /** Rows this machine's write brought back after a delete: told to the human (row-notices.ts). */
  readonly resurrected: (resurrections: readonly Resurrection[]) => void;
  /** The keyring changed: peers and their lanes are read again. */
  readonly refreshPeers: () => Promise<void>;
  /** A machine was removed: the relay's admission list and the domains' groups follow. */
  readonly removed: () => Promise<void>;
};

const invalidEdit = (reason: string): Written => Promise.resolve(err({ type: 'InvalidEdit', reason }));

export class MeshWrites {
  readonly #d: WritesDeps;

  constructor(deps: WritesDeps) {
    this.#d = deps;
  }

  /** Runs one local write; once it is durable, the screen, the other tabs and the peers hear of it. */
  async local(write: () => Written): Written {
    const written = await write();
    if (written.ok) {
      const { feed, state } = this.#d;
      feed.rowsChanged();
      this.#d.resurrected(written.value.resurrections);
      this.#d.tabs.announceChange();
      // Offered with the rest of a burst of writes, not one frame each (state-service.ts).
      void state.offerSoon().catch((e: unknown) => feed.notice('warning', `sync: ${String(e)}`));
      // Durable now; the screen follows with the next snapshot (coalesced with the burst's others).
      feed.publishSoon();
    }
    return written;
  }

  /**
   * Writes cells of any row of a known table this machine can seal for (the loopback API,
   * src/node-api/): the mesh's rules — who may write which table — are checked by the state
   * plane, as for every write.
   */
  writeRow(table: string, row: string, cols: Record<string, ColumnValue>): Written {
    const refused = this.#unwritable(table, row);
    return refused ?? this.local(() => this.#d.state.write(table, row, cols));
  }

  deleteRow(table: string, row: string): Written {
    const refused = this.#unwritable(table, row);
    return refused ?? this.local(() => this.#d.state.delete(table, row));
  }

  #unwritable(table: string, row: string): Written | undefined {
    const domain = domainOf(table, row);
    if (domain === undefined) return invalidEdit(`${table} has no row ${row}`);
    if (!this.#d.member() || !this.#d.reads(domain)) return invalidEdit(`this machine cannot write into ${domain}`);
    return undefined;
  }

  editProfile(row: string, cols: Record<string, ColumnValue>): Written {
    return this.local(() => this.#d.state.write('device_profiles', row, cols));
  }

  deleteProfile(row: string): Written {
    return this.local(() => this.#d.state.delete('device_profiles', row));
  }

  /** Admin: sets a data table's mesh-wide privacy class (a signed control record). */
  setTableClass(table: string, privacy: PrivacyClass): Written {
    if (!isClassifiable(table) || !isPrivacyClass(privacy)) return invalidEdit(`${table} takes no privacy class`);
    return this.local(() => this.#d.state.write('sync_manifest', table, { class: privacy }));
  }

  /**
   * Narrows a table's class on this machine only (`undefined` lifts the narrowing). It can
   * never widen: the narrower of this and the mesh's class applies. Rows withheld while a
   * table was local here are asked for again once it no longer is.
   */
  async narrowTable(table: string, privacy: PrivacyClass | undefined): Promise<void> {
    const { meta, tabs, feed, state } = this.#d;
    const current = meta.value;
    if (!current || !isClassifiable(table)) return;
    const others = Object.entries(current.narrowing ?? {}).filter(([t]) => t !== table);
    const chosen = privacy && isPrivacyClass(privacy) ? [[table, privacy] as const] : [];
    await meta.save({ ...current, narrowing: Object.fromEntries([...others, ...chosen]) });
    tabs.announceChange();
    await feed.publish();
    await state.askAgain();
  }

  /** Admin: marks a machine trusted (it may then hold Trusted tables) or not. */
  setTrusted(signer: string, trusted: boolean): Written {
    if (!this.#d.isLive(signer)) return invalidEdit('not a machine of this mesh');
    return this.local(async () => {
      const written = await this.#d.state.write('keyring', signer, { trusted });
      // Re-reads the keyring: a peer trusted now is offered the trusted lane from here on.
      if (written.ok) await this.#d.refreshPeers();
      return written;
    });
  }

  /** Writes a note into a domain this machine can read. */
  writeNote(domain: DomainName, title: string, text: string, id?: string): Written {
    const row = `${domain}:${id ?? crypto.randomUUID()}`;
    if (!this.#d.member() || !this.#d.reads(domain)) return invalidEdit(`this machine cannot write into ${domain}`);
    return this.local(() => this.#d.state.write('field_notes', row, { title, text }));
  }

  deleteNote(row: string): Written {
    return this.local(() => this.#d.state.delete('field_notes', row));
  }

  /** Admin: which domains' objects a machine stores (`*`, names separated by commas, or '' for none). */
  setPlacement(signer: string, domains: string): Written {
    return this.local(() => this.#d.state.write(PLACEMENT_TABLE, signer, { domains }));
  }

  /** An admin signs a build of the app: its release digest and version (runtime/code-check.ts). */
  signRelease(digest: string, version: string): Written {
    return this.local(() => this.#d.state.write(RELEASES_TABLE, digest, { version }));
  }

  /** Removes a machine for good: its later events, bindings and sessions fail closed everywhere. */
  async removeMachine(signer: string): Written {
    const removed = await this.local(() => this.#d.state.remove(signer));
    if (removed.ok) await this.#d.removed();
    return removed;
  }
}
