/**
 * A typed client for a headless node's loopback API (src/node-api/, document at
 * `/v1/openapi.json`): `sovereign-mesh/sdk`. Every call answers a Result — the parsed body, or
 * the node's typed refusal with its HTTP status — and never throws for an answer the node
 * gave. `events` follows the node's event stream and reconnects after a drop with
 * `Last-Event-ID`, so a listener sees every event once, in order (a `reset` event says that
 * more was missed than the node keeps: read again what you show).
 *
 *   const mesh = new NodeApiClient({ url: 'http://127.0.0.1:7420/v1', token });
 *   const stream = mesh.events(async (e) => {
 *     if (e.type !== 'rows') return;
 *     const page = await mesh.rows('device_profiles', { limit: 10 });
 *     if (page.ok) console.log(page.value.rows.map((r) => r.values['name']));
 *   });
 *   // … stream.close() when done.
 */

export type Cell = string | number | boolean | null;

export type Status = {
  readonly status: 'new' | 'joining' | 'member' | 'recovering';
  readonly name: string;
  readonly signer: string;
  readonly fingerprint: string;
  readonly relay: string;
  readonly pending: number;
  readonly dataVersion: number;
  readonly machines: readonly {
    readonly signer: string;
    readonly name: string;
    readonly role: 'admin' | 'member';
    readonly trusted: boolean;
    readonly removed: boolean;
  }[];
  readonly domains: readonly { readonly domain: string; readonly reads: boolean }[];
};

export type Row = { readonly row: string; readonly alive: boolean; readonly values: Readonly<Record<string, Cell>> };
export type RowPage = {
  readonly table: string;
  readonly total: number;
  readonly offset: number;
  readonly rows: readonly Row[];
};
export type Written = { readonly written: string };

export type Pairing = {
  readonly inv: string;
  readonly name: string;
  readonly fingerprint: string;
  /** The six-digit code, once the joiner revealed it: compare it with the joiner's screen. */
  readonly sas?: string;
  readonly confirmed: boolean;
  readonly joinerConfirmed: boolean;
};

export type ObjectSummary = {
  readonly id: string;
  readonly state: 'pending' | 'refused' | 'published' | 'stored';
  readonly domain: string | null;
  readonly producer: string | null;
  readonly table: string | null;
  readonly rows: number | null;
  readonly formedAt: number | null;
  readonly kind: 'data' | 'delete' | 'compaction' | 'unknown';
  /** Whether this machine opens its manifest (it reads the object's domain). */
  readonly readable: boolean;
  readonly held: boolean;
  readonly size: number | null;
  readonly reason?: string;
};

export type Manifest = {
  readonly storageId: string;
  readonly domain: string;
  readonly table: string;
  readonly producer: string;
  readonly rows: number;
  readonly bytes: number;
  readonly time: { readonly column: string; readonly min: number; readonly max: number } | null;
  readonly partitions: Readonly<Record<string, string>>;
  readonly schema: readonly { readonly name: string; readonly type: string; readonly nullable: boolean }[];
  readonly columns: readonly {
    readonly name: string;
    readonly nulls: number;
    readonly min?: string;
    readonly max?: string;
  }[];
  readonly supersedes?: readonly string[];
};

export type QueryAnswer = {
  readonly table: string;
  readonly columns: readonly { readonly name: string; readonly type: string }[];
  readonly rows: readonly (readonly Cell[])[];
  /** Each row's identity (hex), when the query neither groups nor aggregates: what `deleteObjectRows` takes. */
  readonly rowIds?: readonly string[];
  /** More rows matched than the request's limit (10,000 by default). */
  readonly truncated: boolean;
  readonly explain: {
    readonly considered: number;
    readonly pruned: readonly { readonly id: string; readonly reason: string }[];
    readonly scanned: number;
    readonly rowGroupsScanned: number;
    readonly rowGroupsPruned: number;
    readonly rowsScanned: number;
    readonly bytesRead: number;
    readonly bytesFetched?: number;
  };
};

export type Peers = {
  readonly mode: 'realtime' | 'batch' | 'offline' | 'standby';
  readonly lastBatchAt: number | null;
  readonly logLength: number;
  readonly peers: readonly {
    readonly endpoint: string;
    readonly name: string;
    readonly cursor: number;
    readonly watermark: number;
    readonly pending: number;
  }[];
};

export type Placement = {
  readonly placement: readonly { readonly signer: string; readonly name: string; readonly domains: string }[];
};

export type ApiError = { readonly status: number; readonly type: string; readonly reason: string };
export type ApiResult<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly error: ApiError };

export type NodeEvent = { readonly id: string; readonly type: string; readonly data: unknown };

export type ClientOptions = {
  /** The API's base, ending in `/v1`. */
  readonly url: string;
  /** The bearer token from the node's `<data>/api.token`. */
  readonly token: string;
  readonly fetch?: typeof fetch;
};

