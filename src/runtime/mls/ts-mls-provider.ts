/**
 * MlsProvider (core/mls/provider.ts) over ts-mls 1.6.4 — the mesh runs suite 1
 * (MLS_128_DHKEMX25519_AES128GCM_SHA256_Ed25519); the interop vectors run all seven
 * (test/mls/conformance.test.ts) — on crypto-provider.ts: WebCrypto
 * hashes and AES-GCM, noble Ed25519, and HPKE's X25519 in JavaScript (WebKitGTK's
 * WebCrypto cannot import one X25519 key in 256).
 *
 * Choices, each for a reason:
 *   - commits go as PrivateMessages (the default): the relay reads group, epoch
 *     and authenticated_data from the cleartext framing and nothing else;
 *   - Welcomes carry the ratchet tree (ratchet_tree extension), so a joiner
 *     needs nothing but the bundle;
 *   - keys are kept for 2 past epochs only: group state is most of its size in
 *     retained keys otherwise (notes/mls.md), and the domain's data keys are not
 *     MLS secrets anyway (KEK generations, core/mls/kek.ts);
 *   - every credential is checked by the injected `authenticate` (the keyring),
 *     replacing ts-mls's default that accepts anything.
 * States cross this boundary as `encodeGroupState` bytes; the client config is
 * re-attached on every decode. The state bytes this provider hands out are
 * remembered (weakly) with the state they encode, so the next call on them
 * skips the decode — which is most of our overhead over raw ts-mls at 256
 * members; callers must treat returned bytes as immutable values, as they are. Library failures become typed `MlsRejected`
 * results: a hostile commit or Welcome must not crash the worker.
 */
import {
  acceptAll,
  bytesToBase64,
  createApplicationMessage,
  createCommit,
  createGroup,
  createGroupInfoWithExternalPubAndRatchetTree,
  decodeGroupState,
  decodeMlsMessage,
  defaultCapabilities,
  defaultLifetime,
  emptyPskIndex,
  encodeGroupState,
  encodeMlsMessage,
  generateKeyPackageWithKey,
  getCiphersuiteImpl,
  joinGroup,
  joinGroupExternal,
  makePskIndex,
  processPrivateMessage,
  processPublicMessage,
  type CiphersuiteImpl,
  type ClientConfig,
  type ClientState,
  type KeyPackage,
  type MLSMessage,
  type PrivateKeyPackage,
  type Proposal,
} from 'ts-mls';
import { defaultClientConfig } from 'ts-mls/clientConfig.js';
import { getCiphersuiteFromId, type CiphersuiteId } from 'ts-mls/crypto/ciphersuite.js';
import { decodeRatchetTree } from 'ts-mls/ratchetTree.js';
import { meshCryptoProvider } from './crypto-provider.js';
import { ratchetTreeFromExtension } from 'ts-mls/groupInfo.js';
import { bytesEqual, isBytes } from '../../core/bytes.js';
import { decodeCbor, encodeCbor, isRecord } from '../../core/cbor.js';
import { readFraming, type MlsFraming } from '../../core/mls/framing.js';
import type {
  Authenticate,
  ExternalPsk,
  GroupSummary,
  JoinOptions,
  KeyPackagePair,
  MlsFailure,
  MlsProvider,
  PrivateKeys,
  Processed,
  SignatureKeyPair,
  StagedCommit,
} from '../../core/mls/provider.js';
import { err, ok, type Result } from '../../core/result.js';

/** MLS_128_DHKEMX25519_AES128GCM_SHA256_Ed25519: the suite the mesh runs. */
export const MESH_SUITE = 1;
const SUITES: readonly number[] = [1, 2, 3, 4, 5, 6, 7];

/** ts-mls's PSK lookup for these external PSKs (keyed by base64 of their ids), within `state` when there is one. */
function pskIndex(state: ClientState | undefined, psks: readonly ExternalPsk[] = []) {
  return makePskIndex(state, Object.fromEntries(psks.map((p) => [bytesToBase64(p.id), p.secret])));
}

const rejected = (reason: string): Result<never, MlsFailure> => err({ type: 'MlsRejected', reason: `mls: ${reason}` });

/** Runs a library call; anything it throws is the input's fault, reported as a value. */
async function guarded<T>(what: string, run: () => Promise<Result<T, MlsFailure>>): Promise<Result<T, MlsFailure>> {
  try {
    return await run();
  } catch (e) {
    return rejected(`${what}: ${e instanceof Error ? e.message : String(e)}`);
  }
}

