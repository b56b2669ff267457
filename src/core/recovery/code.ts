/**
 * The recovery code (issue 24 "Recovery kit"): 128 random bits a human writes down, from
 * which the key sealing a recovery kit is derived (kit.ts). Shown as 28 characters of
 * Crockford base32 in groups of four — 26 for the bits, 2 of checksum — so a mistyped code
 * is told apart from a wrong one before any key is derived:
 *
 *   code  = base32(bytes(16)) ‖ base32(check)        check = BLAKE3("sov/1/recovery-code" ‖ bytes)[0..10 bits]
 *
 * Reading accepts lower case, spaces and dashes, and Crockford's look-alikes (I, L → 1; O → 0).
 */
import { concat, utf8 } from '../bytes.js';
import { blake3 } from '../hash.js';
import type { Random } from '../ports.js';
import { err, ok, type Result } from '../result.js';

export const RECOVERY_CODE_BYTES = 16;
const ALPHABET = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
const DATA_CHARS = 26; // ceil(128 / 5); the last character's low 2 bits are zero
const CHECK_CHARS = 2;
const CHECK_LABEL = utf8('sov/1/recovery-code');

export type CodeError = { readonly type: 'MistypedCode'; readonly reason: string };

/** A fresh recovery code: its bytes (the KDF's input) and how it is shown. */
export function newRecoveryCode(random: Random): { readonly bytes: Uint8Array; readonly text: string } {
  const bytes = random.bytes(RECOVERY_CODE_BYTES);
  return { bytes, text: formatCode(bytes) };
}

function checkValue(bytes: Uint8Array): number {
  const digest = blake3(concat(CHECK_LABEL, bytes));
  return ((digest[0]! << 2) | (digest[1]! >> 6)) & 0x3ff;
}

function base32(bytes: Uint8Array, chars: number): string {
  let out = '';
  let acc = 0;
  let bits = 0;
  for (const b of bytes) {
    acc = (acc << 8) | b;
    bits += 8;
    while (bits >= 5) {
      out += ALPHABET.charAt((acc >> (bits - 5)) & 31);
      bits -= 5;
    }
    acc &= (1 << bits) - 1;
  }
  if (bits > 0) out += ALPHABET.charAt((acc << (5 - bits)) & 31);
  return out.slice(0, chars);
}

/** The code as shown: seven groups of four characters. */
export function formatCode(bytes: Uint8Array): string {
  const check = checkValue(bytes);
  const text = base32(bytes, DATA_CHARS) + ALPHABET.charAt(check >> 5) + ALPHABET.charAt(check & 31);
  return text.match(/.{4}/g)!.join('-');
}

function symbol(c: string): number {
  const normal = c === 'I' || c === 'L' ? '1' : c === 'O' ? '0' : c;
  return ALPHABET.indexOf(normal);
}

/** The bytes of a code as a human typed it; `MistypedCode` when it cannot be one. */
export function parseCode(typed: string): Result<Uint8Array, CodeError> {
  const text = typed.toUpperCase().replace(/[\s-]/g, '');
  if (text.length !== DATA_CHARS + CHECK_CHARS) {
    return err({
      type: 'MistypedCode',
      reason: `a recovery code has ${DATA_CHARS + CHECK_CHARS} characters, not ${text.length}`,
    });
  }
  const values = Array.from({ length: text.length }, (_, i) => symbol(text.charAt(i)));
  const bad = values.findIndex((v) => v < 0);
  if (bad >= 0) return err({ type: 'MistypedCode', reason: `“${text[bad]}” is not a character of a recovery code` });
  const bytes = new Uint8Array(RECOVERY_CODE_BYTES);
  let acc = 0;
  let bits = 0;
  let at = 0;
  for (const v of values.slice(0, DATA_CHARS)) {
    acc = (acc << 5) | v;
    bits += 5;
    if (bits >= 8) {
      if (at < RECOVERY_CODE_BYTES) bytes[at++] = (acc >> (bits - 8)) & 0xff;
      bits -= 8;
    }
    acc &= (1 << bits) - 1;
  }
  const check = (values[DATA_CHARS]! << 5) | values[DATA_CHARS + 1]!;
  if (acc !== 0 || check !== checkValue(bytes)) {
    return err({ type: 'MistypedCode', reason: 'the code does not check out: a character is wrong or missing' });
  }
  return ok(bytes);
}
