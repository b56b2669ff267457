/**
 * Which tables exist, which domain each belongs to, which columns they take and
 * who may write them. An event naming a table that is not registered here, or
 * placing a table in the wrong domain, is refused: no machine materialises state
 * it was not built for.
 *
 * The CONTROL tables are the mesh's own records (SSP/1 "Revoking a machine"):
 *   keyring   row = signer id (hex)    admitted machines: endpoint id, frame key (the
 *                                     X25519 key its frames are sealed with), name,
 *                                     trusted (may hold Trusted tables), recovery (the
 *                                     machine of a recovery kit: admitted, never
 *                                     delivered to; recovery/kit.ts); removal is
 *                                     permanent
 *   roles     row = signer id (hex)    grow-only: a role is granted, never lowered
 *                                     (taking power away is a keyring removal)
 *   bindings  row = endpoint id (hex)  which signer speaks through which endpoint
 *   vouches   row = voucher:candidate  a member vouching for a newcomer, named by the
 *                                     short fingerprint of its signing key
 *   settings  row = setting name       mesh-wide settings (`vouch_k`: vouches that
 *                                     let an admin admit a machine, default 2)
 *   sync_manifest row = data table    its privacy class: public | trusted | local
 *                                     (sync-manifest.ts; no row means local)
 *   domains   row = domain name        data domains an admin created beyond GENERAL, and
 *                                     what they are for; who may read one is its MLS group
 *   key_packages row = signer:mls     a machine's standing MLS key package (base64url),
 *                                     with which an admin adds it to a domain
 *   placement row = signer (hex)       which domains' objects a machine stores (copies from
 *                                     the relay's blind store, readable or not): `*` for
 *                                     every domain, or names separated by commas
 *   object_tables row = object table   whether its rows may be deleted by delete objects
 *                                     (object/deletes.ts): `deletable` once an admin says
 *                                     so, for good (ranked: a delete is a permanent
 *                                     tombstone, so the permission behind it never lapses)
 *   releases  row = release digest     a build of the app the mesh's admins signed (the
 *                                     SHA-256 of its release manifest, core/release.ts):
 *                                     its version; signed by the admin's event signature
 */

/**
 * A domain: CONTROL and GENERAL exist in every mesh; admins create narrower
 * data domains (seed 003's RESTRICTED) by name, recorded in `domains`.
 */
export type DomainName = string;
export const DOMAINS: readonly DomainName[] = ['CONTROL', 'GENERAL'];
const DOMAIN_NAME = /^[A-Z][A-Z0-9_]{1,31}$/;

export type ColumnValue = string | number | boolean | null;

/**
 * Who may write a row: admins only, anyone trusted, or only the signer the row names —
 * as its first segment (`own-prefix`: `<signer>:…`) or, in a table whose rows name their
 * domain, its second (`domain-own`: `<DOMAIN>:<signer>:…`).
 */
export type WritePolicy = 'admin' | 'member' | 'self-or-admin' | 'own-prefix' | 'domain-own';

export type TableSpec = {
  /**
   * The domain of every row, or `row` (not a domain name: those are capitals):
   * the data domain the row key names (`<DOMAIN>:<id>`).
   */
  readonly domain: DomainName;
  readonly write: WritePolicy;
  /** Rows may be deleted (tombstoned) with op "del". */
  readonly deletable: boolean;
  /** Rows leave only by op "remove": a permanent tombstone with a high-water mark. */
  readonly removable: boolean;
  readonly columns: Readonly<Record<string, 'string' | 'number' | 'boolean'>>;
  /** Columns merged by rank (higher wins, then stamp) instead of last-writer-wins. */
  readonly ranked?: Readonly<Record<string, readonly string[]>>;
  /** String columns that take only these values (merged last-writer-wins like any other). */
  readonly choices?: Readonly<Record<string, readonly string[]>>;
};

export const ROLE_RANK = ['member', 'admin'] as const;
/** Whether an object table's rows may be deleted (`object_tables.rows`), lowest first. */
export const OBJECT_ROWS = ['append-only', 'deletable'] as const;
export type Role = (typeof ROLE_RANK)[number];

