/**
 * Chain naming: each signer writes one hash chain per lane, and in a created domain one
 * per domain, key generation and lane (SSP/1 "Syncing mutable state"; lanes:
 * sync-manifest.ts). A created domain's readers may hold only some of its generations — a
 * machine let in `forward` or `fresh`, or let in again after a removal, never holds the older
 * ones — so a chain never spans two generations: every event a reader can open links to
 * events it can open too. (Events written before chains carried their generation form one
 * chain without it.) A chain
 * is named by the signer id and a suffix; a keyring removal records how far each chain of
 * the removed signer is honoured (its high-water marks), the created-domain ones as the
 * string column `domain_hwms`. Kept apart from the privacy manifest so that events,
 * stores and trust can name chains without depending on the manifest's policy code.
 */
import { isBuiltInDomain, type DomainName } from './schema.js';

/** The lane part of a chain name (the privacy class an event was written under: sync-manifest.ts `Lane`). */
export type ChainLane = 'public' | 'trusted' | 'local';

/**
 * The name one signer's chain is kept under: one chain per lane, and, in a
 * created domain (not CONTROL or GENERAL), one per domain and lane — a machine
 * that stores such a domain's rows without reading them never needs to link
 * them, so they must not sit in the chains it does read. The public lane of
 * the built-in domains keeps the bare signer id.
 */
export function chainKey(signer: string, lane: ChainLane | undefined, domain?: DomainName, gen?: number): string {
  return `${signer}${chainSuffix(lane, domain, gen)}`;
}

/**
 * A removal's marks for created-domain chains, as its string column
 * `domain_hwms`: "SUFFIX=seq,…" sorted, where SUFFIX is `chainSuffix` without
 * the leading "@" (`RESTRICTED#2`, `RESTRICTED#2/trusted`, and `RESTRICTED` for
 * the chain of events that name no generation).
 */
export function formatDomainMarks(marks: Readonly<Record<string, number>>): string {
  return Object.entries(marks)
    .map(([suffix, seq]) => `${suffix.replace(/^@/, '')}=${seq}`)
    .sort()
    .join(',');
}

const DOMAIN_MARK = /^[A-Z][A-Z0-9_]{1,31}(#[1-9]\d{0,9})?(\/(trusted|local))?=\d{1,15}$/;

/** Parses `domain_hwms`; undefined when it is not exactly that shape. */
export function parseDomainMarks(text: unknown): Record<string, number> | undefined {
  if (text === undefined) return {};
  if (typeof text !== 'string') return undefined;
  const marks: Record<string, number> = {};
  for (const part of text === '' ? [] : text.split(',')) {
    if (!DOMAIN_MARK.test(part)) return undefined;
    const [suffix, seq] = part.split('=') as [string, string];
    if (Object.hasOwn(marks, `@${suffix}`)) return undefined;
    marks[`@${suffix}`] = Number(seq);
  }
  return marks;
}

/**
 * The part of a chain key after the signer: `@DOMAIN#gen` for a created domain (`@DOMAIN` for
 * events that name no generation), `/lane` off the public lane.
 */
export function chainSuffix(lane: ChainLane | undefined, domain?: DomainName, gen?: number): string {
  const d = domain === undefined || isBuiltInDomain(domain) ? '' : `@${domain}${gen === undefined ? '' : `#${gen}`}`;
  return lane === undefined || lane === 'public' ? d : `${d}/${lane}`;
}
