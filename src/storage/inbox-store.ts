/**
 * The batch inbox (IndexedDB 'sov-inbox'): relay frames the service worker fetched over HTTP
 * and has not yet handed to the replica. Frames are stored exactly as the relay gave them
 * (sealed, unread), keyed by [topic, relay frame id], so fetching the same frame twice
 * overwrites rather than duplicates.
 *
 * Durability contract with the relay: `putAll` stores a whole fetched page in one readwrite
 * transaction and resolves only after it committed; the fetcher acknowledges the relay after
 * that, never before, so a frame is always either at the relay or here. A page context drains
 * the inbox under the Web Lock 'sov-apply': it applies the frames (idempotently), then
 * `remove`s them — a crash in between re-applies, which the event ids make harmless.
 */
import { Dexie, type Table } from 'dexie';
import { STRICT } from './durability.js';

export type InboxFrame = {
  /** Hex of the 32-byte topic the frame was fetched under. */
  readonly topic: string;
  /** The relay's frame id (ascending per relay). */
  readonly id: number;
  /** The sender's endpoint id. */
  readonly from: Uint8Array;
  /** The sealed frame body, opaque here. */
  readonly body: Uint8Array;
  readonly fetchedAt: number;
};

export type InboxKey = [topic: string, id: number];

export const INBOX_DB = 'sov-inbox';

export class InboxDatabase extends Dexie {
  frames!: Table<InboxFrame, InboxKey>;

  constructor(name = INBOX_DB) {
    super(name, STRICT);
    this.version(1).stores({ frames: '[topic+id]' });
  }
}

export const inboxKey = (frame: Pick<InboxFrame, 'topic' | 'id'>): InboxKey => [frame.topic, frame.id];

export class InboxStore {
  readonly db: InboxDatabase;

  constructor(db: InboxDatabase = new InboxDatabase()) {
    this.db = db;
  }

  /** Stores every frame or none; resolves once the transaction has committed. */
  async putAll(frames: readonly InboxFrame[]): Promise<void> {
    const { db } = this;
    await db.transaction('rw', db.frames, () => db.frames.bulkPut([...frames]));
  }

  /** The oldest frames first: by topic, then relay id. */
  list(limit: number): Promise<InboxFrame[]> {
    return this.db.frames.limit(limit).toArray();
  }

  async remove(keys: readonly InboxKey[]): Promise<void> {
    const { db } = this;
    await db.transaction('rw', db.frames, () => db.frames.bulkDelete([...keys]));
  }

  count(): Promise<number> {
    return this.db.frames.count();
  }

  close(): void {
    this.db.close();
  }
}