export const TABLES = {
  keyring: {
    domain: 'CONTROL',
    write: 'admin',
    deletable: false,
    removable: true,
    columns: { endpoint: 'string', frame: 'string', name: 'string', trusted: 'boolean', recovery: 'boolean' },
  },
  roles: {
    domain: 'CONTROL',
    write: 'admin',
    deletable: false,
    removable: false,
    columns: { role: 'string' },
    ranked: { role: ROLE_RANK },
  },
  bindings: {
    domain: 'CONTROL',
    write: 'self-or-admin',
    deletable: true,
    removable: false,
    columns: { signer: 'string' },
  },
  vouches: {
    domain: 'CONTROL',
    write: 'own-prefix',
    deletable: true,
    removable: false,
    columns: { candidate: 'string', note: 'string' },
  },
  settings: {
    domain: 'CONTROL',
    write: 'admin',
    deletable: false,
    removable: false,
    columns: { value: 'number' },
  },
  sync_manifest: {
    domain: 'CONTROL',
    write: 'admin',
    deletable: false,
    removable: false,
    columns: { class: 'string' },
    choices: { class: ['public', 'trusted', 'local'] },
  },
  domains: {
    domain: 'CONTROL',
    write: 'admin',
    deletable: false,
    removable: false,
    columns: { purpose: 'string' },
  },
  key_packages: {
    domain: 'CONTROL',
    write: 'own-prefix',
    deletable: true,
    removable: false,
    columns: { kp: 'string' },
  },
  placement: {
    domain: 'CONTROL',
    write: 'admin',
    deletable: false,
    removable: false,
    columns: { domains: 'string' },
  },
  object_tables: {
    domain: 'CONTROL',
    write: 'admin',
    deletable: false,
    removable: false,
    columns: { rows: 'string' },
    choices: { rows: OBJECT_ROWS },
    ranked: { rows: OBJECT_ROWS },
  },
  releases: {
    domain: 'CONTROL',
    write: 'admin',
    deletable: false,
    removable: false,
    columns: { version: 'string' },
  },
  /** Notes kept in a domain the writer picks: the row key names it (`RESTRICTED:…`). */
  field_notes: {
    domain: 'row',
    write: 'member',
    deletable: true,
    removable: false,
    columns: { title: 'string', text: 'string' },
  },
  /**
   * SOP/1 catalog: one object's sealed manifest (base64url), published in the object's
   * domain by the machine that formed it. Row `<DOMAIN>:<producer>:<storage id>`: nobody
   * can overwrite another machine's manifest, and a storage-only machine holds the sealed
   * row without learning anything of the object, not even its schema.
   */
  object_catalog: {
    domain: 'row',
    write: 'domain-own',
    deletable: false,
    removable: false,
    columns: { manifest: 'string' },
  },
  /**
   * SOP/1 access records: an object secret wrapped under one KEK generation (base64url,
   * core/object/access.ts). Row `<DOMAIN>:<writer>:<storage id>:<generation>`; a reader
   * tries every record of an object under the generations it holds.
   */
  object_access: {
    domain: 'row',
    write: 'domain-own',
    deletable: false,
    removable: false,
    columns: { wrapped: 'string' },
  },
  /** Field devices and their settings, edited by people in the UI. */
  device_profiles: {
    domain: 'GENERAL',
    write: 'member',
    deletable: true,
    removable: false,
    columns: { name: 'string', location: 'string', schedule: 'string', notes: 'string', active: 'boolean' },
  },
} as const satisfies Record<string, TableSpec>;

export type TableName = keyof typeof TABLES;

export function tableSpec(name: string): TableSpec | undefined {
  return Object.hasOwn(TABLES, name) ? TABLES[name as TableName] : undefined;
}

export function isDomainName(value: unknown): value is DomainName {
  return typeof value === 'string' && DOMAIN_NAME.test(value);
}

/** Every domain of a mesh: the built-in ones, then those its `domains` table names (by row key), once each. */
export function meshDomainNames(rows: readonly { readonly row: string }[]): DomainName[] {
  return [...new Set([...DOMAINS, ...rows.map((r) => r.row).filter(isDomainName)])];
}

/** CONTROL and GENERAL: in every mesh, every machine a member. */
export function isBuiltInDomain(domain: DomainName): boolean {
  return DOMAINS.includes(domain);
}

/** The domain a row of `table` lives in; undefined for an unknown table or a row naming no data domain. */
export function domainOf(table: string, row: string): DomainName | undefined {
  const spec = tableSpec(table);
  if (!spec) return undefined;
  if (spec.domain !== 'row') return spec.domain;
  const domain = row.slice(0, Math.max(0, row.indexOf(':')));
  return isDomainName(domain) && domain !== 'CONTROL' ? domain : undefined;
}

export function isRole(value: unknown): value is Role {
  return typeof value === 'string' && (ROLE_RANK as readonly string[]).includes(value);
}
