/**
 * Who may write what (SSP/1 "Revoking a machine"). Every event resolves its
 * signer through the materialised keyring at admission time:
 *
 *  - removed with a high-water mark (of the event's lane) below the event's seq →
 *    revoked (kept in the log for forwarding and for a later recount, never
 *    materialised);
 *  - not known at all → parked until the keyring learns it;
 *  - known but lacking the role the table demands → parked until a grant arrives.
 *
 * Roles only grow and removals are decided by sequence number, so every replica
 * reaches the same verdict for every event once it holds the same control
 * records, whatever order they came in. Anchors are the admins this machine
 * trusts before any control record: the founder, and whoever admitted it.
 */
import type { EventBody } from './event.js';
import { internedHex } from './bytes.js';
import { isBuiltInDomain, isRole, tableSpec, type Role } from './schema.js';
import { chainSuffix } from './chains.js';
import type { RowState } from './merge.js';
import { run, type Awaitable, type Steps } from './steps.js';
import type { ReplicaTx } from './store.js';

export type TrustContext = {
  /** This machine's signer id (hex). */
  readonly self: string;
  readonly anchors: () => readonly string[];
};

export type Verdict =
  | { readonly type: 'Allowed'; readonly role: Role }
  | { readonly type: 'Revoked'; readonly signer: string; readonly seq: number; readonly hwm: number }
  | { readonly type: 'UnknownSigner'; readonly signer: string }
  | {
      readonly type: 'NotAuthorized';
      readonly signer: string;
      readonly table: string;
      readonly reason: string;
      /** A later role grant cannot change this verdict. */
      readonly final: boolean;
    };

/** The role of a signer that is not an anchor, from the control records. */
function* grantedRole(
  tx: ReplicaTx,
  signer: string,
  trust: TrustContext,
  keyring: RowState | undefined,
): Steps<Role | undefined> {
  const roles = (yield tx.getRow('roles', signer)) as RowState | undefined;
  const granted = roles?.cells['role']?.value;
  if (isRole(granted)) return granted;
  return keyring !== undefined || signer === trust.self ? 'member' : undefined;
}

/** The verdict for one event body, from the control records this replica holds now. */
export function authorize(tx: ReplicaTx, body: EventBody, trust: TrustContext): Awaitable<Verdict> {
  return run(authorization(tx, body, trust));
}

/** `authorize` as steps (steps.ts), for callers that are steps themselves. */
export function* authorization(tx: ReplicaTx, body: EventBody, trust: TrustContext): Steps<Verdict> {
  const signer = internedHex(body.signer);
  const keyring = (yield tx.getRow('keyring', signer)) as RowState | undefined;
  const removed = keyring?.removed;
  if (removed) {
    // Local-lane events never leave their writer, so no removal mark can speak for them.
    const lane = body.lane ?? 'public';
    const hwm =
      lane === 'local'
        ? Infinity
        : !isBuiltInDomain(body.domain)
          ? // A created domain's chain keeps only what a removal names (a remover that cannot read it names none).
            (removed.domains?.[chainSuffix(lane, body.domain, body.gen)] ?? 0)
          : lane === 'public'
            ? removed.hwm
            : removed.trustedHwm;
    if (body.seq > hwm) return { type: 'Revoked', signer, seq: body.seq, hwm };
  }
  // Anchors are admins before any control record (and most events of a small mesh are theirs).
  const role = trust.anchors().includes(signer) ? 'admin' : yield* grantedRole(tx, signer, trust, keyring);
  if (!role) return { type: 'UnknownSigner', signer };
  const denied = (reason: string, final = false): Verdict => ({
    type: 'NotAuthorized',
    signer,
    table: body.table,
    reason,
    final,
  });
  switch (tableSpec(body.table)?.write) {
    case 'admin':
      if (role !== 'admin') return denied('admin role required');
      if (body.op === 'remove' && body.row === signer) return denied('a machine cannot remove itself', true);
      break;
    case 'self-or-admin':
      if (role !== 'admin' && (body.op !== 'put' || body.cols['signer'] !== signer)) {
        return denied('only the bound signer or an admin');
      }
      break;
    case 'own-prefix':
      if (!body.row.startsWith(`${signer}:`)) return denied('row must start with the writer id', true);
      break;
    case 'domain-own':
      if (body.row.split(':')[1] !== signer) return denied('row must name the writer after its domain', true);
      break;
    case 'member':
      break;
    case undefined:
      return denied('unknown table', true);
  }
  return { type: 'Allowed', role };
}
