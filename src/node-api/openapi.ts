/**
 * The headless node's loopback API, version 1 (issue 27): its OpenAPI 3.1 document, and the
 * JSON Schemas (2020-12) the server validates every request and response against with Ajv —
 * one source for the description and the checks. Served at `/v1/openapi.json`.
 */

const cell = { type: ['string', 'number', 'boolean', 'null'] } as const;
const text = (maxLength: number) => ({ type: 'string', minLength: 1, maxLength }) as const;

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
        parameters: [
          tableParam,
          ...Object.entries(ROWS_QUERY.properties).map(([name, schema]) => ({ name, in: 'query', schema })),
        ],
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
          'Server-Sent Events: `rows` (a table changed, with the data version), `status`, `notice`; resumable with Last-Event-ID',
        responses: { '200': { description: 'An event stream', content: { 'text/event-stream': {} } }, ...refusals },
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
