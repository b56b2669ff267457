/**
 * The object plane as the UI reaches it: forming objects, reading them back, and SQL over
 * the catalog (mesh-objects.ts does the work). Each action answers with a typed error when
 * this machine cannot do it: `NotReady` when the page runs no Parquet worker, `NoDomainKey`
 * when it forms an object in a domain it does not read.
 */
import { err, ok, type Result } from '../core/result.js';
import type { DomainName } from '../core/schema.js';
import type { QueryResult } from '../core/query/execute.js';
import type { Codec } from '../core/parquet/write.js';
import type { WriteError } from '../core/replica.js';
import type { MeshObjects, ObjectEntry, QueryOptions } from './mesh-objects.js';
import type { CompactError } from '../core/object/compact.js';
import type { Compaction, ImportProgress, ObjectError, PendingObject } from './object-service.js';

export class ObjectPlane {
  readonly #objects: MeshObjects | undefined;
  readonly #reads: (domain: DomainName) => boolean;

  /** `reads(domain)`: this machine holds the domain's current key and may write into it. */
  constructor(objects: MeshObjects | undefined, reads: (domain: DomainName) => boolean) {
    this.#objects = objects;
    this.#reads = reads;
  }

  #plane(domain?: DomainName): Result<MeshObjects, ObjectError> {
    if (domain !== undefined && !this.#reads(domain)) return err({ type: 'NoDomainKey', domain });
    return this.#objects ? ok(this.#objects) : err({ type: 'NotReady', reason: 'this page runs no Parquet worker' });
  }

  /**
   * Forms one encrypted object of a CSV file in `domain`, in table `table` (by default named
   * after the file); it is published when the relay is reachable.
   */
  async importCsv(
    file: File,
    domain: DomainName,
    progress?: ImportProgress,
    table?: string,
  ): Promise<Result<PendingObject, ObjectError>> {
    const plane = this.#plane(domain);
    return plane.ok ? plane.value.importCsv(file, domain, progress, table) : plane;
  }

  /** Forms an object of generated sample measurements in `domain`, in table `table` (by default `measurements`). */
  async importSample(
    domain: DomainName,
    rows: number,
    progress?: ImportProgress,
    table?: string,
  ): Promise<Result<PendingObject, ObjectError>> {
    const plane = this.#plane(domain);
    return plane.ok ? plane.value.importSample(domain, rows, progress, table) : plane;
  }

  /** The page compression of the objects this machine forms (ZSTD where WebAssembly runs). */
  async compression(): Promise<Result<Codec, ObjectError>> {
    const plane = this.#plane();
    return plane.ok ? ok(await plane.value.compression()) : plane;
  }

  /** An object decrypted as CSV or plaintext Parquet, for the user to save. */
  async download(id: string, format: 'csv' | 'parquet'): Promise<Result<Uint8Array, ObjectError>> {
    const plane = this.#plane();
    return plane.ok ? plane.value.download(id, format) : plane;
  }

  /** Every key this machine holds, tried on an object it stores: `NoKeyOpens` unless it reads the domain. */
  async tryEveryKey(id: string): Promise<Result<{ readonly opened: true }, ObjectError>> {
    const plane = this.#plane();
    return plane.ok ? plane.value.tryEveryKey(id) : plane;
  }

  /** The objects this machine formed, reads in the catalog, or stores, newest first. */
  async entries(): Promise<Result<ObjectEntry[], ObjectError>> {
    const plane = this.#plane();
    return plane.ok ? ok(await plane.value.entries()) : plane;
  }

  /** Each catalog object with the key generations its access records are under (one record each, batched or not). */
  async catalogObjects(): Promise<Result<{ id: string; domain: DomainName; gens: number[] }[], ObjectError>> {
    const plane = this.#plane();
    return plane.ok ? ok(await plane.value.catalogObjects()) : plane;
  }

  /** SQL over this machine's catalog (core/query/sql.ts); `id` lets `cancelQuery` stop it. */
  async query(sql: string, options: QueryOptions = {}): Promise<Result<QueryResult, ObjectError>> {
    const plane = this.#plane();
    return plane.ok ? plane.value.query(sql, options) : plane;
  }

  /** Deletes rows of an object table by their identities (delete objects: core/object/deletes.ts). */
  async deleteRows(table: string, rowIds: readonly string[]): Promise<Result<PendingObject[], ObjectError>> {
    const plane = this.#plane();
    return plane.ok ? plane.value.deleteRows(table, rowIds) : plane;
  }

  /** Compacts the small objects of a table in a domain into one; undefined when there is nothing to compact. */
  async compact(
    domain: DomainName,
    table: string,
  ): Promise<Result<Compaction | undefined, ObjectError | CompactError>> {
    const plane = this.#plane(domain);
    return plane.ok ? plane.value.compact(domain, table) : plane;
  }

  /** An admin lets the rows of an object table be deleted, for good. */
  async allowDeletes(table: string): Promise<Result<void, ObjectError | WriteError>> {
    const plane = this.#plane();
    return plane.ok ? plane.value.allowDeletes(table) : plane;
  }

  async cancelQuery(id: string): Promise<void> {
    await this.#objects?.cancelQuery(id);
  }

  /** Publishes, uploads and places objects now rather than at the next batch cycle. */
  async sync(): Promise<void> {
    await this.#objects?.sync();
  }
}
