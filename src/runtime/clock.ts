/** The wall clock, for code outside the pure core (which takes a `Clock`). */
import type { Clock } from '../core/ports.js';

export const systemClock: Clock = { now: () => Date.now() };
