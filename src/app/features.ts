/**
 * What the app needs of a browser, checked before anything starts, so a browser that
 * lacks something is told what and which versions have it — not a stack trace from
 * deep inside a worker. Key types (Ed25519, X25519) are checked where keys are made,
 * in the key store's probe (storage/key-keeping.ts), whose message names versions too.
 */
const VERSIONS = 'Safari 17 or later, Firefox 130 or later, or Chrome/Edge 137 or later';

type Feature = { readonly name: string; readonly present: () => boolean };

const FEATURES: readonly Feature[] = [
  { name: 'IndexedDB', present: () => typeof indexedDB !== 'undefined' },
  { name: 'WebCrypto', present: () => typeof crypto !== 'undefined' && 'subtle' in crypto },
  { name: 'Web Workers', present: () => typeof Worker !== 'undefined' },
  { name: 'module workers', present: moduleWorkers },
  { name: 'Web Locks', present: () => typeof navigator !== 'undefined' && 'locks' in navigator },
  { name: 'BroadcastChannel', present: () => typeof BroadcastChannel !== 'undefined' },
  { name: 'WebAssembly', present: () => typeof WebAssembly !== 'undefined' },
];

/** Asks the Worker constructor whether it reads `type: 'module'` (browsers that ignore it have no module workers). */
function moduleWorkers(): boolean {
  if (typeof Worker === 'undefined') return false;
  let asked = false;
  // A blob: URL, which the app's CSP allows for workers: nothing is fetched and no violation is reported.
  const url = URL.createObjectURL(new Blob([''], { type: 'text/javascript' }));
  try {
    const options = {
      get type(): WorkerType {
        asked = true;
        return 'module';
      },
    };
    new Worker(url, options).terminate();
  } catch {
    // Whether `type` was read is all that counts.
  } finally {
    URL.revokeObjectURL(url);
  }
  return asked;
}

/** The names of missing features, empty when the browser has everything. */
export function missingFeatures(features: readonly Feature[] = FEATURES): string[] {
  return features.filter((f) => !safely(f.present)).map((f) => f.name);
}

/** The message a user sees when `missing` is not empty. */
export function missingFeaturesMessage(missing: readonly string[]): string {
  return `This browser lacks ${missing.join(', ')}, which this app needs. Use ${VERSIONS}.`;
}

function safely(check: () => boolean): boolean {
  try {
    return check();
  } catch {
    return false;
  }
}