/** How long the event stream waits before reconnecting, doubling to this at most. */
const RECONNECT_MS = 250;
const MAX_RECONNECT_MS = 5_000;

export class NodeApiClient {
  readonly #base: string;
  readonly #token: string;
  readonly #fetch: typeof fetch;

  constructor(options: ClientOptions) {
    this.#base = options.url.replace(/\/+$/, '');
    this.#token = options.token;
    this.#fetch = options.fetch ?? fetch;
  }

  status(): Promise<ApiResult<Status>> {
    return this.#call('GET', '/status');
  }

  rows(
    table: string,
    query: { offset?: number; limit?: number; filter?: string; deleted?: boolean } = {},
  ): Promise<ApiResult<RowPage>> {
    const params = new URLSearchParams();
    for (const [key, value] of Object.entries(query)) params.set(key, String(value));
    const search = params.size > 0 ? `?${params.toString()}` : '';
    return this.#call('GET', `/tables/${encodeURIComponent(table)}/rows${search}`);
  }

  writeRow(table: string, row: string, cells: Readonly<Record<string, Cell>>): Promise<ApiResult<Written>> {
    return this.#call('PUT', `/tables/${encodeURIComponent(table)}/rows/${encodeURIComponent(row)}`, { cells });
  }

  deleteRow(table: string, row: string): Promise<ApiResult<Written>> {
    return this.#call('DELETE', `/tables/${encodeURIComponent(table)}/rows/${encodeURIComponent(row)}`);
  }

  /** An admin node invites a machine: the pairing ticket (it holds the mesh secret: never log it). */
  invite(): Promise<ApiResult<{ readonly ticket: string }>> {
    return this.#call('POST', '/invitations');
  }

  pairings(): Promise<ApiResult<{ readonly pairings: readonly Pairing[] }>> {
    return this.#call('GET', '/pairings');
  }

  /** Whether the joiner shows the same code: say yes only once a human compared them. */
  answerPairing(inv: string, confirmed: boolean): Promise<ApiResult<{ readonly pairings: readonly Pairing[] }>> {
    return this.#call('POST', `/pairings/${encodeURIComponent(inv)}`, { confirmed });
  }

  /** The sync mode and each peer's cursor, watermark and pending events. */
  peers(): Promise<ApiResult<Peers>> {
    return this.#call('GET', '/peers');
  }

  /** A sync cycle now; `online` is false when the relay was out of reach. */
  sync(): Promise<ApiResult<{ readonly online: boolean }>> {
    return this.#call('POST', '/sync');
  }

  objects(
    filter: { domain?: string; table?: string } = {},
  ): Promise<ApiResult<{ readonly objects: readonly ObjectSummary[] }>> {
    const params = new URLSearchParams(filter);
    return this.#call('GET', `/objects${params.size > 0 ? `?${params.toString()}` : ''}`);
  }

  object(id: string): Promise<ApiResult<{ readonly object: ObjectSummary; readonly manifest: Manifest }>> {
    return this.#call('GET', `/objects/${encodeURIComponent(id)}`);
  }

  /** Forms an encrypted object of CSV text (a header row, then rows) in `domain`, table `table`. */
  importCsv(domain: string, table: string, csv: string | Uint8Array): Promise<ApiResult<ObjectSummary>> {
    const params = new URLSearchParams({ domain, table });
    return this.#call('POST', `/objects?${params.toString()}`, csv, 'text/csv');
  }

