/**
 * The API's event stream (`GET /v1/events`, Server-Sent Events): what changed on the node, in
 * order, each with an id `<boot>-<n>`. The last MAX_KEPT events are kept, so a client that
 * reconnects with `Last-Event-ID` gets exactly the events after it — no gap, no duplicate. One
 * that missed more than that, or whose id is from an earlier run of the node, gets a `reset`
 * event first: re-read what it shows, then follow on.
 */
import { randomBytes } from 'node:crypto';
import type { ServerResponse } from 'node:http';

export type ApiEvent = { readonly type: 'rows' | 'objects' | 'machines' | 'status' | 'notice'; readonly data: unknown };
type Kept = ApiEvent & { readonly n: number };

const MAX_KEPT = 1000;
/** A comment line now and then keeps proxies and idle timeouts from closing a quiet stream. */
const KEEPALIVE_MS = 15_000;

export class EventStream {
  readonly #boot = randomBytes(6).toString('hex');
  readonly #kept: Kept[] = [];
  readonly #clients = new Set<ServerResponse>();
  #n = 0;
  readonly #keepalive = setInterval(() => {
    for (const res of this.#clients) res.write(': keepalive\n\n');
  }, KEEPALIVE_MS).unref();

  /** Records an event and sends it to every open stream. */
  emit(event: ApiEvent): void {
    const kept = { ...event, n: ++this.#n };
    this.#kept.push(kept);
    if (this.#kept.length > MAX_KEPT) this.#kept.shift();
    for (const res of this.#clients) res.write(this.#format(kept));
  }

  /**
   * Opens a stream on `res`: a fresh one starts with `current` (the state now, under the
   * newest id, so resuming from it misses nothing); a resumed one with what came after
   * `lastEventId`.
   */
  open(res: ServerResponse, lastEventId: string | undefined, current: ApiEvent): void {
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      connection: 'keep-alive',
    });
    res.write('retry: 1000\n\n');
    if (lastEventId === undefined) res.write(this.#format({ ...current, n: this.#n }));
    for (const kept of this.#since(res, lastEventId)) res.write(this.#format(kept));
    this.#clients.add(res);
    res.once('close', () => this.#clients.delete(res));
  }

  close(): void {
    clearInterval(this.#keepalive);
    for (const res of this.#clients) res.end();
    this.#clients.clear();
  }

  #since(res: ServerResponse, lastEventId: string | undefined): readonly Kept[] {
    if (lastEventId === undefined) return [];
    const match = /^([0-9a-f]{12})-(\d{1,15})$/.exec(lastEventId);
    const after = match && match[1] === this.#boot ? Number(match[2]) : undefined;
    const oldest = this.#kept[0]?.n ?? this.#n + 1;
    if (after === undefined || after > this.#n || after < oldest - 1) {
      res.write(`id: ${this.#boot}-${this.#n}\nevent: reset\ndata: {}\n\n`);
      return [];
    }
    return this.#kept.filter((k) => k.n > after);
  }

  #format(kept: Kept): string {
    return `id: ${this.#boot}-${kept.n}\nevent: ${kept.type}\ndata: ${JSON.stringify(kept.data)}\n\n`;
  }
}
