/**
 * A wire tap file for privacy audits (`sov relay --tap FILE`): everything the relay receives
 * and sends — every WebSocket message, and every HTTP request and response (the request line,
 * status line and headers of all of them; the bodies of the API: mailbox, object store put,
 * get, list and status, health and presence) — each with its time and connection, so a test or
 * an auditor can prove that nothing readable crosses the relay, and see who sent what, when.
 *
 *   file    = "SOVTAP2\n" ‖ record*
 *   record  = direction (1 byte: 0x01 in, 0x02 out) ‖ channel (1 byte: 0x01 WebSocket, 0x02 HTTP)
 *             ‖ time (8 bytes, ms since the epoch, float64 BE) ‖ conn (4 bytes BE)
 *             ‖ head length (4 bytes BE) ‖ head (UTF-8) ‖ body length (4 bytes BE) ‖ body
 *   conn    = the WebSocket session's serial (as the relay's log numbers them, `#n`), or for
 *             HTTP its TCP connection's (a counter of their own; several requests may share one)
 *   head    = for HTTP, the request line and headers, or the status line and headers (the
 *             WebSocket upgrade request is an HTTP record of its socket); empty for WebSocket
 *             messages
 *
 * Files written by earlier releases (no magic: direction ‖ length ‖ bytes, WebSocket and mailbox
 * bodies only) are read as records without time, channel or connection.
 *
 * The relay only ever sees ciphertext and routing headers, so the tap holds nothing more than
 * the relay itself already does; it is off unless asked for, and written with mode 0600.
 */
import { appendFileSync, existsSync, statSync } from 'node:fs';

export type TapChannel = 'ws' | 'http';

export type TapRecord = {
  readonly direction: 'in' | 'out';
  readonly channel: TapChannel;
  /** The connection: a WebSocket session's serial or an HTTP connection's; 0 in an old file. */
  readonly conn: number;
  /** Milliseconds since the epoch; 0 in an old file. */
  readonly at: number;
  /** HTTP: request or status line and headers; empty for WebSocket messages. */
  readonly head: string;
  readonly bytes: Uint8Array;
};

/** What the relay hands its tap; the time is the tap's. */
export type WireTap = (record: Omit<TapRecord, 'at'>) => void;

const MAGIC = Buffer.from('SOVTAP2\n', 'latin1');
const DIRECTION = { in: 1, out: 2 } as const;
const CHANNEL = { ws: 1, http: 2 } as const;

export function fileTap(path: string, now: () => number = Date.now): WireTap {
  let fresh = !existsSync(path) || statSync(path).size === 0;
  return (record) => {
    const head = Buffer.from(record.head, 'utf8');
    const fixed = Buffer.alloc(18);
    fixed[0] = DIRECTION[record.direction];
    fixed[1] = CHANNEL[record.channel];
    fixed.writeDoubleBE(now(), 2);
    fixed.writeUInt32BE(record.conn >>> 0, 10);
    fixed.writeUInt32BE(head.length, 14);
    const length = Buffer.alloc(4);
    length.writeUInt32BE(record.bytes.length);
    const parts = [fixed, head, length, record.bytes];
    appendFileSync(path, Buffer.concat(fresh ? [MAGIC, ...parts] : parts), { mode: 0o600 });
    fresh = false;
  };
}

/** The request line and headers of an HTTP request, as the tap records them. */
export function requestHead(
  method: string | undefined,
  url: string | undefined,
  rawHeaders: readonly string[],
): string {
  return [`${method ?? '?'} ${url ?? '?'}`, ...headerLines(rawHeaders)].join('\n');
}

/** The status line and headers of an HTTP response. */
export function responseHead(
  status: number,
  headers: Readonly<Record<string, string | number | readonly string[]>>,
): string {
  const lines = Object.entries(headers).map(
    ([name, value]) => `${name}: ${Array.isArray(value) ? value.join(', ') : String(value)}`,
  );
  return [`${status}`, ...lines].join('\n');
}