  /** An object decrypted: CSV with a header row, or plaintext Parquet. */
  async download(id: string, format: 'csv' | 'parquet' = 'csv'): Promise<ApiResult<Uint8Array>> {
    let res: Response;
    try {
      res = await this.#fetch(`${this.#base}/objects/${encodeURIComponent(id)}/data?format=${format}`, {
        headers: { authorization: `Bearer ${this.#token}` },
      });
    } catch (e) {
      return { ok: false, error: { status: 0, type: 'Unreachable', reason: String(e) } };
    }
    if (res.ok) return { ok: true, value: new Uint8Array(await res.arrayBuffer()) };
    return this.#refused(res);
  }

  /** SQL over the catalog; `domains` reads only those domains' objects, `limit` caps the rows answered. */
  query(sql: string, options: { limit?: number; domains?: readonly string[] } = {}): Promise<ApiResult<QueryAnswer>> {
    return this.#call('POST', '/query', { sql, ...options });
  }

  /** Deletes rows of an object table by their identities (a query's `rowIds`), for good. */
  deleteObjectRows(
    table: string,
    rows: readonly string[],
  ): Promise<ApiResult<{ readonly deleteObjects: readonly string[] }>> {
    return this.#call('POST', '/objects/deletes', { table, rows });
  }

  /** Compacts a table's small objects in a domain into one; `compacted` is null when there was nothing to do. */
  compact(
    domain: string,
    table: string,
  ): Promise<
    ApiResult<{
      readonly compacted: {
        readonly object: string;
        readonly inputs: number;
        readonly rows: number;
        readonly dropped: number;
      } | null;
    }>
  > {
    return this.#call('POST', '/objects/compactions', { domain, table });
  }

  /** An admin lets the rows of an object table be deleted, for good. */
  allowDeletes(table: string): Promise<ApiResult<{ readonly tables: readonly string[] }>> {
    return this.#call('PUT', `/object-tables/${encodeURIComponent(table)}`);
  }

  placement(): Promise<ApiResult<Placement>> {
    return this.#call('GET', '/placement');
  }

  /** An admin places a machine: `*`, domain names separated by commas, or '' for none. */
  setPlacement(signer: string, domains: string): Promise<ApiResult<Written>> {
    return this.#call('PUT', `/placement/${encodeURIComponent(signer)}`, { domains });
  }

  /** The node's OpenAPI 3.1 document. */
  openapi(): Promise<ApiResult<Record<string, unknown>>> {
    return this.#call('GET', '/openapi.json');
  }

  /** Follows the node's events until `close`; reconnects after a drop, resuming after the last event seen. */
  events(listener: (event: NodeEvent) => void | Promise<void>): { close(): void } {
    const stop = new AbortController();
    void this.#follow(listener, stop.signal);
    return { close: () => stop.abort() };
  }

  async #follow(listener: (event: NodeEvent) => void | Promise<void>, signal: AbortSignal): Promise<void> {
    let last: string | undefined;
    let wait = RECONNECT_MS;
    // A function, not the property: it changes while this loop awaits.
    const closed = (): boolean => signal.aborted;
    while (!closed()) {
      try {
        const res = await this.#fetch(`${this.#base}/events`, {
          headers: { authorization: `Bearer ${this.#token}`, ...(last ? { 'last-event-id': last } : {}) },
          signal,
        });
        if (!res.ok || !res.body) throw new Error(`events: ${res.status}`);
        wait = RECONNECT_MS;
        for await (const event of parseEvents(res.body)) {
          last = event.id;
          await listener(event);
        }
      } catch {
        // A drop, a refusal or close(): the loop's condition tells which.
      }
      if (closed()) return;
      await new Promise((resolve) => setTimeout(resolve, wait));
      wait = Math.min(wait * 2, MAX_RECONNECT_MS);
    }
  }

  async #call<T>(method: string, path: string, body?: unknown, type = 'application/json'): Promise<ApiResult<T>> {
    let res: Response;
    try {
      res = await this.#fetch(`${this.#base}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${this.#token}`,
          ...(body === undefined ? {} : { 'content-type': type }),
        },
        ...(body === undefined
          ? {}
          : { body: type === 'application/json' ? JSON.stringify(body) : (body as string | Uint8Array<ArrayBuffer>) }),
      });
    } catch (e) {
      return { ok: false, error: { status: 0, type: 'Unreachable', reason: String(e) } };
    }
    if (!res.ok) return this.#refused(res);
    try {
      return { ok: true, value: (await res.json()) as T };
    } catch {
      return { ok: false, error: { status: res.status, type: 'BadResponse', reason: 'the node answered no JSON' } };
    }
  }

  /** The node's typed refusal (`{ error: { type, reason } }`), or what stands in for it. */
  async #refused<T>(res: Response): Promise<ApiResult<T>> {
    let parsed: unknown;
    try {
      parsed = await res.json();
    } catch {
      return { ok: false, error: { status: res.status, type: 'BadResponse', reason: 'the node answered no JSON' } };
    }
    const error = (parsed as { error?: { type?: unknown; reason?: unknown } }).error;
    const type = typeof error?.type === 'string' ? error.type : 'Unknown';
    const reason = typeof error?.reason === 'string' ? error.reason : '';
    return { ok: false, error: { status: res.status, type, reason } };
  }
}

/** Server-Sent Events from a byte stream (the subset the node sends: id, event, data, comments). */
async function* parseEvents(body: ReadableStream<Uint8Array>): AsyncGenerator<NodeEvent> {
  const decoder = new TextDecoder();
  let buffer = '';
  const reader = body.getReader();
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += decoder.decode(value, { stream: true });
    for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const fields = new Map<string, string>();
      for (const line of block.split('\n')) {
        if (line.startsWith(':')) continue;
        const colon = line.indexOf(':');
        if (colon > 0) fields.set(line.slice(0, colon), line.slice(colon + 1).trimStart());
      }
      const [id, type, data] = [fields.get('id'), fields.get('event'), fields.get('data')];
      if (id === undefined || type === undefined || data === undefined) continue;
      yield { id, type, data: JSON.parse(data) as unknown };
    }
  }
}
