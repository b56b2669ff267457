/**
 * The relay's blind object store on disk (wire format in core/relay-objects.ts): one
 * directory per topic, each complete object a file named by its storage id, with a small
 * `.tag` file; an upload in progress is `<id>.part` with `<id>.meta` ({tag, total}). An
 * object becomes visible only after the whole of it hashes to its id; the relay never reads
 * it otherwise. Per-topic quota covers complete objects and uploads in progress.
 *
 * Crashes: an upload completes as tag written → `.part` renamed to its id → `.meta`
 * removed, so whatever instant the process dies at, `open` finds an upload whose bytes
 * all arrived and finishes it (hash, then complete or drop), or finds the object complete
 * and drops the leftover `.meta`. Abandoned uploads: one untouched for `uploadIdleMs`
 * releases its reservation (it is removed when quota is next needed, and at `open`).
 */
import {
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
  appendFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { fromHex, toHex } from '../core/bytes.js';
import { blake3Stream } from '../core/hash.js';
import { refuse, type RelayHttpError } from '../core/relay-http.js';
import type { GetResponse, ListResponse, PutRequest, PutResponse, StatusResponse } from '../core/relay-objects.js';
import { ok, type Result } from '../core/result.js';

export type ObjectStoreLimits = {
  readonly maxBytesPerTopic: number;
  /** An upload with no chunk for this long holds no quota: it is swept. */
  readonly uploadIdleMs?: number;
};
export const DEFAULT_OBJECT_LIMITS: ObjectStoreLimits = { maxBytesPerTopic: 32 * 1024 ** 3 };
const DEFAULT_UPLOAD_IDLE_MS = 15 * 60_000;

type Entry = { readonly tag: string; readonly size: number };
type Upload = { readonly tag: string; readonly total: number; have: number };
type Topic = { readonly dir: string; readonly complete: Map<string, Entry>; readonly uploads: Map<string, Upload> };

const HASH_CHUNK = 4 * 1024 * 1024;

export class BlindObjectStore {
  readonly #root: string;
  readonly #limits: ObjectStoreLimits;
  readonly #topics = new Map<string, Topic>();
  /** Puts of one object run one at a time. */
  readonly #busy = new Map<string, Promise<unknown>>();

  private constructor(dataDir: string, limits: ObjectStoreLimits) {
    this.#root = join(dataDir, 'objects');
    this.#limits = limits;
  }

  /** Opens the store and finishes what a crash left: uploads whose bytes all arrived, leftovers of completed ones. */
  static async open(dataDir: string, limits: ObjectStoreLimits = DEFAULT_OBJECT_LIMITS): Promise<BlindObjectStore> {
    const store = new BlindObjectStore(dataDir, limits);
    mkdirSync(store.#root, { recursive: true });
    for (const key of readdirSync(store.#root)) {
      if (!/^[0-9a-f]+$/.test(key)) continue;
      const t = store.#topic(fromHex(key)!);
      for (const id of [...t.uploads.keys()]) {
        if (t.complete.has(id)) {
          // Renamed into place, then the process died before the `.meta` went.
          t.uploads.delete(id);
          rmSync(join(t.dir, `${id}.meta`), { force: true });
        } else if (t.uploads.get(id)!.have >= t.uploads.get(id)!.total) {
          await store.#finish(t, id);
        }
      }
      store.#sweep(t);
      // A `.part` with no `.meta` is no upload (a dropped one, or one that an older relay left mid-completion).
      for (const name of readdirSync(t.dir)) {
        if (name.endsWith('.part') && !t.uploads.has(name.slice(0, -5))) rmSync(join(t.dir, name), { force: true });
      }
    }
    return store;
  }

  #topic(topic: Uint8Array): Topic {
    const key = toHex(topic);
    let t = this.#topics.get(key);
    if (t) return t;
    const dir = join(this.#root, key);
    mkdirSync(dir, { recursive: true });
    t = { dir, complete: new Map(), uploads: new Map() };
    for (const name of readdirSync(dir)) {
      if (/^[0-9a-f]{64}$/.test(name)) {
        const tag = existsSync(join(dir, `${name}.tag`)) ? readFileSync(join(dir, `${name}.tag`), 'utf8') : '';
        if (/^[0-9a-f]{64}$/.test(tag)) t.complete.set(name, { tag, size: statSync(join(dir, name)).size });
      } else if (name.endsWith('.meta')) {
        const id = name.slice(0, -5);
        try {
          const meta = JSON.parse(readFileSync(join(dir, name), 'utf8')) as { tag: string; total: number };
          const have = existsSync(join(dir, `${id}.part`)) ? statSync(join(dir, `${id}.part`)).size : 0;
          t.uploads.set(id, { tag: meta.tag, total: meta.total, have });
        } catch {
          rmSync(join(dir, name), { force: true });
        }
      }
    }
    this.#topics.set(key, t);
    return t;
  }

  /** Removes uploads idle past `uploadIdleMs` (their `.part` untouched): their reservation is released. */
  #sweep(t: Topic): void {
    const idle = this.#limits.uploadIdleMs ?? DEFAULT_UPLOAD_IDLE_MS;
    const now = Date.now();
    for (const id of [...t.uploads.keys()]) {
      const part = join(t.dir, `${id}.part`);
      const touched = existsSync(part) ? statSync(part).mtimeMs : 0;
      if (now - touched < idle) continue;
      t.uploads.delete(id);
      rmSync(part, { force: true });
      rmSync(join(t.dir, `${id}.meta`), { force: true });
    }
  }

  /** An upload whose bytes all arrived: complete when they hash to its id, dropped otherwise. */
  async #finish(t: Topic, id: string): Promise<boolean> {
    const upload = t.uploads.get(id)!;
    const part = join(t.dir, `${id}.part`);
    const whole = upload.have === upload.total && (await hashFile(part)) === id;
    if (!whole) {
      t.uploads.delete(id);
      rmSync(part, { force: true });
      rmSync(join(t.dir, `${id}.meta`), { force: true });
      return false;
    }
    writeFileSync(join(t.dir, `${id}.tag`), upload.tag);
    renameSync(part, join(t.dir, id));
    t.complete.set(id, { tag: upload.tag, size: upload.total });
    t.uploads.delete(id);
    rmSync(join(t.dir, `${id}.meta`), { force: true });
    return true;
  }

  #used(t: Topic): number {
    let n = 0;
    for (const e of t.complete.values()) n += e.size;
    for (const u of t.uploads.values()) n += u.total;
    return n;
  }

  put(topic: Uint8Array, request: PutRequest): Promise<Result<PutResponse, RelayHttpError>> {
    const key = `${toHex(topic)}/${toHex(request.id)}`;
    const run = (this.#busy.get(key) ?? Promise.resolve()).then(() => this.#put(topic, request));
    const settled = run.then(
      () => undefined,
      () => undefined,
    );
    this.#busy.set(key, settled);
    // The queue of an object is forgotten once nothing waits on it: the map holds puts in flight only.
    void settled.then(() => {
      if (this.#busy.get(key) === settled) this.#busy.delete(key);
    });
    return run;
  }

  /** Objects with puts in flight (bounded by the puts in flight; for tests). */
  get busy(): number {
    return this.#busy.size;
  }

  async #put(topic: Uint8Array, r: PutRequest): Promise<Result<PutResponse, RelayHttpError>> {
    const t = this.#topic(topic);
    const id = toHex(r.id);
    const done = t.complete.get(id);
    if (done) return ok({ have: done.size, complete: true });
    let upload = t.uploads.get(id);
    if (upload && (upload.total !== r.total || upload.tag !== toHex(r.tag))) {
      return refuse('offset-mismatch', 'objects: an upload of this object with another size or tag is in progress');
    }
    // Checked before an upload is created, so a put at the wrong offset leaves nothing behind.
    if (r.offset !== (upload?.have ?? 0))
      return refuse('offset-mismatch', `objects: the relay has ${upload?.have ?? 0} bytes of this object`);
    if (!upload) {
      if (this.#used(t) + r.total > this.#limits.maxBytesPerTopic) this.#sweep(t);
      if (this.#used(t) + r.total > this.#limits.maxBytesPerTopic)
        return refuse('quota', 'objects: the mesh is over its storage quota');
      upload = { tag: toHex(r.tag), total: r.total, have: 0 };
      writeFileSync(join(t.dir, `${id}.meta`), JSON.stringify({ tag: upload.tag, total: upload.total }));
      writeFileSync(join(t.dir, `${id}.part`), new Uint8Array(0));
      t.uploads.set(id, upload);
    }
    appendFileSync(join(t.dir, `${id}.part`), r.chunk);
    upload.have += r.chunk.length;
    if (upload.have < upload.total) return ok({ have: upload.have, complete: false });
    if (!(await this.#finish(t, id)))
      return refuse('hash-mismatch', 'objects: the bytes do not hash to the storage id; the upload is dropped');
    return ok({ have: upload.total, complete: true });
  }

  status(topic: Uint8Array, idBytes: Uint8Array): StatusResponse {
    const t = this.#topic(topic);
    const id = toHex(idBytes);
    const done = t.complete.get(id);
    if (done) return { have: done.size, total: done.size, complete: true };
    const upload = t.uploads.get(id);
    return upload
      ? { have: upload.have, total: upload.total, complete: false }
      : { have: 0, total: 0, complete: false };
  }

  read(topic: Uint8Array, idBytes: Uint8Array, offset: number, length: number): Result<GetResponse, RelayHttpError> {
    const t = this.#topic(topic);
    const id = toHex(idBytes);
    const done = t.complete.get(id);
    if (!done) return refuse('not-found', 'objects: no such object');
    if (offset >= done.size) return refuse('malformed', 'objects: offset at or past the end');
    const chunk = new Uint8Array(Math.min(length, done.size - offset));
    const fd = openSync(join(t.dir, id), 'r');
    try {
      readSync(fd, chunk, 0, chunk.length, offset);
    } finally {
      closeSync(fd);
    }
    return ok({ total: done.size, chunk });
  }

  list(topic: Uint8Array, tag: Uint8Array | null, after: Uint8Array | null, limit: number): ListResponse {
    const t = this.#topic(topic);
    const wanted = tag ? toHex(tag) : undefined;
    const from = after ? toHex(after) : '';
    const ids = [...t.complete.keys()]
      .filter((id) => id > from && (!wanted || t.complete.get(id)!.tag === wanted))
      .sort();
    return {
      objects: ids
        .slice(0, limit)
        .map((id) => ({ id: fromHex(id)!, tag: fromHex(t.complete.get(id)!.tag)!, size: t.complete.get(id)!.size })),
      more: ids.length > limit,
    };
  }
}

async function hashFile(path: string): Promise<string> {
  const hash = await blake3Stream();
  const fd = openSync(path, 'r');
  try {
    const buffer = new Uint8Array(HASH_CHUNK);
    for (let read = readSync(fd, buffer); read > 0; read = readSync(fd, buffer)) hash.update(buffer.subarray(0, read));
  } finally {
    closeSync(fd);
  }
  return toHex(hash.digest());
}
