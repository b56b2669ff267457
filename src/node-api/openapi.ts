/**
 * The headless node's loopback API, version 1 (issue 27): its OpenAPI 3.1 document, served at
 * `/v1/openapi.json`. The JSON Schemas (2020-12) it names live in api-schemas.ts; the server
 * validates every request and response against them with Ajv — one source for the description
 * and the checks.
 */
import { DOWNLOAD_QUERY, IMPORT_QUERY, OBJECTS_QUERY, ROWS_QUERY, SCHEMAS, objectTable, text } from './api-schemas.js';

export { DOWNLOAD_QUERY, IMPORT_QUERY, OBJECTS_QUERY, ROWS_QUERY, SCHEMAS };

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
