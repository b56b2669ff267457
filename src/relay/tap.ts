/**
 * A wire tap file for privacy audits (`sov relay --tap FILE`): every message
 * the relay receives or sends — WebSocket and HTTP mailbox bodies — appended as
 *
 *   record = direction (1 byte: 0x01 in, 0x02 out) ‖ length (4 bytes, big endian) ‖ bytes
 *
 * so a test or an auditor can prove that nothing readable crosses the relay.
 * The relay only ever sees ciphertext and routing headers, so the tap holds
 * nothing more than the relay itself already does; it is off unless asked for.
 */
import { appendFileSync } from 'node:fs';
import type { WireTap } from './hub.js';

export function fileTap(path: string): WireTap {
  return (direction, bytes) => {
    const header = Buffer.alloc(5);
    header[0] = direction === 'in' ? 1 : 2;
    header.writeUInt32BE(bytes.length, 1);
    appendFileSync(path, Buffer.concat([header, bytes]), { mode: 0o600 });
  };
}

/** Reads a tap file back into its records. */
export function readTap(file: Uint8Array): { direction: 'in' | 'out'; bytes: Uint8Array }[] {
  const records: { direction: 'in' | 'out'; bytes: Uint8Array }[] = [];
  const view = new DataView(file.buffer, file.byteOffset, file.byteLength);
  for (let at = 0; at + 5 <= file.length;) {
    const length = view.getUint32(at + 1);
    records.push({ direction: file[at] === 1 ? 'in' : 'out', bytes: file.subarray(at + 5, at + 5 + length) });
    at += 5 + length;
  }
  return records;
}