function headerLines(raw: readonly string[]): string[] {
  const lines: string[] = [];
  for (let i = 0; i + 1 < raw.length; i += 2) lines.push(`${raw[i]}: ${raw[i + 1]}`);
  return lines;
}

/** Reads a tap file back into its records (either format); a truncated last record is left out. */
export function readTap(file: Uint8Array): TapRecord[] {
  const buf = Buffer.from(file.buffer, file.byteOffset, file.byteLength);
  if (buf.subarray(0, MAGIC.length).equals(MAGIC)) return readRecords(buf, MAGIC.length);
  const records: TapRecord[] = [];
  for (let at = 0; at + 5 <= buf.length;) {
    const length = buf.readUInt32BE(at + 1);
    if (at + 5 + length > buf.length) break;
    const direction = buf[at] === 1 ? 'in' : 'out';
    records.push({ direction, channel: 'ws', conn: 0, at: 0, head: '', bytes: buf.subarray(at + 5, at + 5 + length) });
    at += 5 + length;
  }
  return records;
}

function readRecords(buf: Buffer, from: number): TapRecord[] {
  const records: TapRecord[] = [];
  for (let at = from; at + 22 <= buf.length;) {
    const headLength = buf.readUInt32BE(at + 14);
    const bodyAt = at + 18 + headLength + 4;
    if (bodyAt > buf.length) break;
    const length = buf.readUInt32BE(bodyAt - 4);
    if (bodyAt + length > buf.length) break;
    records.push({
      direction: buf[at] === 1 ? 'in' : 'out',
      channel: buf[at + 1] === 2 ? 'http' : 'ws',
      at: buf.readDoubleBE(at + 2),
      conn: buf.readUInt32BE(at + 10),
      head: buf.toString('utf8', at + 18, at + 18 + headLength),
      bytes: buf.subarray(bodyAt, bodyAt + length),
    });
    at = bodyAt + length;
  }
  return records;
}

const EMPTY = new Uint8Array(0);

/**
 * One HTTP request and its response, as the tap records them: the request (head, and its body
 * once a handler has read it), then the response. Handlers reach it through the request or
 * response object (`exchangeOf`), so the body readers and `reply` record what they handle.
 */
export class TapExchange {
  readonly #tap: WireTap;
  readonly #conn: number;
  readonly #head: string;
  #requested = false;
  #answered = false;

  constructor(tap: WireTap, conn: number, head: string) {
    this.#tap = tap;
    this.#conn = conn;
    this.#head = head;
  }

  /** The request's body as read (recorded once; a request never read is recorded empty). */
  request(bytes: Uint8Array): void {
    if (this.#requested) return;
    this.#requested = true;
    this.#tap({ direction: 'in', channel: 'http', conn: this.#conn, head: this.#head, bytes });
  }

  /** The response with its body, as sent. */
  response(
    status: number,
    headers: Readonly<Record<string, string | number | readonly string[]>>,
    bytes: Uint8Array,
  ): void {
    this.request(EMPTY);
    if (this.#answered) return;
    this.#answered = true;
    this.#tap({ direction: 'out', channel: 'http', conn: this.#conn, head: responseHead(status, headers), bytes });
  }

  /** The response finished without passing `response` (a file served, an upgrade refused): its head. */
  finished(status: number, headers: Readonly<Record<string, string | number | readonly string[] | undefined>>): void {
    const defined = Object.fromEntries(
      Object.entries(headers).filter((e): e is [string, string | number | string[]] => e[1] !== undefined),
    );
    this.response(status, defined, EMPTY);
  }
}

const exchanges = new WeakMap<object, TapExchange>();

/** Ties an exchange to its request and response objects. */
export function tapExchange(req: object, res: object, exchange: TapExchange): void {
  exchanges.set(req, exchange);
  exchanges.set(res, exchange);
}

/** The exchange a request or response belongs to, when the relay is tapped. */
export function exchangeOf(reqOrRes: object): TapExchange | undefined {
  return exchanges.get(reqOrRes);
}
