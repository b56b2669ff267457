/**
 * A headless machine's services, wired as `sov node` runs them: MeshNode with the crypto,
 * MLS, state and object services in this process (called directly where a browser calls
 * its workers), on SQLite files in one data directory — `replica.sqlite`, `keys.sqlite`
 * under the machine key file `machine.key` (0600), and `objects.sqlite`.
 *
 * `sov node` (node.ts) and the headless benchmarks open machines through this one path.
 */
import { join } from 'node:path';
import { WebSocket as NodeWebSocket } from 'ws';
import { systemClock } from '../runtime/clock.js';
import { CryptoService } from '../runtime/crypto-service.js';
import { soloEnv } from '../runtime/machine-env.js';
import { MeshNode } from '../runtime/mesh-node.js';
import { MlsService } from '../runtime/mls-service.js';
import { nodeEnvelopes } from '../runtime/node-aead.js';
import { ObjectService } from '../runtime/object-service.js';
import { inProcess } from '../runtime/ports.js';
import { StateService, stateCryptoOf } from '../runtime/state-service.js';
import { SqliteKeyStore } from '../storage/sqlite-key-store.js';
import { SqliteObjectStore } from '../storage/sqlite-object-store.js';
import { SqliteReplicaStore } from '../storage/sqlite-replica-store.js';

export type HeadlessOptions = {
  /** An archive with no placement record stores every object of the mesh. */
  readonly role: 'server' | 'archive';
  /** The machine must start again (it left a group, or a join was abandoned). */
  readonly restart: () => void;
};

export type Headless = {
  readonly node: MeshNode;
  /**
   * The services beneath the node, for benchmarks that seed a machine through its own write
   * path (`bench lifecycle`) and read what its store holds.
   */
  readonly services: {
    readonly crypto: CryptoService;
    readonly state: StateService;
    readonly replica: SqliteReplicaStore;
    readonly objects: ObjectService;
  };
  /** This machine's fingerprint, as its screen would show it. */
  readonly fingerprint: string;
  /** Closes the relay session, lets work under way finish, then closes the stores. */
  close(): Promise<void>;
};

/** How long `close` lets work already under way (a snapshot, an apply) finish before the stores close. */
const SETTLE_MS = 500;

export async function openHeadless(data: string, options: HeadlessOptions): Promise<Headless> {
  // The relay connection is the browser's code: give it a WebSocket.
  (globalThis as { WebSocket?: unknown }).WebSocket ??= NodeWebSocket;
  const keys = await SqliteKeyStore.open(data);
  const replica = new SqliteReplicaStore(join(data, 'replica.sqlite'));
  const objects = new SqliteObjectStore(join(data, 'objects.sqlite'));
  const crypto = new CryptoService(keys, systemClock, nodeEnvelopes);
  const mls = new MlsService(keys);
  const env = soloEnv(options.restart);
  const state = new StateService({
    store: replica,
    crypto: async () => stateCryptoOf(crypto),
    self: async () => crypto.view().signer,
    clock: systemClock,
    withLock: env.withLock,
  });
  const services = {
    crypto: inProcess(crypto),
    state: inProcess(state),
    mls: inProcess(mls),
    // The crypto service holds the domain keys; the object service asks it, as the Parquet worker does.
    objects: new ObjectService(crypto.accessKeys, keys, objects, systemClock),
  };
  const node = await MeshNode.open(services, {
    store: replica,
    env,
    ...(options.role === 'archive' ? { defaultPlacement: '*' as const } : {}),
  });
  return {
    node,
    services: { crypto, state, replica, objects: services.objects },
    get fingerprint() {
      return crypto.view().fingerprint;
    },
    close: async () => {
      node.close();
      await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
      replica.close();
      objects.close();
      keys.close();
    },
  };
}
