/**
 * Relay admission for the benchmarks, as a user's relay runs it: `sov relay`
 * enforces each group's admin-signed admission list (relay/hub.ts, `admission:
 * 'enforce'`), so the benchmarks' relays do too, and before any other session
 * of the group an admin's machine pushes the list that names every endpoint —
 * what a founder's machine does the moment its session is ready
 * (runtime/relay-connection.ts `admissionRecord`, runtime/mesh-node.ts).
 *
 *   list   built as CryptoService.signAdmission builds it (core/admission.ts):
 *          the admins' signing keys, the machines' endpoints, the admins'
 *          endpoints as stewards (the only ones whose membership commits the
 *          blind sequencer takes), no open invitation, version = now, signed
 *          by an admin's signing key under "sov/1/admission".
 *   push   a session of the admin's endpoint (challenge, auth, the relay's
 *          proof checked), then `admit`; resolves on `admitted`, so every later
 *          session of the group is served by the list, never by its absence.
 *
 * Setup only: no benchmark times it.
 */
import { ed25519 } from '@noble/curves/ed25519.js';
import { randomBytes } from 'node:crypto';
import { WebSocket, type RawData } from 'ws';
import { admissionBody, admissionSigningPayload, encodeAdmission } from '../../src/core/admission.js';
import {
  decodeRelayMessage,
  encodeRelayMessage,
  relayAuthPayload,
  relayProofPayload,
  type EndpointToRelay,
} from '../../src/core/relay-wire.js';
import type { Signer } from '../../src/core/ports.js';

export type AdmissionPlan = {
  readonly topic: Uint8Array;
  /** Signs the list; must be one of `admins`. */
  readonly signer: Signer;
  readonly admins: readonly Uint8Array[];
  readonly endpoints: readonly Uint8Array[];
  /** Endpoints of the admins' machines. */
  readonly stewards: readonly Uint8Array[];
};

/** The admin-signed admission record for `plan`. */
export async function signAdmission(plan: AdmissionPlan): Promise<Uint8Array> {
  const body = admissionBody({
    v: 1,
    topic: plan.topic,
    version: Date.now(),
    signer: plan.signer.publicKey,
    admins: [...plan.admins],
    endpoints: [...plan.endpoints],
    invites: [],
    stewards: [...plan.stewards],
  });
  return encodeAdmission(body, await plan.signer.sign(admissionSigningPayload(body)));
}

const bytesOf = (data: RawData): Uint8Array =>
  new Uint8Array(Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data as ArrayBuffer));

/** Pushes `record` from a session of the endpoint whose secret key is `endpointKey`; resolves once it is in force. */
export function pushAdmission(
  wsUrl: string,
  topic: Uint8Array,
  endpointKey: Uint8Array,
  record: Uint8Array,
): Promise<void> {
  const endpoint = ed25519.getPublicKey(endpointKey);
  const ws = new WebSocket(wsUrl, { perMessageDeflate: false });
  const send = (message: EndpointToRelay) => ws.send(encodeRelayMessage(message));
  return new Promise<void>((resolve, reject) => {
    const fail = (reason: string) => {
      ws.terminate();
      reject(new Error(`bench admission: ${reason}`));
    };
    let challenge: { nonce: Uint8Array; cnonce: Uint8Array; relay: Uint8Array } | undefined;
    ws.once('error', (e) => fail(e.message));
    ws.on('message', (data) => {
      const decoded = decodeRelayMessage(bytesOf(data));
      if (!decoded.ok) return fail(decoded.error.reason);
      const message = decoded.value;
      if (message.t === 'challenge') {
        challenge = { nonce: message.nonce, cnonce: new Uint8Array(randomBytes(32)), relay: message.relay };
        const sig = ed25519.sign(relayAuthPayload(message.nonce, topic, endpoint), endpointKey);
        send({ t: 'auth', topic, endpoint, sig, cnonce: challenge.cnonce });
      } else if (message.t === 'ready') {
        const payload = challenge && relayProofPayload(challenge.nonce, challenge.cnonce, topic, endpoint);
        if (!payload || !ed25519.verify(message.proof, payload, challenge!.relay)) return fail('relay proof');
        send({ t: 'admit', record });
      } else if (message.t === 'admitted') {
        ws.once('close', () => resolve());
        ws.close();
      } else if (message.t === 'error') {
        fail(`relay refused the list: ${message.code}: ${message.message}`);
      }
    });
  });
}
