/**
 * Which tables exist, which domain each belongs to, and which columns they take.
 * An event naming a table that is not registered here, or placing a table in the
 * wrong domain, is refused: no machine materialises state it was not built for.
 */

export type DomainName = 'CONTROL' | 'GENERAL';
export const DOMAINS: readonly DomainName[] = ['CONTROL', 'GENERAL'];

export type ColumnValue = string | number | boolean | null;

export type TableSpec = {
  readonly domain: DomainName;
  /** Only machines holding the admin role may write this table. */
  readonly adminOnly: boolean;
  readonly columns: Readonly<Record<string, 'string' | 'number' | 'boolean'>>;
};

export const TABLES = {
  /** Trusted machines: row = signer id (hex); the mesh's own control record. */
  keyring: {
    domain: 'CONTROL',
    adminOnly: true,
    columns: { endpoint: 'string', name: 'string', role: 'string' },
  },
  /** Field devices and their settings, edited by people in the UI. */
  device_profiles: {
    domain: 'GENERAL',
    adminOnly: false,
    columns: { name: 'string', location: 'string', schedule: 'string', notes: 'string', active: 'boolean' },
  },
} as const satisfies Record<string, TableSpec>;

export type TableName = keyof typeof TABLES;

export function tableSpec(name: string): TableSpec | undefined {
  return Object.hasOwn(TABLES, name) ? TABLES[name as TableName] : undefined;
}

export function isDomainName(value: unknown): value is DomainName {
  return typeof value === 'string' && (DOMAINS as readonly string[]).includes(value);
}
