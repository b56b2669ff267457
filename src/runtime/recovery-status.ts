/**
 * How a restore from a recovery kit goes, and the last checkpoint an admin wrote (mesh-recovery.ts):
 * kept in the mesh record (mesh-meta.ts) and shown by the UI.
 */

/** A part of what recovery needs that this machine could not get, and why. */
export type MissingPart =
  | { readonly part: 'checkpoint'; readonly reason: string }
  | { readonly part: 'key-history'; readonly reason: string }
  | { readonly part: 'ciphertext'; readonly reason: string; readonly objects: number; readonly of: number };

export type RecoveryStatus =
  | { readonly state: 'restoring'; readonly step: string }
  | {
      readonly state: 'restored';
      readonly checkpointAt: number;
      readonly by: string;
      readonly entries: number;
      readonly objects: number;
    }
  | { readonly state: 'incomplete'; readonly missing: readonly MissingPart[]; readonly checkedAt: number };

/** The last checkpoint this admin wrote. */
export type CheckpointMark = {
  readonly at: number;
  readonly rootId: string;
  readonly checkpointId: string;
  readonly entries: number;
  readonly bytes: number;
  readonly kits: number;
  /** The log's length when it was written: nothing new, no new checkpoint. */
  readonly logEnd: number;
};

/** Why no root would do, out of `count` roots of which `refused` did not open (by refusal type). */
export function noRootReason(
  count: number,
  refused: Readonly<Record<string, number>>,
): { reason: string; refused: Readonly<Record<string, number>> } {
  const why = Object.entries(refused)
    .map(([type, n]) => `${n} ${type}`)
    .join(', ');
  const reason =
    count === 0
      ? 'the relay holds no recovery root for this mesh'
      : `none of the ${count} recovery roots opens with this kit${why ? ` (${why})` : ''}`;
  return { reason, refused };
}
