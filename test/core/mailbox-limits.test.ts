/** Mailbox limits (src/core/mailbox.ts): checked when a store is made, and the refusal names both counts. */
import { describe, expect, it } from 'vitest';
import { checkLimits, overLimit } from '../../src/core/mailbox.js';

describe('mailbox limits', () => {
  it.each([0, -1, 1.5, Number.NaN, 2 ** 53])('refuses %s as a frame or byte limit', (n) => {
    expect(() => checkLimits({ maxFrames: n, maxBytes: 10 })).toThrow('mailbox: limits must be positive integers');
    expect(() => checkLimits({ maxFrames: 10, maxBytes: n })).toThrow('mailbox: limits must be positive integers');
  });

  it('takes the smallest limits there are', () => {
    expect(checkLimits({ maxFrames: 1, maxBytes: 1 })).toEqual({ maxFrames: 1, maxBytes: 1 });
  });

  it('admits a frame that fills the mailbox exactly, and refuses one more frame or byte, saying why', () => {
    const limits = { maxFrames: 3, maxBytes: 100 };
    expect(overLimit(limits, 2, 90, 10)).toBeUndefined();
    expect(overLimit(limits, 3, 0, 1)).toEqual({
      ok: false,
      error: {
        type: 'MailboxFull',
        reason: 'mailbox: full (3 frames, 0 bytes; limits 3 frames, 100 bytes)',
        frames: 3,
        bytes: 0,
      },
    });
    expect(overLimit(limits, 0, 90, 11)).toMatchObject({ ok: false, error: { frames: 0, bytes: 90 } });
  });
});
