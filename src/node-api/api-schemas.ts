/**
 * The JSON Schemas (2020-12) of the headless node's API, version 1: request and response bodies
 * and query parameters, as the OpenAPI document (openapi.ts) names them and the server validates
 * them with Ajv.
 */

const cell = { type: ['string', 'number', 'boolean', 'null'] } as const;
export const text = (maxLength: number) => ({ type: 'string', minLength: 1, maxLength }) as const;
/** A domain's name as the mesh spells it (core/schema.ts `isDomainName`). */
const domainName = { type: 'string', pattern: '^[A-Z][A-Z0-9_]{1,31}$' } as const;
/** An object table's name as imports form it (core/object/csv-import.ts `tableName`). */
export const objectTable = { type: 'string', pattern: '^[a-z][a-z0-9_]{0,63}$' } as const;

export const SCHEMAS = {
  Error: {
    type: 'object',
    required: ['error'],
    additionalProperties: false,
    properties: {
      error: {
        type: 'object',
        required: ['type', 'reason'],
        additionalProperties: false,
        properties: { type: { type: 'string' }, reason: { type: 'string' } },
      },
    },
  },
  Status: {
    type: 'object',
    required: ['status', 'name', 'signer', 'fingerprint', 'relay', 'pending', 'dataVersion', 'machines', 'domains'],
    additionalProperties: false,
    properties: {
      status: { enum: ['new', 'joining', 'member', 'recovering'] },
      name: { type: 'string' },
      signer: { type: 'string' },
      fingerprint: { type: 'string' },
      relay: { type: 'string' },
      pending: { type: 'integer', minimum: 0 },
      dataVersion: { type: 'integer', minimum: 0 },
      machines: {
        type: 'array',
        items: {
          type: 'object',
          required: ['signer', 'name', 'role', 'trusted', 'removed'],
          additionalProperties: false,
          properties: {
            signer: { type: 'string' },
            name: { type: 'string' },
            role: { enum: ['admin', 'member'] },
            trusted: { type: 'boolean' },
            removed: { type: 'boolean' },
          },
        },
      },
      domains: {
        type: 'array',
        items: {
          type: 'object',
          required: ['domain', 'reads'],
          additionalProperties: false,
          properties: { domain: { type: 'string' }, reads: { type: 'boolean' } },
        },
      },
    },
  },
  Row: {
    type: 'object',
    required: ['row', 'alive', 'values'],
    additionalProperties: false,
    properties: {
      row: { type: 'string' },
      alive: { type: 'boolean' },
      values: { type: 'object', additionalProperties: cell },
    },
  },
  RowPage: {
    type: 'object',
    required: ['table', 'total', 'offset', 'rows'],
    additionalProperties: false,
    properties: {
      table: { type: 'string' },
      total: { type: 'integer', minimum: 0 },
      offset: { type: 'integer', minimum: 0 },
      rows: { type: 'array', items: { $ref: '#/components/schemas/Row' } },
    },
  },
  WriteRow: {
    type: 'object',
    required: ['cells'],
    additionalProperties: false,
    properties: {
      cells: {
        type: 'object',
        minProperties: 1,
        maxProperties: 64,
        propertyNames: { pattern: '^[a-z][a-z0-9_]{0,63}$' },
        additionalProperties: cell,
      },
    },
  },
  Invitation: {
    type: 'object',
    required: ['ticket'],
    additionalProperties: false,
    properties: { ticket: { type: 'string' } },
  },
  Pairings: {
    type: 'object',
    required: ['pairings'],
    additionalProperties: false,
    properties: {
      pairings: {
        type: 'array',
        items: {
          type: 'object',
          required: ['inv', 'name', 'fingerprint', 'confirmed', 'joinerConfirmed'],
          additionalProperties: false,
          properties: {
            inv: { type: 'string' },
            name: { type: 'string' },
            fingerprint: { type: 'string' },
            sas: { type: 'string' },
            confirmed: { type: 'boolean' },
            joinerConfirmed: { type: 'boolean' },
          },
        },
      },
    },
  },
  Answer: {
    type: 'object',
    required: ['confirmed'],
    additionalProperties: false,
    properties: { confirmed: { type: 'boolean' } },
  },
  Written: {
    type: 'object',
    required: ['written'],
    additionalProperties: false,
    properties: { written: { type: 'string' } },
  },
  ObjectSummary: {
    type: 'object',
    required: ['id', 'state', 'domain', 'producer', 'table', 'rows', 'formedAt', 'kind', 'readable', 'held', 'size'],
    additionalProperties: false,
    properties: {
      id: { type: 'string' },
      state: { enum: ['pending', 'refused', 'published', 'stored'] },
      domain: { type: ['string', 'null'] },
      producer: { type: ['string', 'null'] },
      table: { type: ['string', 'null'] },
      rows: { type: ['integer', 'null'], minimum: 0 },
      formedAt: { type: ['integer', 'null'] },
      kind: { enum: ['data', 'delete', 'compaction', 'unknown'] },
      readable: { type: 'boolean' },
      held: { type: 'boolean' },
      size: { type: ['integer', 'null'], minimum: 0 },
      reason: { type: 'string' },
    },
  },
  ObjectList: {
    type: 'object',
    required: ['objects'],
    additionalProperties: false,
    properties: { objects: { type: 'array', items: { $ref: '#/components/schemas/ObjectSummary' } } },
  },
  Manifest: {
    type: 'object',
    required: ['storageId', 'domain', 'table', 'producer', 'rows', 'bytes', 'time', 'partitions', 'schema', 'columns'],
    additionalProperties: false,
    properties: {
      storageId: { type: 'string' },
      domain: { type: 'string' },
      table: { type: 'string' },
      producer: { type: 'string' },
      rows: { type: 'integer', minimum: 0 },
      bytes: { type: 'integer', minimum: 0 },
      time: {
        oneOf: [
          { type: 'null' },
          {
            type: 'object',
            required: ['column', 'min', 'max'],
            additionalProperties: false,
            properties: { column: { type: 'string' }, min: { type: 'number' }, max: { type: 'number' } },
          },
        ],
      },
      partitions: { type: 'object', additionalProperties: { type: 'string' } },
      schema: {
        type: 'array',
        items: {
          type: 'object',
          required: ['name', 'type', 'nullable'],
          additionalProperties: false,
          properties: { name: { type: 'string' }, type: { type: 'string' }, nullable: { type: 'boolean' } },
        },
      },
      columns: {
        type: 'array',
        items: {
          type: 'object',
          required: ['name', 'nulls'],
          additionalProperties: false,
          properties: {
            name: { type: 'string' },
            nulls: { type: 'integer', minimum: 0 },
            min: { type: 'string' },
            max: { type: 'string' },
          },
        },
      },
      supersedes: { type: 'array', items: { type: 'string' } },
    },
  },
  ObjectDetail: {
    type: 'object',
    required: ['object', 'manifest'],
    additionalProperties: false,
    properties: {
      object: { $ref: '#/components/schemas/ObjectSummary' },
      manifest: { $ref: '#/components/schemas/Manifest' },
    },
  },
  QueryRequest: {
    type: 'object',
    required: ['sql'],
    additionalProperties: false,
    properties: {
      sql: text(10_000),
      limit: { type: 'integer', minimum: 1, maximum: 100_000 },
      domains: { type: 'array', maxItems: 64, items: domainName },
    },
  },
  QueryResult: {
    type: 'object',
    required: ['table', 'columns', 'rows', 'truncated', 'explain'],
    additionalProperties: false,
    properties: {
      table: { type: 'string' },
      columns: {
        type: 'array',
        items: {
          type: 'object',
          required: ['name', 'type'],
          additionalProperties: false,
          properties: { name: { type: 'string' }, type: { type: 'string' } },
        },
      },
      rows: { type: 'array', items: { type: 'array', items: cell } },
      rowIds: { type: 'array', items: { type: 'string' } },
      truncated: { type: 'boolean' },
      explain: {
        type: 'object',
        required: [
          'considered',
          'pruned',
          'scanned',
          'rowGroupsScanned',
          'rowGroupsPruned',
          'rowsScanned',
          'bytesRead',
        ],
        additionalProperties: false,
        properties: {
          considered: { type: 'integer', minimum: 0 },
          pruned: {
            type: 'array',
            items: {
              type: 'object',
              required: ['id', 'reason'],
              additionalProperties: false,
              properties: { id: { type: 'string' }, reason: { type: 'string' } },
            },
          },
          scanned: { type: 'integer', minimum: 0 },
          rowGroupsScanned: { type: 'integer', minimum: 0 },
          rowGroupsPruned: { type: 'integer', minimum: 0 },
          rowsScanned: { type: 'integer', minimum: 0 },
          bytesRead: { type: 'integer', minimum: 0 },
          bytesFetched: { type: 'integer', minimum: 0 },
        },
      },
    },
  },
  Peers: {
    type: 'object',
    required: ['mode', 'lastBatchAt', 'logLength', 'peers'],
    additionalProperties: false,
    properties: {
      mode: { enum: ['realtime', 'batch', 'offline', 'standby'] },
      lastBatchAt: { type: ['integer', 'null'] },
      logLength: { type: 'integer', minimum: 0 },
      peers: {
        type: 'array',
        items: {
          type: 'object',
          required: ['endpoint', 'name', 'cursor', 'watermark', 'pending'],
          additionalProperties: false,
          properties: {
            endpoint: { type: 'string' },
            name: { type: 'string' },
            cursor: { type: 'integer', minimum: 0 },
            watermark: { type: 'integer', minimum: 0 },
            pending: { type: 'integer', minimum: 0 },
          },
        },
      },
    },
  },
  Placement: {
    type: 'object',
    required: ['placement'],
    additionalProperties: false,
    properties: {
      placement: {
        type: 'array',
        items: {
          type: 'object',
          required: ['signer', 'name', 'domains'],
          additionalProperties: false,
          properties: { signer: { type: 'string' }, name: { type: 'string' }, domains: { type: 'string' } },
        },
      },
    },
  },
  SetPlacement: {
    type: 'object',
    required: ['domains'],
    additionalProperties: false,
    properties: { domains: { type: 'string', maxLength: 2000, pattern: '^(\\*|[A-Z0-9_, ]*)$' } },
  },
  DeleteRows: {
    type: 'object',
    required: ['table', 'rows'],
    additionalProperties: false,
    properties: {
      table: objectTable,
      rows: { type: 'array', minItems: 1, maxItems: 5000, items: { type: 'string', pattern: '^[0-9a-f]{32}$' } },
    },
  },
  Deleted: {
    type: 'object',
    required: ['deleteObjects'],
    additionalProperties: false,
    properties: { deleteObjects: { type: 'array', items: { type: 'string' } } },
  },
  Deletable: {
    type: 'object',
    required: ['tables'],
    additionalProperties: false,
    properties: { tables: { type: 'array', items: { type: 'string' } } },
  },
  Compact: {
    type: 'object',
    required: ['domain', 'table'],
    additionalProperties: false,
    properties: { domain: domainName, table: objectTable },
  },
  Compacted: {
    type: 'object',
    required: ['compacted'],
    additionalProperties: false,
    properties: {
      compacted: {
        oneOf: [
          { type: 'null' },
          {
            type: 'object',
            required: ['object', 'inputs', 'rows', 'dropped'],
            additionalProperties: false,
            properties: {
              object: { type: 'string' },
              inputs: { type: 'integer', minimum: 0 },
              rows: { type: 'integer', minimum: 0 },
              dropped: { type: 'integer', minimum: 0 },
            },
          },
        ],
      },
    },
  },
  Synced: {
    type: 'object',
    required: ['online'],
    additionalProperties: false,
    properties: { online: { type: 'boolean' } },
  },
} as const;

/** Query parameters of the objects list: one domain's, one table's, or every object. */
export const OBJECTS_QUERY = {
  type: 'object',
  additionalProperties: false,
  properties: { domain: domainName, table: objectTable },
} as const;

/** Query parameters of an import: the domain the object is sealed in and its table. */
export const IMPORT_QUERY = {
  type: 'object',
  required: ['domain', 'table'],
  additionalProperties: false,
  properties: { domain: domainName, table: objectTable },
} as const;

/** Query parameters of a download: CSV with a header row, or plaintext Parquet. */
export const DOWNLOAD_QUERY = {
  type: 'object',
  additionalProperties: false,
  properties: { format: { enum: ['csv', 'parquet'] } },
} as const;

/** Query parameters of the rows route, as strings arrive (checked, then converted by the server). */
export const ROWS_QUERY = {
  type: 'object',
  additionalProperties: false,
  properties: {
    offset: { type: 'string', pattern: '^(0|[1-9][0-9]{0,8})$' },
    limit: { type: 'string', pattern: '^([1-9][0-9]{0,2})$' },
    filter: { type: 'string', maxLength: 200 },
    deleted: { enum: ['true', 'false'] },
  },
} as const;
