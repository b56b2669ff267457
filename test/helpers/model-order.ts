/**
 * The stamp order written out again for test models, independent of src/core/hlc.ts: a
 * model that imported the order it checks would agree with any bug in it. A stamp is
 * (ms, counter, node): compared by wall-clock milliseconds, then the counter, then the
 * 32-byte node id as an unsigned big-endian number — for equal-length ids, the order of
 * their lowercase hex spellings.
 */
type ModelStamp = { readonly ms: number; readonly counter: number; readonly node: Uint8Array };

const hexOf = (bytes: Uint8Array): string => Buffer.from(bytes).toString('hex');

/** Negative, zero or positive as `a` is before, equal to or after `b`. */
export function modelCompareStamps(a: ModelStamp, b: ModelStamp): number {
  if (a.ms !== b.ms) return a.ms < b.ms ? -1 : 1;
  if (a.counter !== b.counter) return a.counter < b.counter ? -1 : 1;
  const [x, y] = [hexOf(a.node), hexOf(b.node)];
  if (x.length !== y.length) throw new Error('model: node ids differ in length');
  return x === y ? 0 : x < y ? -1 : 1;
}
