/**
 * How the machine reaches its services, the same type in a browser and in Node: `Port<S>` is
 * service `S` with every method answering with a promise. A browser's comlink proxy of a
 * worker (`Remote<S>`) is one as it stands; a headless node runs the services in its own
 * process and hands MeshNode `inProcess(service)`, so MeshNode needs no casts for either.
 */
import type { CryptoService } from './crypto-service.js';
import type { MlsService } from './mls-service.js';
import type { StateService } from './state-service.js';

type Method = (...args: never[]) => unknown;

export type Port<S> = {
  readonly [K in keyof S as S[K] extends Method ? K : never]: S[K] extends (...args: infer A) => infer R
    ? (...args: A) => Promise<Awaited<R>>
    : never;
};

export type CryptoPort = Port<CryptoService>;
export type MlsPort = Port<MlsService>;
export type StatePort = Port<StateService>;

/** A service in this process as a port: each method call answers with a promise, as a worker's does. */
export function inProcess<S extends object>(service: S): Port<S> {
  return new Proxy(service, {
    get(target, key) {
      const value: unknown = Reflect.get(target, key, target);
      if (typeof value !== 'function') return value;
      return async (...args: unknown[]): Promise<unknown> => Reflect.apply(value, target, args);
    },
  }) as Port<S>;
}
