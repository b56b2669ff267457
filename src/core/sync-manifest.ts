/**
 * SyncManifest (seed 004): a default-deny registry of which machines may hold a
 * copy of each table's rows. The domain key still decides who can read them.
 *
 *   public   any paired machine of the mesh
 *   trusted  only machines an admin marked trusted (keyring `trusted`); admins are
 *            trusted (they could mark themselves anyway)
 *   local    never leaves this machine and is never taken in from a peer
 *
 * The mesh-wide class of a data table is an admin-signed CONTROL record,
 * `sync_manifest` row = table name, column `class`. A table with no record is
 * local. Each machine may narrow a class for itself (public → trusted → local),
 * never widen it. The mesh's own CONTROL tables are not classified: every member
 * must hold them for trust to work at all, so they are always public.
 *
 * Lanes keep the per-signer hash chains whole when copies are withheld. The
 * class a writer holds at write time picks the event's lane, and each lane of a
 * signer is its own chain (seq and prev), so a peer that may not hold the
 * trusted lane sees an unbroken public lane. Senders filter by lane only, never
 * by a class that may have changed since: that is what keeps chains whole.
 * Receivers also check the table against their own manifest and withhold what
 * is local (or trusted, when they are not) for them: they keep its identity
 * only (store.ts WithheldRecord), it still counts as a link of its chain so the
 * events after it are not stalled, and they ask for it again (sync.ts `want`)
 * once their view widens — the class record arrived, a narrowing was lifted, or
 * this machine became trusted — so every machine ends with the same rows it may
 * hold, whatever order things arrived in. A machine trusted later sweeps each
 * peer's trusted lane, which it was never offered (sync.ts `sweep`).
 *
 * Known limits, deliberately:
 *   - senders filter by lane, not by a table's current class: a public-lane row
 *     written before its table was classed trusted still reaches untrusted
 *     members, which decrypt it (they hold the domain key) and then withhold it.
 *     The class decides who holds a copy, the domain key who can read; a row
 *     that must stay from a machine belongs in a domain it is not a member of.
 *   - a machine does not forward what it withholds, so a peer that could reach
 *     the writer only through it would wait on a chain gap; on a relay every
 *     machine reaches every other, so the writer or another holder delivers it.
 *   - withdrawing trust leaves the trusted copies a machine already holds.
 */
import { after, type Awaitable } from './steps.js';
import type { ReplicaTx } from './store.js';
import { isRole, tableSpec } from './schema.js';
import type { TrustContext } from './trust.js';

export type PrivacyClass = 'public' | 'trusted' | 'local';
export const PRIVACY_CLASSES: readonly PrivacyClass[] = ['local', 'trusted', 'public'];

/** The lane of an event is the class its writer held for the table when it wrote. */
export type Lane = PrivacyClass;

export const MANIFEST_TABLE = 'sync_manifest';

export function isPrivacyClass(value: unknown): value is PrivacyClass {
  return typeof value === 'string' && (PRIVACY_CLASSES as readonly string[]).includes(value);
}

/** The narrower of two classes (local < trusted < public). */
export function narrower(a: PrivacyClass, b: PrivacyClass): PrivacyClass {
  return PRIVACY_CLASSES.indexOf(a) <= PRIVACY_CLASSES.indexOf(b) ? a : b;
}

/** Whether a table's class is decided by the manifest (data tables) rather than fixed (CONTROL). */
export function isClassifiable(table: string): boolean {
  const spec = tableSpec(table);
  return spec !== undefined && spec.domain !== 'CONTROL';
}

/** What decides holding and lanes on one machine; evaluated inside the store transaction. */
export interface PrivacyPolicy {
  /** The class of `table` here now: the mesh's record narrowed by this machine's own choice. */
  classOf(tx: ReplicaTx, table: string): Awaitable<PrivacyClass>;
  /** Whether this machine may hold trusted-lane events. */
  selfTrusted(tx: ReplicaTx): Awaitable<boolean>;
}

/** Whether a signer is trusted by the control records `tx` holds: an admin, or marked trusted. */
export async function isTrustedSigner(tx: ReplicaTx, signer: string, trust: TrustContext): Promise<boolean> {
  if (trust.anchors().includes(signer)) return true;
  const keyring = await tx.getRow('keyring', signer);
  if (!keyring || keyring.removed) return false;
  const role = (await tx.getRow('roles', signer))?.cells['role']?.value;
  return (isRole(role) && role === 'admin') || keyring.cells['trusted']?.value === true;
}

/**
 * The mesh-wide class of a table from the manifest records `tx` holds; without
 * a record, the class an admin told us while we joined (`provisional`), else local.
 */
export function meshClassOf(
  tx: ReplicaTx,
  table: string,
  provisional?: ReadonlyMap<string, PrivacyClass>,
): Awaitable<PrivacyClass> {
  if (!isClassifiable(table)) return 'public';
  return after(tx.getRow(MANIFEST_TABLE, table), (record) => {
    const value = record?.cells['class']?.value;
    if (isPrivacyClass(value)) return value;
    return provisional?.get(table) ?? 'local';
  });
}

/** This machine's own inputs to the manifest, kept outside the replicated state. */
export type LocalClassChoices = {
  /** Classes this machine narrowed for itself. */
  readonly narrowing: ReadonlyMap<string, PrivacyClass>;
  /** The manifest the admitting admin sent with the keys, until the signed records arrive. */
  readonly provisional: ReadonlyMap<string, PrivacyClass>;
};

/** The product's policy: the admin-signed manifest, narrowed by this machine's own choices. */
export function manifestPolicy(trust: TrustContext, choices: () => LocalClassChoices): PrivacyPolicy {
  return {
    classOf(tx, table) {
      const { narrowing, provisional } = choices();
      const local = isClassifiable(table) ? narrowing.get(table) : undefined;
      return after(meshClassOf(tx, table, provisional), (mesh) => (local ? narrower(mesh, local) : mesh));
    },
    selfTrusted: (tx) => isTrustedSigner(tx, trust.self, trust),
  };
}

/**
 * Every table public and this machine trusted: for tests and benchmarks of the
 * merge and delivery machinery that do not exercise classes. The product never
 * uses it (mesh-node.ts builds `manifestPolicy`).
 */
export const everyTablePublic: PrivacyPolicy = {
  classOf: () => 'public',
  selfTrusted: () => true,
};
