/** A service in this process as a port (src/runtime/ports.ts): every answer a promise, the service itself unchanged. */
import { describe, expect, it } from 'vitest';
import { inProcess } from '../../src/runtime/ports.js';

class Counter {
  #n = 0;
  readonly label = 'counter';
  add(by: number): number {
    this.#n += by;
    return this.#n;
  }
  async later(): Promise<number> {
    return this.#n;
  }
  fail(): never {
    throw new Error('refused');
  }
}

describe('inProcess', () => {
  it('answers every method with a promise, on the service itself (its private state included)', async () => {
    const service = new Counter();
    const port = inProcess(service);
    const answer = port.add(2);
    expect(answer).toBeInstanceOf(Promise);
    expect(await answer).toBe(2);
    expect(await port.later()).toBe(2);
    expect(service.add(1)).toBe(3);
    expect(await port.later()).toBe(3);
  });

  it('turns a thrown error into a rejection, as a worker call would be', async () => {
    await expect(inProcess(new Counter()).fail()).rejects.toThrow('refused');
  });
});
