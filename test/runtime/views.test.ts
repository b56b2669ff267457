/**
 * Vouch counting (runtime/views.ts): distinct live vouchers per candidate
 * fingerprint — a removed machine's vouches stop counting — and the mesh's
 * threshold with its default.
 */
import { describe, expect, it } from 'vitest';
import type { RowState } from '../../src/core/merge.js';
import {
  DEFAULT_VOUCH_K,
  splitDuplicates,
  vouchesView,
  vouchThreshold,
  type Machine,
} from '../../src/runtime/views.js';

const stamp = { ms: 1, counter: 0, node: new Uint8Array(32) };
const row = (table: string, name: string, cells: Record<string, string | number>, deleted = false): RowState => ({
  table,
  row: name,
  cells: Object.fromEntries(Object.entries(cells).map(([k, v]) => [k, { value: v, stamp }])),
  ...(deleted ? { deleted: { ms: 2, counter: 0, node: new Uint8Array(32) } } : {}),
});
const machine = (signer: string, removed = false): Machine => ({
  signer,
  endpoint: `${signer}-e`,
  frame: `${signer}-f`,
  trusted: false,
  recovery: false,
  name: signer,
  role: 'member',
  removed,
});

describe('vouches', () => {
  const fp = '3f2a-91c0-77de-0b14';
  it('counts distinct live vouchers, ignoring removed machines, strangers and deleted vouches', () => {
    const vouches = [
      row('vouches', `aa:${fp}`, { candidate: fp }),
      row('vouches', `aa:${fp}-again`, { candidate: fp }),
      row('vouches', `bb:${fp}`, { candidate: fp }),
      row('vouches', `cc:${fp}`, { candidate: fp }),
      row('vouches', `zz:${fp}`, { candidate: fp }),
      row('vouches', `dd:${fp}`, { candidate: fp }, true),
    ];
    const machines = [machine('aa'), machine('bb', true), machine('cc'), machine('dd')];
    expect(vouchesView(vouches, machines).get(fp)?.sort()).toEqual(['aa', 'cc']);
  });

  it('reads the threshold from settings, defaulting to 2 and refusing nonsense', () => {
    expect(vouchThreshold([])).toBe(DEFAULT_VOUCH_K);
    expect(vouchThreshold([row('settings', 'vouch_k', { value: 3 })])).toBe(3);
    expect(vouchThreshold([row('settings', 'vouch_k', { value: 0 })])).toBe(DEFAULT_VOUCH_K);
    expect(vouchThreshold([row('settings', 'vouch_k', { value: 1.5 })])).toBe(DEFAULT_VOUCH_K);
  });
});

describe('frame refusals in the Sync panel', () => {
  it('counts frames received again apart from rejections', () => {
    expect(splitDuplicates({ ReplayedRequest: 22, FrameUndecryptable: 1, UnknownEndpoint: 3 })).toEqual({
      refused: { FrameUndecryptable: 1, UnknownEndpoint: 3 },
      duplicates: 22,
    });
    expect(splitDuplicates({ UnknownEndpoint: 1 })).toEqual({ refused: { UnknownEndpoint: 1 }, duplicates: 0 });
  });
});
