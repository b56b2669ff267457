/**
 * Who may write: a signer is trusted when it is one of the trust anchors this
 * machine paired with, listed in the materialised keyring (CONTROL domain), or
 * this machine itself. Anchors act as admins: the founding machine trusts itself,
 * a joiner trusts whoever admitted it. Keyring rows come only from admins, so
 * trust flows from the anchors; local writes pass the same check as remote ones.
 */
import type { ReplicaTx } from './store.js';

export type Role = 'admin' | 'member';

export interface TrustPolicy {
  roleOf(tx: ReplicaTx, signer: string): Promise<Role | undefined>;
}

export function keyringTrust(self: string, anchors: () => readonly string[]): TrustPolicy {
  return {
    async roleOf(tx, signer) {
      if (anchors().includes(signer)) return 'admin';
      const entry = await tx.getRow('keyring', signer);
      const role = entry?.cells['role']?.value;
      if (role === 'admin' || role === 'member') return role;
      return signer === self ? 'member' : undefined;
    },
  };
}