function encodePrivate(p: PrivateKeyPackage): Uint8Array {
  return encodeCbor({ init: p.initPrivateKey, hpke: p.hpkePrivateKey, sig: p.signaturePrivateKey });
}

function decodePrivate(bytes: Uint8Array): PrivateKeyPackage | undefined {
  const decoded = decodeCbor(bytes, 1024);
  if (!decoded.ok || !isRecord(decoded.value)) return undefined;
  const { init, hpke, sig } = decoded.value;
  if (!isBytes(init) || !isBytes(hpke) || !isBytes(sig)) return undefined;
  return { initPrivateKey: init, hpkePrivateKey: hpke, signaturePrivateKey: sig };
}

function decodeMessage(bytes: Uint8Array): MLSMessage | undefined {
  try {
    const decoded = decodeMlsMessage(bytes, 0);
    return decoded && decoded[1] === bytes.length ? decoded[0] : undefined;
  } catch {
    return undefined;
  }
}

function keyPackageOf(bytes: Uint8Array): KeyPackage | undefined {
  const m = decodeMessage(bytes);
  return m?.wireformat === 'mls_key_package' ? m.keyPackage : undefined;
}

/** The identity of a leaf's basic credential. */
function identityOf(credential: { credentialType: string; identity?: Uint8Array }): Uint8Array | undefined {
  return credential.credentialType === 'basic' ? credential.identity : undefined;
}

export class TsMlsProvider implements MlsProvider {
  readonly name: string;
  readonly #cs: CiphersuiteImpl;
  readonly #config: ClientConfig;
  /** State bytes this provider returned → the state they encode (bench `mls`). */
  readonly #decoded = new WeakMap<Uint8Array, ClientState>();

