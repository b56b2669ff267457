/**
 * The headless node's loopback API, version 1 (issue 27): its OpenAPI 3.1 document, and the
 * JSON Schemas (2020-12) the server validates every request and response against with Ajv —
 * one source for the description and the checks. Served at `/v1/openapi.json`.
 */

const cell = { type: ['string', 'number', 'boolean', 'null'] } as const;
const text = (maxLength: number) => ({ type: 'string', minLength: 1, maxLength }) as const;
/** A domain's name as the mesh spells it (core/schema.ts `isDomainName`). */
const domainName = { type: 'string', pattern: '^[A-Z][A-Z0-9_]{1,31}$' } as const;
/** An object table's name as imports form it (core/object/csv-import.ts `tableName`). */
const objectTable = { type: 'string', pattern: '^[a-z][a-z0-9_]{0,63}$' } as const;

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

const json = (schema: string) => ({ 'application/json': { schema: { $ref: `#/components/schemas/${schema}` } } });
const refusals = {
  '400': { description: 'The request does not match this document', content: json('Error') },
  '401': { description: 'No bearer token, or not this node’s', content: json('Error') },
};
const tableParam = { name: 'table', in: 'path', required: true, schema: text(64) };
const rowParam = { name: 'row', in: 'path', required: true, schema: text(200) };
const idParam = { name: 'id', in: 'path', required: true, schema: { type: 'string', pattern: '^[0-9a-f]{64}$' } };
const queryParams = (schema: { properties: Record<string, unknown>; required?: readonly string[] }) =>
  Object.entries(schema.properties).map(([name, s]) => ({
    name,
    in: 'query',
    schema: s,
    ...(schema.required?.includes(name) ? { required: true } : {}),
  }));

