/**
 * The batch cycle's fetch half, as the service worker runs it (Background Sync, or a page's
 * request on `online` / app start): relay mailbox → IndexedDB inbox, over plain HTTP.
 *
 *   1. read this machine's mesh record (NodeDatabase meta 'mesh'); not a member → `NotMember`
 *   2. load the endpoint key pair and the wrapped group secret (KeyDatabase), derive the topic
 *   3. repeat: POST fetch after the last id seen → store the page in the inbox in ONE
 *      transaction → only after it committed, POST ack for exactly those ids; while `more`
 *
 * A frame is therefore always at the relay or in the inbox: a failed inbox write acks
 * nothing, a failed ack leaves frames at both (fetched again later, overwritten in place, and
 * applied idempotently). Nothing here opens or applies frames; the page does that under the
 * Web Lock 'sov-apply'. Runs unchanged in a service worker and in Node (fake-indexeddb).
 */
import { toHex } from '../core/bytes.js';
import { topicOf } from '../core/identity.js';
import type { Clock, Random } from '../core/ports.js';
import { MAX_FETCH_LIMIT } from '../core/relay-http.js';
import { err, ok, type Result } from '../core/result.js';
import { NodeDatabase } from '../storage/dexie-store.js';
import { InboxStore, type InboxFrame } from '../storage/inbox-store.js';
import { DexieKeyStore, KeyDatabase } from '../storage/key-store.js';
import { systemClock } from './clock.js';
import { RelayHttpClient, httpBaseOf, type RelayHttpClientError } from './relay-http-client.js';
import { unwrapSecret } from '../storage/key-wrap.js';
import { webRandom, webSigner } from './webcrypto.js';

/** Background Sync tag, and the `{t}` of the message a page posts to ask for a run. */
export const BATCH_SYNC_TAG = 'sov-batch';
const MESH_META_KEY = 'mesh';
const GROUP_SECRET = 'group';
const DEFAULT_MAX_PAGES = 200;

export interface BatchFetchOptions {
  /** Databases default to the app's ('sov-keys', 'sov-node', 'sov-inbox') and are closed after. */
  readonly keys?: KeyDatabase | undefined;
  readonly node?: NodeDatabase | undefined;
  readonly inbox?: InboxStore | undefined;
  readonly fetch?: typeof fetch | undefined;
  readonly clock?: Clock | undefined;
  readonly random?: Random | undefined;
  readonly pageSize?: number | undefined;
  /** Upper bound on pages per run, so a relay that keeps filling the mailbox cannot pin us. */
  readonly maxPages?: number | undefined;
}

export type BatchFetchOutcome = { readonly fetched: number; readonly acked: number };

export type BatchFetchError =
  | { readonly type: 'NotMember' }
  | { readonly type: 'KeysUnreadable'; readonly reason: string }
  | { readonly type: 'BadRelayUrl'; readonly relay: string }
  | { readonly type: 'InboxWriteFailed'; readonly reason: string }
  | RelayHttpClientError;

type Membership = { readonly client: RelayHttpClient; readonly topic: string };

function meshRelay(value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const { status, relay } = value as { status?: unknown; relay?: unknown };
  return status === 'member' && typeof relay === 'string' ? relay : undefined;
}

async function membership(
  keys: KeyDatabase,
  node: NodeDatabase,
  options: BatchFetchOptions,
): Promise<Result<Membership, BatchFetchError>> {
  const relay = meshRelay((await node.meta.get(MESH_META_KEY))?.value);
  let identity;
  try {
    identity = await new DexieKeyStore(keys).identity();
  } catch (e) {
    return err({ type: 'KeysUnreadable', reason: (e as Error).message });
  }
  const wrapped = await keys.secrets.get(GROUP_SECRET);
  if (relay === undefined || !identity || !wrapped) return err({ type: 'NotMember' });
  const baseUrl = httpBaseOf(relay);
  if (baseUrl === undefined) return err({ type: 'BadRelayUrl', relay });
  const topic = topicOf(await unwrapSecret(identity.wrapping, GROUP_SECRET, wrapped));
  const client = new RelayHttpClient({
    baseUrl,
    topic,
    signer: webSigner({ keys: identity.endpoint, publicKey: identity.endpointPublic }),
    clock: options.clock ?? systemClock,
    random: options.random ?? webRandom,
    fetch: options.fetch,
  });
  return ok({ client, topic: toHex(topic) });
}

async function drainRelay(
  m: Membership,
  inbox: InboxStore,
  options: BatchFetchOptions,
): Promise<Result<BatchFetchOutcome, BatchFetchError>> {
  const clock = options.clock ?? systemClock;
  const pageSize = options.pageSize ?? MAX_FETCH_LIMIT;
  let after = 0;
  let fetched = 0;
  let acked = 0;
  for (let page = 0; page < (options.maxPages ?? DEFAULT_MAX_PAGES); page++) {
    const got = await m.client.fetchFrames(after, pageSize);
    if (!got.ok) return got;
    const { frames, more } = got.value;
    if (frames.length === 0) break;
    const fetchedAt = clock.now();
    const rows: InboxFrame[] = frames.map((f) => ({ topic: m.topic, id: f.id, from: f.from, body: f.body, fetchedAt }));
    try {
      await inbox.putAll(rows);
    } catch (e) {
      return err({ type: 'InboxWriteFailed', reason: `batch: ${(e as Error).message}` });
    }
    fetched += frames.length;
    const ack = await m.client.ack(frames.map((f) => f.id));
    if (!ack.ok) return ack;
    acked += ack.value.acked;
    after = frames[frames.length - 1]!.id;
    if (!more) break;
  }
  return ok({ fetched, acked });
}

/** One batch run: relay mailbox → inbox, acknowledging only what the inbox committed. */
export async function fetchIntoInbox(
  options: BatchFetchOptions = {},
): Promise<Result<BatchFetchOutcome, BatchFetchError>> {
  const keys = options.keys ?? new KeyDatabase();
  const node = options.node ?? new NodeDatabase('sov-node');
  const inbox = options.inbox ?? new InboxStore();
  try {
    const m = await membership(keys, node, options);
    if (!m.ok) return m;
    return await drainRelay(m.value, inbox, options);
  } finally {
    if (!options.keys) keys.close();
    if (!options.node) node.close();
    if (!options.inbox) inbox.close();
  }
}