  private constructor(cs: CiphersuiteImpl, authenticate: Authenticate, suite: number) {
    this.name = `ts-mls 1.6.4, suite ${suite}`;
    this.#cs = cs;
    this.#config = {
      ...defaultClientConfig,
      keyRetentionConfig: { ...defaultClientConfig.keyRetentionConfig, retainKeysForEpochs: 2 },
      authService: {
        validateCredential: async (credential, signaturePublicKey) => {
          const identity = identityOf(credential);
          return identity !== undefined && authenticate(identity, signaturePublicKey);
        },
      },
    };
  }

  /** A provider of one cipher suite (RFC 9420 §17.1): the mesh's own unless told. */
  static async create(authenticate: Authenticate, suite = MESH_SUITE): Promise<TsMlsProvider> {
    if (!SUITES.includes(suite)) throw new Error(`mls: cipher suite ${suite} is not supported`);
    const cs = await getCiphersuiteImpl(getCiphersuiteFromId(suite as CiphersuiteId), meshCryptoProvider);
    return new TsMlsProvider(cs, authenticate, suite);
  }

  #encode(state: ClientState): Uint8Array {
    const bytes = encodeGroupState(state);
    this.#decoded.set(bytes, state);
    return bytes;
  }

  #state(bytes: Uint8Array): ClientState | undefined {
    const known = this.#decoded.get(bytes);
    if (known) return known;
    try {
      const decoded = decodeGroupState(bytes, 0);
      if (!decoded || decoded[1] !== bytes.length) return undefined;
      return { ...decoded[0], clientConfig: this.#config };
    } catch {
      return undefined;
    }
  }

  async signatureKey(): Promise<SignatureKeyPair> {
    const pair = await this.#cs.signature.keygen();
    return { publicKey: pair.publicKey, secretKey: pair.signKey };
  }

  async keyPackage(identity: Uint8Array, key: SignatureKeyPair): Promise<KeyPackagePair> {
    const generated = await generateKeyPackageWithKey(
      { credentialType: 'basic', identity },
      defaultCapabilities(),
      defaultLifetime,
      [],
      { signKey: key.secretKey, publicKey: key.publicKey },
      this.#cs,
    );
    return {
      publicPackage: encodeMlsMessage({
        version: 'mls10',
        wireformat: 'mls_key_package',
        keyPackage: generated.publicPackage,
      }),
      privatePackage: encodePrivate(generated.privatePackage),
    };
  }

  importKeyPackage(publicPackage: Uint8Array, keys: PrivateKeys): Result<KeyPackagePair, MlsFailure> {
    if (!keyPackageOf(publicPackage)) return rejected('not a key package');
    const privatePackage = encodePrivate({
      initPrivateKey: keys.init,
      hpkePrivateKey: keys.encryption,
      signaturePrivateKey: keys.signature,
    });
    return ok({ publicPackage, privatePackage });
  }

  #own(own: KeyPackagePair): { pub: KeyPackage; priv: PrivateKeyPackage } | undefined {
    const pub = keyPackageOf(own.publicPackage);
    const priv = decodePrivate(own.privatePackage);
    return pub && priv ? { pub, priv } : undefined;
  }

  createGroup(groupId: Uint8Array, own: KeyPackagePair): Promise<Result<Uint8Array, MlsFailure>> {
    return guarded('create group', async () => {
      const keys = this.#own(own);
      if (!keys) return rejected('own key package does not decode');
      const state = await createGroup(groupId, keys.pub, keys.priv, [], this.#cs, this.#config);
      return ok(this.#encode(state));
    });
  }

  commit(
    stateBytes: Uint8Array,
    change: {
      readonly add: readonly Uint8Array[];
      readonly remove: readonly Uint8Array[];
      readonly authenticatedData: Uint8Array;
    },
  ): Promise<Result<StagedCommit, MlsFailure>> {
    return guarded('commit', async () => {
      const state = this.#state(stateBytes);
      if (!state) return rejected('group state does not decode');
      const proposals: Proposal[] = [];
      for (const bytes of change.add) {
        const keyPackage = keyPackageOf(bytes);
        if (!keyPackage) return rejected('a key package to add does not decode');
        proposals.push({ proposalType: 'add', add: { keyPackage } });
      }
      for (const identity of change.remove) {
        const leaf = leafIndexOf(state, identity);
        if (leaf === undefined) return rejected('a member to remove is not in the group');
        proposals.push({ proposalType: 'remove', remove: { removed: leaf } });
      }
      const result = await createCommit(
        { state, cipherSuite: this.#cs },
        { extraProposals: proposals, ratchetTreeExtension: true, authenticatedData: change.authenticatedData },
      );
      const welcome = result.welcome
        ? encodeMlsMessage({ version: 'mls10', wireformat: 'mls_welcome', welcome: result.welcome })
        : undefined;
      return ok({ state: this.#encode(result.newState), commit: encodeMlsMessage(result.commit), welcome });
    });
  }

  join(
    welcomeBytes: Uint8Array,
    own: KeyPackagePair,
    options: JoinOptions = {},
  ): Promise<Result<Uint8Array, MlsFailure>> {
    return guarded('join', async () => {
      const message = decodeMessage(welcomeBytes);
      if (message?.wireformat !== 'mls_welcome') return rejected('not a Welcome');
      const keys = this.#own(own);
      if (!keys) return rejected('own key package does not decode');
      let tree: ReturnType<typeof decodeRatchetTree>;
      if (options.ratchetTree) {
        tree = decodeRatchetTree(options.ratchetTree, 0);
        if (!tree || tree[1] !== options.ratchetTree.length) return rejected('the ratchet tree does not decode');
      }
      const state = await joinGroup(
        message.welcome,
        keys.pub,
        keys.priv,
        options.psks?.length ? pskIndex(undefined, options.psks) : emptyPskIndex,
        this.#cs,
        tree?.[0],
        undefined,
        this.#config,
      );
      return ok(this.#encode(state));
    });
  }

  process(
    stateBytes: Uint8Array,
    bytes: Uint8Array,
    options: { readonly psks?: readonly ExternalPsk[] } = {},
  ): Promise<Result<Processed, MlsFailure>> {
    return guarded<Processed>('process', async () => {
      const state = this.#state(stateBytes);
      if (!state) return rejected('group state does not decode');
      const message = decodeMessage(bytes);
      const framing = readFraming(bytes);
      if (
        !framing.ok ||
        (message?.wireformat !== 'mls_private_message' && message?.wireformat !== 'mls_public_message')
      ) {
        return rejected('not a group message');
      }
      // The message functions themselves: ts-mls 1.6.4's processMessage drops the PSK index.
      const psks = pskIndex(state, options.psks);
      if (message.wireformat === 'mls_public_message') {
        const { newState } = await processPublicMessage(state, message.publicMessage, psks, this.#cs, acceptAll);
        return ok(this.#processed(framing.value, newState));
      }
      const result = await processPrivateMessage(state, message.privateMessage, psks, this.#cs, acceptAll);
      if (result.kind === 'newState') return ok(this.#processed(framing.value, result.newState));
      return ok({ kind: 'application', state: this.#encode(result.newState), message: result.message });
    });
  }

  /** A commit moves the epoch; a proposal is kept in the state for the commit that applies it. */
  #processed(framing: MlsFraming, newState: ClientState): Processed {
    const state = this.#encode(newState);
    return 'contentType' in framing && framing.contentType === 'proposal'
      ? { kind: 'proposal', state }
      : { kind: 'commit', state, epoch: newState.groupContext.epoch };
  }

  encrypt(
    stateBytes: Uint8Array,
    plaintext: Uint8Array,
  ): Promise<Result<{ state: Uint8Array; message: Uint8Array }, MlsFailure>> {
    return guarded('encrypt', async () => {
      const state = this.#state(stateBytes);
      if (!state) return rejected('group state does not decode');
      const result = await createApplicationMessage(state, plaintext, this.#cs);
      const message = encodeMlsMessage({
        version: 'mls10',
        wireformat: 'mls_private_message',
        privateMessage: result.privateMessage,
      });
      return ok({ state: this.#encode(result.newState), message });
    });
  }

  summary(stateBytes: Uint8Array): Result<GroupSummary, MlsFailure> {
    const state = this.#state(stateBytes);
    if (!state) return rejected('group state does not decode');
    const members: Uint8Array[] = [];
    for (let i = 0; i < state.ratchetTree.length; i += 2) {
      const node = state.ratchetTree[i];
      const identity = node?.nodeType === 'leaf' ? identityOf(node.leaf.credential) : undefined;
      if (identity) members.push(identity);
    }
    const ownNode = state.ratchetTree[state.privatePath.leafIndex * 2];
    const self = ownNode?.nodeType === 'leaf' ? identityOf(ownNode.leaf.credential) : undefined;
    return ok({
      groupId: state.groupContext.groupId,
      epoch: state.groupContext.epoch,
      members,
      self: self ?? new Uint8Array(),
      epochAuthenticator: state.keySchedule.epochAuthenticator,
    });
  }

  groupInfo(stateBytes: Uint8Array): Promise<Result<Uint8Array, MlsFailure>> {
    return guarded('group info', async () => {
      const state = this.#state(stateBytes);
      if (!state) return rejected('group state does not decode');
      const groupInfo = await createGroupInfoWithExternalPubAndRatchetTree(state, [], this.#cs);
      return ok(encodeMlsMessage({ version: 'mls10', wireformat: 'mls_group_info', groupInfo }));
    });
  }

  rejoin(
    groupInfoBytes: Uint8Array,
    own: KeyPackagePair,
    authenticatedData: Uint8Array,
  ): Promise<Result<StagedCommit, MlsFailure>> {
    return guarded('rejoin', async () => {
      const message = decodeMessage(groupInfoBytes);
      if (message?.wireformat !== 'mls_group_info') return rejected('not a GroupInfo');
      const keys = this.#own(own);
      if (!keys) return rejected('own key package does not decode');
      const tree = ratchetTreeFromExtension(message.groupInfo);
      if (!tree) return rejected('the GroupInfo carries no ratchet tree');
      // Resync replaces our old leaf, which must then hold this signature key: ts-mls 1.6.4
      // loops forever on a resync whose key is in no leaf, so look first. Without one, we
      // join as a new leaf and the old one is removed by the next commit (domain logic).
      const ownKey = keys.pub.leafNode.signaturePublicKey;
      const resync = tree.some((n) => n?.nodeType === 'leaf' && bytesEqual(n.leaf.signaturePublicKey, ownKey));
      const { publicMessage, newState } = await joinGroupExternal(
        message.groupInfo,
        keys.pub,
        keys.priv,
        resync,
        this.#cs,
        undefined,
        this.#config,
        authenticatedData,
      );
      const commit = encodeMlsMessage({ version: 'mls10', wireformat: 'mls_public_message', publicMessage });
      return ok({ state: this.#encode(newState), commit, welcome: undefined });
    });
  }
}

function leafIndexOf(state: ClientState, identity: Uint8Array): number | undefined {
  for (let i = 0; i < state.ratchetTree.length; i += 2) {
    const node = state.ratchetTree[i];
    const id = node?.nodeType === 'leaf' ? identityOf(node.leaf.credential) : undefined;
    if (id && bytesEqual(id, identity)) return i / 2;
  }
  return undefined;
}