export const OPENAPI = {
  openapi: '3.1.0',
  info: {
    title: 'Sovereign Mesh headless node',
    version: '1',
    description:
      'A headless machine of a mesh, on the loopback: the same trust rules as any machine (what it may read, write and sign).',
  },
  servers: [{ url: '/v1' }],
  security: [{ bearer: [] }],
  paths: {
    '/status': {
      get: {
        operationId: 'status',
        summary: 'This machine, its relay session, the machines and domains of the mesh',
        responses: { '200': { description: 'Status', content: json('Status') }, ...refusals },
      },
    },
    '/tables/{table}/rows': {
      get: {
        operationId: 'rows',
        summary: 'A page of a table’s rows, in key order',
        parameters: [tableParam, ...queryParams(ROWS_QUERY)],
        responses: { '200': { description: 'Rows', content: json('RowPage') }, ...refusals },
      },
    },
    '/tables/{table}/rows/{row}': {
      put: {
        operationId: 'writeRow',
        summary: 'Writes cells of a row: one signed event, merged per column',
        parameters: [tableParam, rowParam],
        requestBody: { required: true, content: json('WriteRow') },
        responses: {
          '200': { description: 'Written', content: json('Written') },
          '422': { description: 'The mesh’s rules refuse the write', content: json('Error') },
          ...refusals,
        },
      },
      delete: {
        operationId: 'deleteRow',
        summary: 'Deletes a row (a signed tombstone)',
        parameters: [tableParam, rowParam],
        responses: {
          '200': { description: 'Deleted', content: json('Written') },
          '422': { description: 'The mesh’s rules refuse the delete', content: json('Error') },
          ...refusals,
        },
      },
    },
    '/invitations': {
      post: {
        operationId: 'invite',
        summary:
          'An admin invites a machine: a pairing ticket (it holds the mesh secret: hand it over out of band, never log it)',
        responses: {
          '200': { description: 'A ticket', content: json('Invitation') },
          '422': { description: 'This machine may not invite', content: json('Error') },
          ...refusals,
        },
      },
    },
    '/pairings': {
      get: {
        operationId: 'pairings',
        summary: 'Machines asking to join, each with the six-digit code once the joiner revealed it',
        responses: { '200': { description: 'Pairings', content: json('Pairings') }, ...refusals },
      },
    },
    '/pairings/{inv}': {
      post: {
        operationId: 'answerPairing',
        summary: 'Whether the code the joiner shows is the one here: only a human who compared them may say yes',
        parameters: [{ name: 'inv', in: 'path', required: true, schema: text(64) }],
        requestBody: { required: true, content: json('Answer') },
        responses: {
          '200': { description: 'Answered', content: json('Pairings') },
          '404': { description: 'No such pairing', content: json('Error') },
          ...refusals,
        },
      },
    },
    '/events': {
      get: {
        operationId: 'events',
        summary:
          'Server-Sent Events: `rows` (a table changed, with the data version), `objects` (an object formed, published or stored here), `machines` (the mesh’s membership changed), `status`, `notice`; resumable with Last-Event-ID',
        responses: { '200': { description: 'An event stream', content: { 'text/event-stream': {} } }, ...refusals },
      },
    },
    '/peers': {
      get: {
        operationId: 'peers',
        summary: 'The sync mode and, per peer, what it acknowledged of this machine’s log and what was applied of its',
        responses: { '200': { description: 'Peers', content: json('Peers') }, ...refusals },
      },
    },
    '/sync': {
      post: {
        operationId: 'sync',
        summary:
          'A sync cycle now: unacknowledged events offered again, domains caught up, objects published and placed',
        responses: { '200': { description: 'Whether the relay was reachable', content: json('Synced') }, ...refusals },
      },
    },
    '/objects': {
      get: {
        operationId: 'objects',
        summary:
          'The objects this machine formed, reads in the catalog, or stores (bytes it cannot read show as `stored`)',
        parameters: queryParams(OBJECTS_QUERY),
        responses: { '200': { description: 'Objects', content: json('ObjectList') }, ...refusals },
      },
      post: {
        operationId: 'importCsv',
        summary: 'Forms one encrypted object of a CSV file (a header row, then rows) in a domain this machine reads',
        parameters: queryParams(IMPORT_QUERY),
        requestBody: { required: true, content: { 'text/csv': { schema: { type: 'string' } } } },
        responses: {
          '200': {
            description: 'The object formed (published once the relay is reachable)',
            content: json('ObjectSummary'),
          },
          '413': { description: 'The file is larger than an import through the API takes', content: json('Error') },
          '422': { description: 'The file or the domain is refused', content: json('Error') },
          ...refusals,
        },
      },
    },
    '/objects/{id}': {
      get: {
        operationId: 'object',
        summary: 'One object and its opened manifest (provenance, schema, pruning statistics)',
        parameters: [idParam],
        responses: {
          '200': { description: 'The object', content: json('ObjectDetail') },
          '404': { description: 'No such object here', content: json('Error') },
          '422': { description: 'This machine cannot open its manifest', content: json('Error') },
          ...refusals,
        },
      },
    },
    '/objects/{id}/data': {
      get: {
        operationId: 'download',
        summary:
          'The object decrypted: CSV with a header row (the default) or plaintext Parquet; deleted rows left out',
        parameters: [idParam, ...queryParams(DOWNLOAD_QUERY)],
        responses: {
          '200': {
            description: 'The rows',
            content: { 'text/csv': {}, 'application/vnd.apache.parquet': {} },
          },
          '404': { description: 'No such object here', content: json('Error') },
          '422': { description: 'This machine cannot read it', content: json('Error') },
          ...refusals,
        },
      },
    },
    '/query': {
      post: {
        operationId: 'query',
        summary:
          'SQL (the subset the Query view runs) over the catalog, pruned on manifests before any object opens; rows and the explain summary',
        requestBody: { required: true, content: json('QueryRequest') },
        responses: {
          '200': { description: 'The result', content: json('QueryResult') },
          '422': { description: 'The query is refused or fails', content: json('Error') },
          ...refusals,
        },
      },
    },
    '/objects/deletes': {
      post: {
        operationId: 'deleteObjectRows',
        summary:
          'Deletes rows of an object table by their identities (a query’s `rowIds`): a signed delete object, a tombstone for good',
        requestBody: { required: true, content: json('DeleteRows') },
        responses: {
          '200': { description: 'The delete objects formed', content: json('Deleted') },
          '422': { description: 'The table’s rows may not be deleted', content: json('Error') },
          ...refusals,
        },
      },
    },
    '/objects/compactions': {
      post: {
        operationId: 'compact',
        summary:
          'Merges the small objects of a table in a domain into one under the current generation, leaving deleted rows out',
        requestBody: { required: true, content: json('Compact') },
        responses: {
          '200': {
            description: 'The compaction, or null when there was nothing to compact',
            content: json('Compacted'),
          },
          '422': { description: 'This machine cannot compact there', content: json('Error') },
          ...refusals,
        },
      },
    },
    '/object-tables/{table}': {
      put: {
        operationId: 'allowDeletes',
        summary: 'An admin lets the rows of an object table be deleted, for good',
        parameters: [{ name: 'table', in: 'path', required: true, schema: objectTable }],
        responses: {
          '200': { description: 'The object tables whose rows may now be deleted', content: json('Deletable') },
          '422': { description: 'Only admins may', content: json('Error') },
          ...refusals,
        },
      },
    },
    '/placement': {
      get: {
        operationId: 'placement',
        summary: 'Which domains’ objects each machine stores (admins’ placement records)',
        responses: { '200': { description: 'Placement', content: json('Placement') }, ...refusals },
      },
    },
    '/placement/{signer}': {
      put: {
        operationId: 'setPlacement',
        summary: 'An admin places a machine: `*`, domain names separated by commas, or empty for none',
        parameters: [
          { name: 'signer', in: 'path', required: true, schema: { type: 'string', pattern: '^[0-9a-f]{1,200}$' } },
        ],
        requestBody: { required: true, content: json('SetPlacement') },
        responses: {
          '200': { description: 'Written', content: json('Written') },
          '404': { description: 'No such machine', content: json('Error') },
          '422': { description: 'This machine may not place others', content: json('Error') },
          ...refusals,
        },
      },
    },
    '/openapi.json': {
      get: { operationId: 'openapi', summary: 'This document', responses: { '200': { description: 'OpenAPI 3.1' } } },
    },
  },
  components: {
    schemas: SCHEMAS,
    securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } },
  },
} as const;
